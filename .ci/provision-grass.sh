#!/usr/bin/env bash
# CI provisioning for the Grass tests (tests/targets/grass): redis-server (Debian), and MARO as its users install it,
# PyPI's pymaro with its services' dependencies, pinned, in a virtual environment of its own on pyenv's CPython 3.9
# (tests/maro_peer/package.py says which interpreter and why), cached under ~/.cache/paictl-tests and reused when
# present. The docker engine comes from provision-docker.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi
started=$(date +%s)
venv=$(python3 tests/maro_peer/package.py)
echo "provision-grass: MARO's environment $venv ready in $(( $(date +%s) - started )) s"
