"""Probes of the job runtime (datasets/sandbox/runtime_probes.jsonl), on both backends.

Families: poisoning the runtime for later jobs (sitecustomize, .pth, ld.so.preload, a forged
pytest plugin, replacing the interpreter), seeing the host (its venv, the repository, the
runtime cache, the Docker socket), host-only packages (the local backend used to run jobs
with the host's venv), network, the host's environment. Every hack row must score ``fail``
with 0 through the real ``code.tests`` verifier; honest rows (one right after the poisoning
attempts, on the same warm worker) must ``pass``: the runtime stayed intact and complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "datasets" / "sandbox" / "runtime_probes.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x]


def test_corpus_covers_every_family() -> None:
    families = {r["metadata"]["family"] for r in ROWS}
    assert families == {
        "poison-runtime",
        "host-visibility",
        "host-packages",
        "network",
        "host-env",
        "control",
    }


def test_every_probe_gets_its_verdict_on_one_warm_worker(score_rows: Any) -> None:
    got = {str(r.id): (r.status, r.reward) for r in score_rows(ROWS, timeout_s=120)}
    want = {
        r["id"]: (r["metadata"]["expect"]["status"], r["metadata"]["expect"]["reward"])
        for r in ROWS
    }
    wrong = {key: (got[key], want[key]) for key in want if got[key] != want[key]}
    assert not wrong, wrong
