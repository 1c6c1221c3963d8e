"""The fork server's batch: many game.godot checks through one engine start, in one job.

Why: the engine's start (~0.10 s of CPU: 627 classes, the default theme) is ~97% of a warm
check, and no flag skips it. The godot runtime carries a trusted GDNative library
(``sandbox/images/godot/forkserver.c``, compiled into the read-only root at runtime build
time) with which the engine forks: one sandbox job (``_forkdrive.py``) starts the engine once
as a fork server (the harness itself, ``_harness3.gd``'s ``_serve``) and runs each check in a forked child that jails
itself before it reads a model file and then runs the same harness as a fresh engine. Each
check is read back with the same :class:`~._fresh.CheckJob` as the one-engine-per-check
path, so its verdict is the same (the corpus test compares them row by row).

What keeps the checks of one batch apart (docs/godot.md, "The fork server"): the parent
never runs model code; a child shares nothing writable with it (copy-on-write memory, no fd
but its own stdout/stderr, /dev/null as stdin); its Landlock domain scopes its signals to
itself, ``/proc`` is unreadable, ``ptrace`` fails, the fork library is libc-free and sealed
in the child (no fork: forkserver.c); after each check the driver kills every process the
check left (it is the job's child subreaper) and empties the project, and what appeared in
``/tmp`` and ``/dev/shm``, before the next check's files exist.

The verifier's path reaches it through ``_forkqueue.py`` (checks that arrive together form
a batch; what the fork server cannot judge for certain runs in a fresh engine).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifiers.sandbox import ExecResult
from verifiers.sandbox._runner import STARVE_CPU_SHARE, rule_source

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError

from ._checks import RunReport
from ._engine import ENGINE
from ._fresh import _MAX_STATE, _PIDS, LEFT_FILES, PROJECT, RUNTIME, CheckJob
from ._spec import GodotSpec

__all__ = ["run_batch"]

_HERE = Path(__file__).resolve().parent
_DRIVER = (_HERE / "_forkdrive.py").read_bytes()
_LIBRARY = (_HERE / "_vfork.gdnlib").read_bytes()
_RULES = rule_source(wanted=("_oom_kills",)).encode()
"""``_forkrules.py``, what the driver takes from the sandbox runner (one definition of it)."""
_SERVER_MB = 256
"""The server's own memory (the engine initialised), on top of the largest check's."""
_START_S = 60.0


async def run_batch(
    checks: list[tuple[dict[str, str], GodotSpec]],
    ctx: VerifierContext,
    start_by: list[float] | None = None,
) -> list[RunReport | None]:
    """Run ``checks`` (the project files and spec of each) through one fork server, in order.

    All checks share one ``fps`` (the engine's ``--fixed-fps`` is fixed at its start).
    ``start_by``: per check, the seconds after the batch starts by which it must have
    started (default: no limit). A check that could not start by then, or whose child ran
    into its wall deadline with too little CPU to tell a sleeper from a starved job (see
    ``_forkdrive.py``), comes back as None: the caller runs it in a fresh engine.

    Raises:
        InfraError: the fork server did not start or lost a check (never a score).
        BadInput: the checks do not share one ``fps``.
    """
    if not checks:
        return []
    fps = {spec.fps for _, spec in checks}
    if len(fps) != 1:
        raise BadInput(f"a fork-server batch runs one fps; got {sorted(fps)}")
    jobs = [CheckJob.of(files, spec) for files, spec in checks]
    starts = start_by if start_by is not None else [float("inf")] * len(checks)
    memory_mb = max(spec.memory_mb for _, spec in checks)
    batch = {
        "fps": fps.pop(),
        "memory_mb": memory_mb,
        "starve_cpu_share": STARVE_CPU_SHARE,
        "server": {
            "project.godot": PROJECT.decode(),
            "_harness.gd": ENGINE.harness_source().decode(),
            "_vfork.gdnlib": _LIBRARY.decode(),
        },
        "checks": [
            {
                "files": files,
                "job": job.job,
                "token": job.token_line().strip(),
                "timeout_s": spec.timeout_s,
                "memory_mb": spec.memory_mb,
                "start_by": min(start, 1e9),
            }
            for (files, spec), job, start in zip(checks, jobs, starts, strict=True)
        ],
    }
    limits: dict[str, Any] = {
        "timeout_s": _START_S + sum(spec.timeout_s + 5.0 for _, spec in checks),
        "memory_mb": _SERVER_MB + 2 * memory_mb,
        "pids": _PIDS + 16,
        "file_bytes": _MAX_STATE,
    }
    async with ctx.sandbox(RUNTIME, **limits) as sb:
        await sb.write_files({"_forkdrive.py": _DRIVER, "_forkrules.py": _RULES}, readonly=True)
        await sb.write_files({"_batch.json": json.dumps(batch).encode()})
        done = await sb.exec(
            ["python3", "_forkdrive.py"],
            env={"GODOT_FORK_SANDBOX": "1"},
            timeout=limits["timeout_s"],
        )
        try:
            raw = await sb.read_file("_results.json", max_bytes=len(jobs) * 5 * _MAX_STATE)
        except FileNotFoundError:
            raise InfraError(
                f"the godot fork server failed (exit {done.returncode}): "
                + " | ".join(done.text("stderr").strip().splitlines()[-3:])
            ) from None
    answer = json.loads(raw.decode("utf-8"))
    results = answer["checks"]
    reports: list[RunReport | None] = []
    for job, result in zip(jobs, results, strict=True):
        if result.get("skipped"):
            reports.append(None)
            continue
        run = ExecResult(
            returncode=int(result["status"]),
            stdout=str(result["stdout"]).encode(),
            stderr=str(result["stderr"]).encode(),
            timed_out=bool(result["timed_out"]),
            oom_killed=bool(result["oom"]),
            truncated=bool(result["truncated"]),
            duration_s=float(result["seconds"]),
            cpu_s=int(result["cpu_us"]) / 1e6,
        )
        left = {n: None if result[n] is None else str(result[n]).encode() for n in LEFT_FILES}
        report = await job.report(run, left, ctx)
        report.forked = True
        prepare, child, collect = (round(float(x), 4) for x in result["phases_s"])
        report.profile = {
            "server_start_s": round(float(answer["server_s"]), 4),
            "batch": len(jobs),
            "batch_cpu_s": round(done.cpu_s, 4),  # the whole job's: server, children, driver
            "prepare_s": prepare,
            "child_s": child,
            "collect_s": collect,
        }
        reports.append(report)
    return reports
