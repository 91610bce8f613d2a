#!/usr/bin/env bash
# CI provisioning for the docker tests (tests/docker_engine.py starts its own dockerd on a private socket):
# Debian's docker.io (dockerd, containerd, runc, docker-init and the client). Idempotent and quiet.
set -euo pipefail
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    for attempt in 1 2 3; do  # another apt-get may hold the dpkg lock for a moment
        if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; } >/dev/null; then
            break
        fi
        sleep 5
    done
fi
command -v dockerd >/dev/null 2>&1
