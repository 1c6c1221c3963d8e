"""Home CPUs (``SandboxSettings.cpu_pinning``, sandbox/_cpus.py): each runner's jobs run on CPUs
of their own, spread over the host's, on both backends; a busy CPU is never given a second
session while another CPU's runner idles. The allocator and the pool's choice are tested with
a stand-in worker; the pinning itself on the real engine and under real bubblewrap."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import NoChannel
from verifiers.sandbox import SandboxSettings
from verifiers.sandbox._client import RunnerHandle, RunnerPool
from verifiers.sandbox._cpus import CpuHomes

from verifiers.errors import SandboxUnavailable

HOST_CPUS = sorted(os.sched_getaffinity(0))


def test_homes_spread_over_the_cpus_and_come_back(tmp_path: Path) -> None:
    homes = CpuHomes(1.0, True, allowed=[0, 1, 2, 3], lock_dir=tmp_path)
    first = [homes.take() for _ in range(4)]
    assert first == [(0,), (1,), (2,), (3,)]
    assert homes.take() == (0,)  # more runners than CPUs: round-robin
    homes.give((2,))
    assert homes.take() == (2,)  # the least held CPU, not the next in turn
    assert dict(homes.holders()) == {0: 2, 1: 1, 2: 1, 3: 1}


def test_a_home_is_ceil_cpus_wide_and_never_wider_than_the_host(tmp_path: Path) -> None:
    homes = CpuHomes(1.5, True, allowed=[4, 5, 6, 7], lock_dir=tmp_path)
    assert [homes.take(), homes.take(), homes.take()] == [(4, 5), (6, 7), (4, 5)]
    assert CpuHomes(16.0, True, allowed=[0, 1], lock_dir=tmp_path / "b").take() == (0, 1)


def test_no_home_when_pinning_is_off_or_there_is_one_cpu(tmp_path: Path) -> None:
    assert CpuHomes(1.0, False, allowed=[0, 1], lock_dir=tmp_path).take() == ()
    assert CpuHomes(1.0, True, allowed=[3], lock_dir=tmp_path).take() == ()
    homes = CpuHomes(1.0, False, allowed=[0, 1], lock_dir=tmp_path)
    homes.give(())  # a worker without a home leaves: nothing to give back
    assert not homes.holders()


_OTHER_RANK = """
import sys, time
from pathlib import Path
from verifiers.sandbox._cpus import CpuHomes
homes = CpuHomes(1.0, True, allowed=[0, 1, 2], lock_dir=Path(sys.argv[1]))
print(homes.take(), homes.take(), flush=True)
time.sleep(600)
"""


def test_homes_are_counted_machine_wide_and_a_dead_holders_come_back(tmp_path: Path) -> None:
    """Another process (a second rank's provider) holds CPUs 0 and 1: ours starts on 2. Its
    locks die with it (kill -9), and its CPUs are free again."""
    other = subprocess.Popen(
        [sys.executable, "-c", _OTHER_RANK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None
        assert other.stdout.readline().split() == ["(0,)", "(1,)"]
        homes = CpuHomes(1.0, True, allowed=[0, 1, 2], lock_dir=tmp_path)
        assert homes.take() == (2,)
        assert dict(homes.holders()) == {0: 1, 1: 1, 2: 1}
    finally:
        other.kill()
        other.wait()
        if other.stdout is not None:
            other.stdout.close()
    assert dict(homes.holders()) == {2: 1}
    assert homes.take() == (0,)


def test_without_a_usable_lock_dir_homes_are_counted_in_this_process(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    homes = CpuHomes(1.0, True, allowed=[0, 1], lock_dir=blocker)
    assert homes.directory is None
    assert [homes.take(), homes.take(), homes.take()] == [(0,), (1,), (0,)]
    homes.give((0,))
    assert dict(homes.holders()) == {0: 1, 1: 1}


class _Worker(RunnerHandle):
    def __init__(self, key: Hashable, started_on: tuple[int, ...]) -> None:
        super().__init__(NoChannel(), key)
        self.started_on = started_on

    async def kill(self) -> None:
        self.broken = "killed"


def _pool(pool_size: int, allowed: list[int], lock_dir: Path) -> tuple[RunnerPool, list[_Worker]]:
    started: list[_Worker] = []

    async def start(key: Hashable, home: tuple[int, ...]) -> RunnerHandle:
        worker = _Worker(key, home)
        started.append(worker)
        return worker

    pool = RunnerPool(start, SandboxSettings(pool_size=pool_size, replenish=False))
    pool.homes = CpuHomes(1.0, True, allowed=allowed, lock_dir=lock_dir)
    return pool, started


def test_the_pool_starts_runners_on_their_homes_and_frees_a_killed_ones(tmp_path: Path) -> None:
    async def main() -> None:
        pool, started = _pool(4, [0, 1], tmp_path)
        await pool.warm("k", 4)
        assert [w.started_on for w in started] == [(0,), (1,), (0,), (1,)]
        assert [w.home for w in started] == [w.started_on for w in started]
        worker = await pool.acquire("k")
        await pool.release(worker, False)  # recycled: its CPU is free again
        assert worker.home == () and pool.homes.holders()[worker.started_on[0]] == 1
        await pool.close()
        assert not pool.homes.holders()

    asyncio.run(main())


def test_a_start_that_fails_or_is_cancelled_gives_its_home_back(tmp_path: Path) -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def start(key: Hashable, home: tuple[int, ...]) -> RunnerHandle:
            if key == "broken":
                raise SandboxUnavailable("no runner here")
            await gate.wait()  # never set: cancelled below
            raise AssertionError("unreachable")

        pool = RunnerPool(start, SandboxSettings(pool_size=2, replenish=False))
        pool.homes = CpuHomes(1.0, True, allowed=[0, 1], lock_dir=tmp_path)
        with pytest.raises(SandboxUnavailable):
            await pool.acquire("broken")
        assert not pool.homes.holders()
        waiting = asyncio.ensure_future(pool.acquire("slow"))
        await asyncio.sleep(0.05)
        assert sum(pool.homes.holders().values()) == 1  # held while it starts
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert not pool.homes.holders()
        await pool.close()

    asyncio.run(main())


def test_a_session_goes_to_an_idle_runner_on_the_least_busy_cpu(tmp_path: Path) -> None:
    async def main() -> None:
        pool, started = _pool(4, [0, 1], tmp_path)
        await pool.warm("k", 4)  # idle, oldest first: cpu 0, 1, 0, 1
        first = await pool.acquire("k")
        second = await pool.acquire("k")
        assert {first.home, second.home} == {(0,), (1,)}  # never both on one CPU
        await pool.release(second, True)  # now only `first`'s CPU is busy
        third = await pool.acquire("k")
        assert third.home != first.home
        await pool.close()

    asyncio.run(main())


def _affinities(provider: Any) -> list[tuple[list[int], list[int]]]:
    """(the job's CPUs, the runner's hello) for two sessions that overlap."""

    async def main() -> list[tuple[list[int], list[int]]]:
        async def one() -> tuple[list[int], list[int]]:
            async with provider.session("python") as sb:
                code = "import os, time; time.sleep(0.3); print(sorted(os.sched_getaffinity(0)))"
                run = await sb.exec(["python3", "-c", code])
                assert run.ok, run.text("stderr")
                return _cpu_list(run.text()), list(sb.runner_hello["cpus"])

        try:
            return list(await asyncio.gather(one(), one()))
        finally:
            await provider.close()

    return asyncio.run(main())


def _cpu_list(text: str) -> list[int]:
    return [int(x) for x in text.strip().strip("[]").split(",") if x.strip()]


@pytest.mark.skipif(len(HOST_CPUS) < 2, reason="pinning needs two CPUs")
def test_two_runners_run_their_jobs_on_two_cpus(
    new_provider: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Homes are counted machine-wide: a lock dir of its own keeps other tests' runners out.
    monkeypatch.setenv("VERIFIERS_LOCK_DIR", str(tmp_path))
    got = _affinities(new_provider(pool_size=2))
    jobs = [job for job, _ in got]
    assert all(job == hello for job, hello in got)  # jobs inherit the runner's home
    assert all(len(job) == 1 and job[0] in HOST_CPUS for job in jobs)
    assert jobs[0] != jobs[1]


@pytest.mark.skipif(len(HOST_CPUS) < 2, reason="pinning needs two CPUs")
def test_unpinned_jobs_may_use_every_cpu(new_provider: Any) -> None:
    got = _affinities(new_provider(pool_size=2, cpu_pinning=False))
    assert [job for job, _ in got] == [HOST_CPUS, HOST_CPUS]
