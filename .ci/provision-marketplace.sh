#!/usr/bin/env bash
# CI provisioning for the marketplace tests (tests/marketplace_peer): Node.js and npm, PostgreSQL 15, and the
# marketplace server's npm dependencies installed once from its lock file into ~/.cache/paictl-tests (reused while
# the lock file is unchanged). Idempotent and quiet; does nothing without ../shared beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d ../shared/peers/openpaimarketplace/rest_server ] || exit 0

missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql-15)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python -c 'import sys; sys.path.insert(0, "tests"); from marketplace_peer.peer import provision; provision()'
