#!/usr/bin/env bash
# CI provisioning for the docker tests (tests/docker_engine.py starts its own dockerd on a private socket):
# Debian's docker.io (dockerd, containerd, runc, docker-init and the client) and docker-registry (a registry to pull
# from on 127.0.0.1; its service is not started). Idempotent and quiet.
set -euo pipefail
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1 \
        || ! command -v docker-registry >/dev/null 2>&1; then
    for attempt in 1 2 3; do  # another apt-get may hold the dpkg lock for a moment
        if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-registry; } >/dev/null; then
            break
        fi
        sleep 5
    done
fi
# the package's service would listen on :5000; the tests start their own registry on a free port
if [ -x /etc/init.d/docker-registry ]; then /etc/init.d/docker-registry stop >/dev/null 2>&1 || true; fi
command -v dockerd >/dev/null 2>&1 && command -v docker-registry >/dev/null 2>&1
