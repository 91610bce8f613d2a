"""`paictl lsp`: diagnostics as you type, hover, completion, quick fixes and go-to-definition for job files and
marketplace items, in any editor with a Language Server Protocol client.

An interface layer beside the CLI: it imports protocol, compiler and targets; nothing on the path of `validate`,
`compile` or `submit` imports it (its dependency, pygls, is the optional `lsp` extra).
"""
