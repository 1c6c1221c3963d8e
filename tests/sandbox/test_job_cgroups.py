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


def _job_limits() -> dict[str, str]:
    """The limit files of the job cgroups of this process's runners, read on the host."""
    parents = list(_v1_parents().values()) or [p for p in [_v2_parent()] if p]
    found: dict[str, str] = {}
    for parent in parents:
        for job in glob.glob(os.path.join(parent, f"verifiers-{os.getpid()}-*", "job*")):
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

    async def main() -> list[Any]:
        provider = LocalProvider(SandboxSettings(local_isolation="bwrap", pool_size=1))
        try:
            async with provider.session("python", memory_mb=96, pids=24, timeout_s=20) as sb:
                running = asyncio.ensure_future(sb.exec(WHERE_AM_I))
                seen: dict[str, str] = {}
                while not running.done() and len(seen) < 2:
                    seen = _job_limits()
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
