"""The floor for `paictl validate`: the least a validator in Python can do, with the fastest libraries paictl uses
(yaml-rs and jsonschema-rs, both Rust). It reads each file, parses it, checks it against the schema and counts.
No positions, no semantics, no messages: `benchmarks/startup.py` compares `paictl validate` against it.

    python benchmarks/floor_validate.py SCHEMA.json FILE...
"""
import json
import sys

import jsonschema_rs
import yaml_rs

validator = jsonschema_rs.validator_for(json.load(open(sys.argv[1], encoding="utf-8")))
invalid = [path for path in sys.argv[2:] if not validator.is_valid(yaml_rs.loads(open(path, encoding="utf-8").read()))]
print(f"{len(sys.argv) - 2 - len(invalid)} files valid")
sys.exit(1 if invalid else 0)
