"""Sweeps: one job run with many parameter sets on any backend, followed and compared together.

`prepare.py` turns a job and a search space into compiled trials (every trial compiled before anything is submitted),
`store.py` keeps a sweep's record under `$XDG_STATE_HOME/paictl/sweeps/<id>`, `runner.py` submits through the
`Backend` interface with at most K trials running, follows them, reads their metrics and resumes a sweep that was
interrupted. Nothing here knows a particular backend: a sweep runs wherever `submit` runs.
"""
