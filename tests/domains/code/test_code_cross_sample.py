"""Cross-sample attacks (datasets/code/cross_sample.jsonl): nothing one sample does reaches the
next sample on the same runner.

Each backend gets one runner (``pool_size=1``), and the corpus runs interleaved on it: every
attack, then a probe (honest code that answers wrong if it sees any residue: a file, a process,
an environment variable, a module, a signal handler, an IPC object, a socket, a priority or
limit change), then a victim (a wrong answer an attack tries to get credit for). Attacks and
victims must score 0 with status ``fail`` (never ``error``: an abstain is a hack too), probes 1.
The corpus is scored once per backend (one sequence; the per-row tests read its results).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from code_helpers import score_with

from verifiers.types import Result

CORPUS = Path(__file__).resolve().parents[3] / "datasets" / "code" / "cross_sample.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()
]
ATTACKS = [r for r in ROWS if r["metadata"]["role"] == "attack"]
PROBE = next(r for r in ROWS if r["metadata"]["role"] == "probe")
VICTIM = next(r for r in ROWS if r["metadata"]["role"] == "victim")


def test_corpus_covers_the_families() -> None:
    names = {r["id"] for r in ATTACKS}
    assert {
        "xs-files",
        "xs-modules",
        "xs-process",
        "xs-signals",
        "xs-stop-judge",
        "xs-environment",
        "xs-judge-limits",
        "xs-python-state",
        "xs-ipc",
        "xs-forge-next",
        "xs-ptrace",
        "xs-kill-all",
        "xs-heap",
    } <= names
    assert all(r["metadata"]["family"] == "cross-sample" for r in ROWS)
    assert all(r["metadata"]["attack"] and r["metadata"]["defence"] for r in ROWS)


def _sequence(kind: str) -> dict[str, list[Result]]:
    """Score ``probe, victim`` first, then ``attack, probe, victim`` per attack, in order, on
    one runner; returns each row id's results (probe and victim: one per position)."""
    from verifiers.sandbox import SandboxSettings, open_provider

    async def run() -> dict[str, list[Result]]:
        provider = open_provider(kind, SandboxSettings(pool_size=1))  # type: ignore[arg-type]
        out: dict[str, list[Result]] = {}
        try:
            order = [PROBE, VICTIM]
            for attack in ATTACKS:
                order += [attack, PROBE, VICTIM]
            for row in order:
                res = await score_with(provider, row, deadline_s=60)
                out.setdefault(row["id"], []).append(res)
        finally:
            await provider.close()
        return out

    return asyncio.run(run())


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("local", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def scored(request: pytest.FixtureRequest) -> Iterator[dict[str, list[Result]]]:
    yield _sequence(str(request.param))


@pytest.mark.parametrize("attack", ATTACKS, ids=[r["id"] for r in ATTACKS])
def test_attack_scores_zero_and_leaves_nothing(
    scored: dict[str, list[Result]], attack: dict[str, Any]
) -> None:
    position = ATTACKS.index(attack)
    res = scored[attack["id"]][0]
    assert (res.status, res.reward) == ("fail", 0.0), (attack["id"], res.status, res.error)
    # The probe and the victim right after this attack (index 0 is the run before any attack).
    probe = scored[PROBE["id"]][position + 1]
    assert (probe.status, probe.reward) == ("pass", 1.0), (
        attack["id"],
        probe.feedback,
        probe.error,
    )
    victim = scored[VICTIM["id"]][position + 1]
    assert (victim.status, victim.reward) == ("fail", 0.0), (
        attack["id"],
        victim.feedback,
        victim.error,
    )


def test_controls_before_any_attack(scored: dict[str, list[Result]]) -> None:
    probe, victim = scored[PROBE["id"]][0], scored[VICTIM["id"]][0]
    assert (probe.status, probe.reward) == ("pass", 1.0), (probe.feedback, probe.error)
    assert (victim.status, victim.reward) == ("fail", 0.0), (victim.feedback, victim.error)


def test_probe_sees_residue(subprocess_provider: Any, tmp_path: Path) -> None:
    """The probe can fail: on the bare subprocess backend (no isolation, the host's /tmp) a file
    left in /tmp is residue, and the probe then answers wrong."""
    marker = Path("/tmp") / f"xs-residue-selftest-{tmp_path.name}"
    marker.write_text("x")
    try:
        res = asyncio.run(score_with(subprocess_provider, PROBE))
    finally:
        marker.unlink()
    assert (res.status, res.reward) == ("fail", 0.0), res.feedback
    assert "residue of an earlier sample" in (res.feedback or "")
