#!/usr/bin/env bash
# Languages for code.tests (issue 17): the polyglot `languages` runtime (gcc/g++ 12, Node 18,
# OpenJDK 17, Go 1.19, rustc 1.63, CPython 3.11: Debian bookworm packages; TypeScript 5.9.3 and
# @types/node 18 from npm, fetched by the host's `npm pack`: the host needs npm >= 7).
#
# Runs as root from the repository root with $PY = the CI venv's python, after 10-sandbox.sh
# (Docker engine, bubblewrap, debootstrap and the debootstrapped base are in place). One
# definition, sandbox/images/languages/runtime.toml, builds the root filesystem the local
# backend runs jobs in and the Docker image (`docker import` of the same folder), cached under
# $VERIFIERS_SANDBOX_CACHE by the definition's hash: a re-run with it in place takes a second.
# A fresh machine (base already debootstrapped) needs about 130 s here: apt ~75 s for ~1.3 GB
# of toolchains, setup.sh ~30 s (two C++ precompiled headers, 200 MB), the toolchain check 5 s,
# the import 20 s; 1.9 GB of disk. (Measured 396 s under a load average of 23.) Since the npm
# TypeScript, its start-up snapshot (37 MB) and javac's CDS archive (11 MB) are in setup.sh too:
# measured 518 s in all under a load average of 20-27 (2026-12-01).
set -euo pipefail

PY="${PY:-python3}"
"$PY" -m verifiers.sandbox.cli build languages
