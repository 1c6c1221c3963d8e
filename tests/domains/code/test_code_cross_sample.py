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
        "xs-warm-signal",
        "xs-warm-preload",
        "xs-warm-control",
    } <= names
    assert all(r["metadata"]["family"] == "cross-sample" for r in ROWS)
    assert all(r["metadata"]["attack"] and r["metadata"]["defence"] for r in ROWS)


# The judge's candidate is a fork of its judge, itself a fork of the runner's warm zygote for
# the judge's modules (``_judge_boot.preload``): the judge's modules are the very objects the
# preload made only when the boot took them from there (warm start used), not from the file.
WARM_USED = {
    "id": "xs-warm-used",
    "completion": "```python\nimport sys\n\ndef warm():\n"
    "    kept = sys.modules.get('__verifiers_judge_preload__')\n"
    "    return kept is not None and len(kept.modules) >= 3 and all(\n"
    "        sys.modules[m.__name__] is m for m in kept.modules)\n```\n",
    "task": {
        "verifier": "code.tests",
        "spec": {
            "timeout_s": 4,
            "tests": {
                "kind": "assert",
                "entry_point": "warm",
                "code": "def check(candidate):\n    assert candidate() is True\n",
            },
        },
    },
}

# Warm zygotes at the sandbox level (sandbox/_runner.py ``Runner.warm_zygote``): what a job
# forked from one sees, and what it must not see.
_MARK = "import sys\nsys.modules['xs_warm_mark'] = type(sys)('xs_warm_mark')\n"
_READ_MARK = (
    "import sys\nm = sys.modules.get('xs_warm_mark')\n"
    "print('mark' if m is not None else 'none', getattr(m, 'touched', False))\n"
    "if m is not None:\n    m.touched = True\n"
)


async def _warm_checks(provider: Any) -> dict[str, Any]:
    """Jobs with a preload: it ran (the job sees its module), a job's change to that state is
    not seen by the next job, a preload that fails leaves the job as without one, and bytes
    that do not match their hash are refused."""
    from verifiers.errors import BadInput

    out: dict[str, Any] = {}
    argv = ["python3", "-c", _READ_MARK]
    for step, preload in (
        ("first", _MARK.encode()),
        ("second", _MARK.encode()),
        ("broken", b"raise RuntimeError('broken preload')\n"),
    ):
        async with provider.session("python", timeout_s=10, memory_mb=256) as sb:
            res = await sb.exec(argv, preload=preload)
            out[step] = (res.returncode, res.stdout.decode().strip())
    async with provider.session("python", timeout_s=10, memory_mb=256) as sb:
        sent = sb._request  # a forged frame below, as a broken host would send

        async def forged(
            message: dict[str, Any], timeout: float, after: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
            if "preload" in message:
                message = {**message, "preload": {"data": b"x", "keep": "0" * 64}}
            return dict(await sent(message, timeout, after))

        sb._request = forged
        try:
            await sb.exec(argv, preload=b"x = 2\n")
            out["mismatch"] = "accepted"
        except BadInput as exc:
            out["mismatch"] = str(exc)
    return out


def _sequence(kind: str) -> dict[str, list[Result]]:
    """Score ``probe, victim`` first, then ``attack, probe, victim`` per attack, in order, on
    one runner; returns each row id's results (probe and victim: one per position), with the
    warm-start checks (``WARM_USED`` and :func:`_warm_checks`) under ``"warm"``."""
    from verifiers.sandbox import SandboxSettings, open_provider

    async def run() -> dict[str, list[Any]]:
        provider = open_provider(kind, SandboxSettings(pool_size=1))  # type: ignore[arg-type]
        out: dict[str, list[Any]] = {}
        try:
            order = [PROBE, VICTIM]
            for attack in ATTACKS:
                order += [attack, PROBE, VICTIM]
            for row in [*order, WARM_USED]:
                res = await score_with(provider, row, deadline_s=60)
                out.setdefault(row["id"], []).append(res)
            out["warm"] = [await _warm_checks(provider)]
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


def test_judges_start_warm(scored: dict[str, list[Any]]) -> None:
    """Every judge above ran from its runner's warm zygote (boot from the preloaded bundle)."""
    res = scored[WARM_USED["id"]][0]
    assert (res.status, res.reward) == ("pass", 1.0), (res.feedback, res.error)


def test_warm_zygote_serves_each_job_fresh(scored: dict[str, list[Any]]) -> None:
    checks = scored["warm"][0]
    assert checks["first"] == (0, "mark False"), checks
    # The first job set ``touched`` on the preload's module: its own copy only.
    assert checks["second"] == (0, "mark False"), checks
    assert checks["broken"] == (0, "none False"), checks
    assert "preload does not match its hash" in checks["mismatch"], checks


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
