#!/usr/bin/env bash
# CI provisioning for the Grass tests (tests/targets/grass): redis-server, and the virtual environment MARO's
# unchanged services run in (tests/maro_peer/stack.py: redis, flask, gunicorn, requests, pyyaml, psutil), made once
# and cached under ~/.cache/paictl-tests (reused when present). The docker engine comes from provision-docker.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi
if [ -d ../shared/peers/maro ]; then
    python3 -c 'import sys; sys.path.insert(0, "tests"); from maro_peer.stack import maro_python; maro_python()'
fi
