#!/usr/bin/env bash
# The differential test against OpenPAI's rest-server (tests/openpai_oracle) needs Node and npm, and the rest-server's
# npm dependencies in a scratch copy, cached under ~/.cache/paictl-tests/openpai-oracle-<hash> (reused while
# upstream's package files are unchanged). Idempotent and quiet; skipped without ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d ../shared/peers/openpai/src/rest-server ] || exit 0
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
python3 tests/openpai_oracle/install.py >/dev/null
