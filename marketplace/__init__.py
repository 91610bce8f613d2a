"""OpenPAI marketplace items: the item file, its validation, packing, and publishing to a local index or a server.

An item (a job template or a data set) is a YAML file whose keys follow the upstream marketplace's item model
(microsoft/openpaimarketplace); its `description` and `protocol` may live in files beside it. The modules, each
imported only by the commands that need it:

- `shape`: is a parsed document an item? (used by `paictl validate`, so it imports nothing);
- `item`: the typed, packed item (`Item`) and its document form, the one the server stores;
- `checking`: an item file to diagnostics located in that file (and its embedded job), and to an `Item`;
- `pack`: the self-contained, deterministic item document;
- `query`: list/search filters, with the server's semantics;
- `local_index`: the embedded target, a folder of item files plus `index.json`;
- `server`: the client of a marketplace server (httpx);
- `targets`: TARGET (a folder or an http(s) URL) to one of the two, and publish = validate, then write.
"""
