#!/usr/bin/env bash
# Sandbox (issue 3): Docker engine, bubblewrap, debootstrap, and the sandbox images.
#
# Runs as root from the repository root with $PY = the CI venv's python, after the project is
# installed. Idempotent and fast when everything is in place: packages present -> no apt,
# dockerd answering -> not restarted, images tagged with their input hash -> not rebuilt.
# A fresh Debian 12 machine needs about 3 minutes (debootstrap + apt inside the image build).
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

# Build the python image (skipped when its input hash is unchanged; other images such as
# blender are built by their own setup scripts), leave no stale containers from earlier runs,
# and print what is ready.
"$PY" -m verifiers.sandbox.cli build python
"$PY" -m verifiers.sandbox.cli prune
"$PY" -m verifiers.sandbox.cli check
