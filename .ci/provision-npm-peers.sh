#!/usr/bin/env bash
# The npm packages the YAML tests run as peers: js-yaml 3, the reader OpenPAI's rest-server uses (pinned in
# tests/openpai_oracle/npm), installed from the npm registry with `npm ci` into
# ~/.cache/paictl-tests/npm-peers-<hash> (reused while the lock file is unchanged). Prints the time it took.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
python3 tests/openpai_oracle/npm_peers.py
