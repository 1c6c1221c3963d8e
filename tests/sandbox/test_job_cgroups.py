"""The local backend's per-job cgroups, exercised for real (issue 13: "cgroup delegation was
never exercised").

As root the host delegates a subtree to the local backend (v2: under our own cgroup with
``+memory +pids``; v1: in the ``memory`` and ``pids`` hierarchies); the runner makes one
cgroup per job in it and the job's first process starts inside. These tests need that to
hold: where the host does not give it they fail with the row of ``verifiers sandbox check``
and the fix, never skip (CI must not lose them silently).
"""

from __future__ import annotations

import asyncio
import copy
import glob
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox import LocalProvider, SandboxSettings
from verifiers.sandbox._cgroups import _v1_parents, _v2_parent, cgroup_support
from verifiers.sandbox._host import host_features

import verifiers

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.bwrap

WHERE_AM_I = ["/bin/sh", "-c", "cat /proc/self/cgroup; sleep 4"]
"""The job shows which cgroups it is in; while it sleeps the test reads their limits."""


def _parents() -> list[str]:
    return list(_v1_parents().values()) or [p for p in [_v2_parent()] if p]


def _runner_groups() -> set[str]:
    """The cgroups of every runner this test process has (one per runner and hierarchy).

    Runners of earlier tests in the same process may still be warm, each with a spare's and
    a reserve's job cgroups made ahead (with the limits of the jobs they last saw): a test
    looks only at the runners it started (those not in its snapshot from before)."""
    return {
        group
        for parent in _parents()
        for group in glob.glob(os.path.join(parent, f"verifiers-{os.getpid()}-*"))
    }


def _job_dirs(before: set[str]) -> list[str]:
    """The job cgroups of the runners started since ``before`` (:func:`_runner_groups`)."""
    return [
        job
        for group in sorted(_runner_groups() - before)
        for job in glob.glob(os.path.join(group, "job*"))
    ]


def _job_limits(before: set[str]) -> dict[str, str]:
    """The limit files of the job cgroups of the runners started since ``before``, read on
    the host."""
    found: dict[str, str] = {}
    for job in _job_dirs(before):
        for name in ("memory.max", "memory.limit_in_bytes", "pids.max"):
            path = os.path.join(job, name)
            if os.path.exists(path):
                found[name] = Path(path).read_text().strip()
    return found


FORK_BOMB = textwrap.dedent(
    """
    import os, time
    made = 0
    try:
        while made < 10000:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            made += 1
    except OSError as exc:
        print("refused after", made, exc.errno)
    """
)

HOGS = textwrap.dedent(
    """
    import os, time

    def add(a, b):
        kids = []
        for _ in range(8):
            pid = os.fork()
            if pid == 0:
                block = bytearray(40 << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(3)
                os._exit(0)
            kids.append(pid)
        clean = all(os.waitpid(pid, 0)[1] == 0 for pid in kids)
        return a + b if clean else None
    """
)


def _require_delegation() -> tuple[int, tuple[str, ...]]:
    version, controllers = cgroup_support()
    if not version or "memory" not in controllers and "unified" not in controllers:
        row = next(f for f in host_features() if f.name == "cgroup delegation")
        pytest.fail(
            f"this host gives the local backend no per-job cgroups ({row.detail}); "
            "`verifiers sandbox check` shows the same row. Fix: run as root, or delegate "
            "memory and pids to this user's cgroup (systemd: Delegate=yes on the unit that "
            "runs the tests)",
            pytrace=False,
        )
    return version, controllers


def test_each_job_runs_in_its_own_limited_cgroup_and_a_fork_bomb_is_contained() -> None:
    version, _ = _require_delegation()
    before = _runner_groups()

    async def main() -> list[Any]:
        provider = LocalProvider(SandboxSettings(local_isolation="bwrap", pool_size=1))
        try:
            async with provider.session("python", memory_mb=96, pids=24, timeout_s=20) as sb:
                running = asyncio.ensure_future(sb.exec(WHERE_AM_I))
                seen: dict[str, str] = {}
                while not running.done() and len(seen) < 2:
                    seen = _job_limits(before)
                    await asyncio.sleep(0.1)
                where = await running
                bomb = await sb.exec(["python3", "-c", FORK_BOMB])
                after = await sb.exec(["/bin/sh", "-c", "ls /proc | grep -c '^[0-9]'"])
                return [where, seen, bomb, after]
        finally:
            await provider.close()

    where, limits, bomb, after = asyncio.run(main())
    memberships = [line.split(":", 2) for line in where.text().splitlines()]
    leaves = {
        kind
        for _, kinds, path in memberships
        if path.rsplit("/", 1)[-1].startswith("job")
        for kind in kinds.split(",") or [""]
    }
    # cpuacct too: the job's CPU account, dead tasks included (the starvation check's).
    assert leaves >= ({"memory", "pids", "cpuacct"} if version == 1 else {""}), where
    memory = limits.get("memory.max", limits.get("memory.limit_in_bytes"))
    assert memory == str(96 << 20) and limits.get("pids.max") == "24", (version, limits)
    made = int(bomb.text().split()[2])
    assert made < 24 and bomb.duration_s < 15, bomb  # refused by the limit, not the deadline
    assert bomb.ok, bomb
    # Nothing of the bomb is left for the next job: bwrap's init, the runner, its zygote and
    # launcher, and this job's sh, grep and ls.
    assert int(after.text()) <= 8, after


def test_memory_over_all_processes_is_the_models_fail_with_the_limit_named() -> None:
    """Eight children of 40 MB each: every one fits a per-process limit of 128 MB, together
    they do not; the job's cgroup kills them and the result names the limit."""
    _require_delegation()
    line = (REPO / "datasets/examples/code.jsonl").read_text(encoding="utf-8").splitlines()[0]
    item = copy.deepcopy(json.loads(line))
    item["completion"] = f"```python\n{HOGS}\n```"
    item["task"]["spec"].update(memory_mb=128, timeout_s=30)
    item["task"]["spec"]["tests"] = {
        "kind": "assert",
        "entry_point": "add",
        "code": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    }
    [result] = verifiers.score([item], sandbox="local", retries=0, base_dir=REPO / "datasets")
    assert result.status == "fail" and result.reward == 0.0, result
    assert result.details["resources"]["limit_hit"] == ["memory"], result.details


AGE_AND_PLACE = textwrap.dedent(
    """
    import json, os, sys, time
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/self/stat") as fh:
        started = int(fh.read().rsplit(")", 1)[1].split()[19]) / hz
    with open("/proc/uptime") as fh:
        age = float(fh.read().split()[0]) - started
    cgroups = open("/proc/self/cgroup").read().splitlines()
    clock = time.monotonic() - float(os.environ.get(sys.argv[1], "nan"))  # the runner's
    print(json.dumps({"age": age, "clock": clock, "pid": os.getpid(), "uid": os.getuid(),
                      "fds": sorted(int(n) for n in os.listdir("/proc/self/fd")),
                      "cgroups": cgroups}))
    time.sleep(1.5)  # the host reads the job cgroup's limits meanwhile
    """
)
"""A fast-path job reports how long its process has existed, how long its job's clock has run
(the variable named on argv), where it sits and what it has."""


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        found += [int(k) for k in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _zygote_spares(provider: LocalProvider) -> list[int]:
    """Host pids of the root-owned children of each runner's zygote (its spare, between jobs):
    runner tree ``bwrap > bwrap (init) > runner > zygote``."""
    found = []
    for slot in provider._pool._slots.values():
        for handle in [*slot.idle, *slot.busy]:
            for init in _children(handle.process.pid):
                for runner in _children(init):
                    zygote = min(_children(runner))  # forked first, before any launcher
                    for kid in _children(zygote):
                        uid = Path(f"/proc/{kid}/status").read_text().split("Uid:")[1].split()
                        if uid[0] == "0":
                            found.append(kid)
    return found


def test_fast_jobs_start_from_a_spare_already_in_their_own_limited_cgroup() -> None:
    """The zygote forks the next job's process while a job runs, and it joins cgroups made
    for the next job then (a cgroup-v1 join waits an RCU grace period): the job starts from
    it, in a cgroup of its own with its own limits, holding nothing of the job before (fds
    0-2 only) and under the job uid. With the spare killed, the next job is forked afresh
    and gets the same."""
    version, _ = _require_delegation()
    before = _runner_groups()

    async def main() -> tuple[list[Any], list[dict[str, str]], list[int]]:
        provider = LocalProvider(SandboxSettings(local_isolation="bwrap", pool_size=1))
        try:
            runs, limits, killed = [], [], []
            async with provider.session("python", memory_mb=96, pids=24, timeout_s=20) as sb:
                for i in range(4):
                    if i == 3:  # the fallback: no spare, a fresh fork
                        killed = _zygote_spares(provider)
                        for pid in killed:
                            os.kill(pid, 9)
                    await asyncio.sleep(0.5)
                    running = asyncio.ensure_future(
                        sb.exec(["python3", "-c", AGE_AND_PLACE, "VERIFIERS_JOB_STARTED"])
                    )
                    seen: dict[str, str] = {}
                    while not running.done() and len(seen) < 2:
                        await asyncio.sleep(0.2)
                        seen = _job_limits(before)
                    runs.append(await running)
                    limits.append(seen)
            return runs, limits, killed
        finally:
            await provider.close()

    runs, limits, killed = asyncio.run(main())
    assert all(run.ok for run in runs), runs
    seen = [json.loads(run.text().splitlines()[0]) for run in runs]
    # The first job has no spare yet; the next two start from one forked a job earlier
    # (the host paused 0.5 s in between), the last (its spare killed) from a fresh fork.
    ages = [round(s["age"], 2) for s in seen]
    assert ages[0] < 0.4 and ages[1] >= 0.45 and ages[2] >= 0.45 and ages[3] < 0.4, ages
    assert len(killed) == 1, killed
    # The job's clock is the runner's, however old its process: the code judge counts its
    # exec's limit from VERIFIERS_JOB_STARTED (from a spare's start, it had passed already).
    clocks = [s["clock"] for s in seen]
    assert all(0.0 <= c < 0.4 for c in clocks), clocks
    leaves = []
    for report in seen:
        assert report["fds"] == [0, 1, 2, 3], report  # 3: the listing itself
        assert report["uid"] != 0, report
        paths = {line.split(":", 2)[2] for line in report["cgroups"] if ":memory:" in line}
        if version == 2:
            paths = {line.split(":", 2)[2] for line in report["cgroups"]}
        [leaf] = paths
        assert leaf.rsplit("/", 1)[-1].startswith("job"), report
        leaves.append(leaf)
    assert len(set(leaves)) == 4, leaves  # a cgroup of its own for each job
    for seen_limits in limits:
        memory = seen_limits.get("memory.max", seen_limits.get("memory.limit_in_bytes"))
        assert memory == str(96 << 20) and seen_limits.get("pids.max") == "24", limits


def test_finished_jobs_cgroups_are_removed_while_the_next_job_runs() -> None:
    """A finished job's cgroups are emptied at once and removed during the next job (their
    ``rmdir`` takes the kernel's cgroup lock, which joins elsewhere hold for an RCU grace
    period); the next job's are made then too. However many jobs ran, a runner holds at
    most three sets: the last job's (until the next job), a reserve and its spare's."""
    _require_delegation()
    before = _runner_groups()

    async def main() -> list[int]:
        provider = LocalProvider(SandboxSettings(local_isolation="bwrap", pool_size=1))
        counts = []
        try:
            async with provider.session("python", memory_mb=96, pids=24, timeout_s=20) as sb:
                for code in ["pass"] * 8 + ["import os; os.fork(); os.fork()"] * 4:
                    run = await sb.exec(["python3", "-c", code])
                    assert run.ok, run
                    counts.append(len(_job_dirs(before)))
                run = await sb.exec(["/bin/sh", "-c", "true"])  # the launcher's path too
                counts.append(len(_job_dirs(before)))
        finally:
            await provider.close()
        counts.append(len(_job_dirs(before)))
        return counts

    counts = asyncio.run(main())
    per_job = len(_v1_parents()) or 1  # a job's cgroup per v1 hierarchy, or one v2 cgroup
    assert max(counts[:-1]) <= 3 * per_job and counts[-1] == 0, counts
