"""The verifier's path to the fork server: checks that arrive together share one engine start.

Why: the engine's start (~0.10 s of CPU, no flag skips it) is ~97% of a check in a fresh
engine, while a forked child of an initialised engine costs ~0.06 s (``_forkbatch.py``). A
trainer scores a group of completions at once (the engine's ``concurrency``, 8 by default),
so :func:`run_check` puts each check in a queue per sandbox provider, ``fps`` (one fork
server serves one ``fps``) and ``timeout_s`` (``_QUEUES``), and a *leader* task runs whatever is waiting, up to
``_MAX_BATCH`` checks, through one fork-server job (:func:`~._forkbatch.run_batch`), at
most ``_LEADERS`` such jobs at once. A check that arrives alone is a batch of one.

Every check gets the verdict a fresh engine gives it (``_fresh.run_fresh``, the one-engine
path, whose guarantees the forked child has too: docs/godot.md, "The fork server"); where
the fork server cannot give a certain one, the check runs in a fresh engine in its own item's
context, so nothing a neighbour does turns a check into an abstain:

* the batch job failed (the server or the driver died, the job's cgroup killed it, the
  runtime is missing): every check of it runs fresh, and a broken runtime is then the fresh
  path's ``error/infra``, a hostile check its own ``fail``;
* a check waited ``queue_s`` for the fork server (behind a slow neighbour in a batch, or for
  a leader) and has not started: it runs fresh, so the item's deadline still holds its own
  run (``GodotScene.budget_s`` counts the wait, a child's run and a fresh run);
* a child reached its wall deadline with too little CPU to tell a model that slept from a
  machine that starved it (``_forkdrive.py``): the fresh engine's runner decides.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from verifiers.context import SandboxProvider, VerifierContext

from ._checks import RunReport
from ._forkbatch import run_batch
from ._fresh import run_fresh
from ._spec import GodotSpec

__all__ = ["run_check"]

log = logging.getLogger("verifiers.domains.godot")

_MAX_BATCH = 16
"""Checks per fork-server job: a batch is one sandbox job, so its checks run one after
another (~0.03 s of CPU each) and share one server start (~0.1 s of CPU); more would make
the last one wait longer for little."""
_GATHER_S = 0.005
"""How long a leader waits for more checks before its batch starts: the items of a group
that the engine starts as a previous batch's items finish arrive over a few loop turns."""
_LEADERS = 2
"""Fork-server jobs at once per provider and ``fps`` (each runs its checks in turn)."""
_BATCH_DEADLINE_S = 3600.0
"""A backstop only: the batch job's own timeout is its checks' (``run_batch``)."""


@dataclass
class _Waiting:
    files: dict[str, str]
    spec: GodotSpec
    future: asyncio.Future[RunReport | None]
    fork_by: float
    """``time.monotonic()`` by which its child must have started, or it runs fresh."""


@dataclass
class _Queue:
    sandboxes: SandboxProvider
    base: VerifierContext
    waiting: list[_Waiting]
    leaders: int = 0


_Key = tuple[int, int, int, float]
_QUEUES: dict[_Key, _Queue] = {}
"""By event loop (futures belong to one), provider, ``fps`` (a fork server serves one) and
``timeout_s``: with one deadline ``T`` in a batch, a batch ends at most ``T`` after its last
check's ``start_by``, so a check's result, or its turn to run fresh, comes within
``queue_s + T`` of its arrival, whatever its neighbours do (``GodotScene.budget_s``)."""
_TASKS: set[asyncio.Task[None]] = set()


async def run_check(
    files: dict[str, str], spec: GodotSpec, ctx: VerifierContext, *, queue_s: float
) -> RunReport:
    """One check through the fork server, or a fresh engine where that gives no certain
    verdict (module docstring).

    Raises:
        SandboxUnavailable: the godot runtime is missing or cannot start its engine (from
            the fresh path, which every check of a failed batch takes).
    """
    sandboxes = ctx.sandbox_provider
    if sandboxes is None:
        return await run_fresh(files, spec, ctx)  # raises SandboxUnavailable
    loop = asyncio.get_running_loop()
    key = (id(loop), id(sandboxes), spec.fps, spec.timeout_s)
    queue = _QUEUES.get(key)
    if queue is None:
        queue = _QUEUES[key] = _Queue(sandboxes, ctx, [])
    future: asyncio.Future[RunReport | None] = loop.create_future()
    queue.waiting.append(_Waiting(files, spec, future, time.monotonic() + queue_s))
    if queue.leaders < _LEADERS:
        queue.leaders += 1
        task = loop.create_task(_lead(key, queue))
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)
    report = await future
    if report is None:
        return await run_fresh(files, spec, ctx)
    return report


async def _lead(key: _Key, queue: _Queue) -> None:
    """Run the queue's waiting checks in batches until none is left."""
    batch: list[_Waiting] = []
    try:
        await asyncio.sleep(0)  # checks submitted in the same turn join the first batch
        if len(queue.waiting) < _MAX_BATCH:
            await asyncio.sleep(_GATHER_S)
        while queue.waiting:
            taken = queue.waiting[:_MAX_BATCH]
            del queue.waiting[:_MAX_BATCH]
            now = time.monotonic()
            batch = []
            for waiting in taken:
                if waiting.future.done():  # its item was cancelled meanwhile
                    continue
                if waiting.fork_by <= now:
                    waiting.future.set_result(None)
                else:
                    batch.append(waiting)
            if not batch:
                continue
            ctx = VerifierContext(
                deadline=now + _BATCH_DEADLINE_S,
                base_dir=queue.base.base_dir,
                sandboxes=queue.sandboxes,
                logger=queue.base.logger,
            )
            reports: list[RunReport | None]
            try:
                reports = await run_batch(
                    [(w.files, w.spec) for w in batch], ctx, [w.fork_by - now for w in batch]
                )
            except Exception as exc:  # the batch, not a check: each runs fresh (docstring)
                log.warning(
                    "game.godot fork server: %s; its %d check(s) run fresh", exc, len(batch)
                )
                reports = [None] * len(batch)
            finally:
                ctx.cleanup()
            for waiting, report in zip(batch, reports, strict=True):
                if not waiting.future.done():
                    waiting.future.set_result(report)
            batch = []
    finally:
        for waiting in batch:  # cancelled mid-batch: the checks run fresh
            if not waiting.future.done():
                waiting.future.set_result(None)
        queue.leaders -= 1
        if not queue.leaders:
            for waiting in queue.waiting:  # only when cancelled: the loop empties it
                if not waiting.future.done():
                    waiting.future.set_result(None)
            queue.waiting.clear()
            if _QUEUES.get(key) is queue:
                del _QUEUES[key]
