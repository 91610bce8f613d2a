#!/usr/bin/env bash
# CI provisioning for the OpenPAI real-server tests (tests/openpai_peer): PostgreSQL 15, Node.js with npm, and the
# unchanged rest-server and database-controller from ../shared/peers/openpai installed with npm into a scratch copy
# cached under ~/.cache/paictl-tests/openpai-rest-server-<hash of their package and lock files> (reused when
# present). Idempotent and quiet; without ../shared/peers/openpai there is nothing to install.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d ../shared/peers/openpai ] || exit 0

missing=()
[ -x /usr/lib/postgresql/15/bin/initdb ] || command -v initdb >/dev/null 2>&1 || missing+=(postgresql-15)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    for attempt in 1 2 3; do  # the dpkg lock may be held for a moment
        if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
        then break; fi
        sleep 5
    done
fi

python3 tests/openpai_peer/install.py >/dev/null
