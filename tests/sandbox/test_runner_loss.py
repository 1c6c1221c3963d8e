"""A runner lost mid-job: the machine's loss is ``error/infra`` (retried), the job's is its fail.

A job cannot signal, stop or trace its runner (another uid, no capabilities, non-dumpable
runner, private PID namespace), so a runner that dies while a job runs was killed from outside
(an operator, a reaper, the host's OOM killer, a removed container) unless the kernel recorded
an OOM kill in the container, which only the job's memory can cause: the jobs run with
``oom_score_adj`` 1000, so the runner is only picked when what fills the container is not a
process (tmpfs files, shared memory) and that was the job's doing.

The attack corpus (``datasets/sandbox/runner_loss.jsonl``) is every way a job might make its
runner *look* machine-killed (signals, ptrace, memory that outlives the job, cgroup files,
the protocol fds, starving the runner): each must stay the job's ``fail``, never an abstain.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import score_rows

from verifiers.engine import Engine, EngineSettings
from verifiers.errors import InfraError
from verifiers.types import Result

CORPUS = Path(__file__).resolve().parents[2] / "datasets" / "sandbox" / "runner_loss.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x]

FILL = r"""
import sys
for i in range(int(sys.argv[1])):
    with open(f"fill{i}", "wb") as fh:
        for _ in range(10):
            fh.write(b"x" * (1 << 20))
print("filled")
"""
"""Leaves ~100 MB of tmpfs files in the work dir and exits cleanly (charged to the container)."""


def _busy_workers(provider: Any) -> list[Any]:
    return [w for slot in provider._pool._slots.values() for w in slot.busy]


def _kill_from_outside(provider: Any, worker: Any) -> None:
    """What an operator or a reaper does: SIGKILL the runner / the container's engine kill."""
    if hasattr(worker, "cid"):
        provider._client.api.kill(worker.cid)
    else:
        os.kill(worker.process.pid, signal.SIGKILL)


async def _kill_first_job(provider: Any, after_s: float) -> None:
    """Kill the first runner that is busy for ``after_s`` (once)."""
    while True:
        busy = _busy_workers(provider)
        if busy:
            await asyncio.sleep(after_s)
            _kill_from_outside(provider, busy[0])
            return
        await asyncio.sleep(0.02)


def test_runner_killed_from_outside_mid_job_is_infra(run_with: Any) -> None:
    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=30) as sb:
            killer = asyncio.create_task(_kill_first_job(provider, 1.0))
            with pytest.raises(InfraError, match="no sign the job caused it"):
                await sb.exec(["python3", "-c", "import time; time.sleep(20)"], timeout=20)
            await killer
        async with provider.session("python") as sb:  # a fresh runner takes the next session
            result = await sb.exec(["python3", "-c", "print('fresh')"])
            assert result.stdout == b"fresh\n"

    run_with(body, pool_size=1)


def test_runner_killed_from_outside_is_retried_by_the_engine(new_provider: Any) -> None:
    """Through the engine: the item is ``error/infra`` without retries, judged after one."""
    row = {
        "id": "slow-honest",
        "completion": "```python\nimport time\ntime.sleep(2)\n\ndef add(a, b):\n"
        "    return a + b\n```\n",
        "task": {"verifier": "code.tests", "spec": {**ROWS[0]["task"]["spec"], "timeout_s": 20}},
    }

    async def main(retries: int) -> Result:
        provider = new_provider(pool_size=1)
        try:
            settings = EngineSettings(
                concurrency=1, retries=retries, retry_backoff_s=0.1, timeout_s=120
            )
            async with Engine(settings, sandboxes=provider) as engine:
                killer = asyncio.create_task(_kill_first_job(provider, 0.8))
                [result] = await engine.score([row])
                await killer
                return result
        finally:
            await provider.close()

    lost = asyncio.run(main(retries=0))
    assert lost.status == "error" and lost.reward is None, lost
    assert lost.error is not None and lost.error.kind == "infra"
    judged = asyncio.run(main(retries=1))
    assert (judged.status, judged.reward) == ("pass", 1.0), judged


@pytest.mark.parametrize("then", ["write", "read"])
def test_job_memory_that_takes_the_runner_down_is_the_jobs(run_with: Any, then: str) -> None:
    """A job leaves its container's memory full of tmpfs files and exits; the verifier's next
    step then needs memory and the kernel kills the runner. That loss is the job's doing:
    ``oom_killed`` (a later exec) or a missing file (a read), never ``InfraError``. Where the
    runner's memory is not shared with the job (local: per-job cgroups), it survives."""

    async def body(provider: Any) -> None:
        async with provider.session("python", timeout_s=20, memory_mb=64) as sb:
            filled = await sb.exec(["python3", "-c", FILL, "10"], timeout=20)
            assert filled.returncode == 0 or filled.oom_killed, filled
            if then == "write":
                await sb.write_files({"big.bin": os.urandom(30 << 20)})
                result = await sb.exec(["python3", "-c", "print('after')"], timeout=20)
                if result.stdout != b"after\n":  # the runner went down with the job's memory
                    assert result.oom_killed and not result.ok, result
                    assert b"ran out of memory" in result.stderr, result
            else:
                await sb.exec(["python3", "-c", FILL.replace("fill", "more"), "3"], timeout=20)
                try:
                    data = await sb.read_file("fill0", max_bytes=64 << 20)
                except FileNotFoundError:
                    pass  # the job's files went down with the runner: its missing output
                else:
                    assert len(data) == 10 << 20

    run_with(body, pool_size=1)


def test_corpus_covers_every_family() -> None:
    families = {r["metadata"]["family"] for r in ROWS}
    assert {"signal", "memory", "cgroup", "protocol", "cpu", "control"} <= families
    assert len({r["id"] for r in ROWS}) == len(ROWS)


def test_attacks_on_the_runner_stay_the_jobs_fail(new_provider: Any) -> None:
    """Every attack in one engine run (no retries: an abstain would show as ``error``), two at
    a time on two runners (their waits overlap; each attack still has a runner to itself),
    then an honest row on the same pool."""

    results = score_rows(new_provider(pool_size=2), ROWS, concurrency=2)
    got = {str(r.id): (r.status, r.reward) for r in results}
    want = {
        r["id"]: (r["metadata"]["expect"]["status"], r["metadata"]["expect"]["reward"])
        for r in ROWS
    }
    assert got == want, [r.model_dump(include={"id", "status", "error"}) for r in results]
