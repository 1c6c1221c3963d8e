#!/usr/bin/env bash
# Sandbox (issues 3, 13): Docker engine, bubblewrap, debootstrap, and the python runtime.
#
# Runs as root from the repository root with $PY = the CI venv's python, after the project is
# installed. Idempotent and fast when everything is in place: packages present -> no apt,
# dockerd answering -> not restarted, runtimes cached by input hash -> not rebuilt.
# `sandbox build python` makes the runtime's root filesystem (what the local backend runs jobs
# in) under $VERIFIERS_SANDBOX_CACHE (default /var/cache/verifiers-sandbox; keep it between CI
# runs) and `docker import`s the same folder as the image. A fresh Debian 12 machine needs
# about 2.5 minutes (debootstrap 90 s, apt + pinned wheels 35 s, import 10 s). The blender
# runtime is built by 30-blender.sh the same way (about 4 minutes, mostly the bpy wheel).
set -euo pipefail

PY="${PY:-python3}"

missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
command -v unshare >/dev/null 2>&1 || missing="$missing util-linux"
if [ -n "$missing" ]; then
  echo "10-sandbox: installing$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

if ! docker info >/dev/null 2>&1; then
  echo "10-sandbox: starting dockerd"
  (dockerd >/var/log/dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "10-sandbox: dockerd did not come up; last log lines:" >&2
    tail -n 20 /var/log/dockerd.log >&2 || true
    exit 1
  fi
fi
echo "10-sandbox: docker engine $(docker version --format '{{.Server.Version}}')"

# bubblewrap must really work (it can be installed yet refused by the kernel or a container).
if ! bwrap --die-with-parent --unshare-pid --unshare-net --ro-bind / / --proc /proc --dev /dev true; then
  echo "10-sandbox: bubblewrap is installed but does not work here" >&2
  exit 1
fi

# Build the python runtime and image (skipped when its input hash is unchanged; blender is
# built by its own setup script), leave no stale containers from earlier runs, and print what
# is ready (each built runtime's import/version check included).
"$PY" -m verifiers.sandbox.cli build python
"$PY" -m verifiers.sandbox.cli prune
"$PY" -m verifiers.sandbox.cli check
