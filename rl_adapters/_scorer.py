"""The engine behind every adapter: one long-lived :class:`~verifiers.Engine` per adapter.

Trainers call reward functions from plain threads (TRL's main thread, veRL's executor
threads, OpenRLHF's ``asyncio.to_thread``) and from their own event loops (TRL's async reward
loop, veRL's reward loop). An :class:`~verifiers.Engine` is bound to the loop it first ran on
(its semaphore, worker pool and warm sandboxes live there), and starting a fresh engine per
batch would throw the warm sandboxes away every step. So each :class:`Scorer` runs its engine
on a private event loop in a daemon thread and hands work to it with
``run_coroutine_threadsafe``: sync callers block on the future, async callers await it
without blocking their own loop. This is the sync facade's rule (never nest loops) kept, not
bent.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, TypeVar

from verifiers.engine import Engine, EngineSettings
from verifiers.types import Result, Trajectory

from ._machine_limit import MachineSlots

__all__ = [
    "MachineConcurrency",
    "Scorer",
    "in_ray_worker",
    "local_ranks",
    "resolve_machine_slots",
    "score_with_slots",
]

T = TypeVar("T")
Item = Trajectory | Result | dict[str, Any]
MachineConcurrency = int | None | Literal["auto"]
"""``"auto"``: ``$VERIFIERS_MACHINE_CONCURRENCY`` if set (0 = off), else, when this process
may share the machine with others of its job, ``settings.concurrency`` machine-wide, else
off. "May share" is decided from the node, not from launcher variables alone: several ranks
(``LOCAL_WORLD_SIZE``, ``LOCAL_SIZE`` or the MPI equivalents > 1), or a Ray worker process
(``RAY_RAYLET_PID``: veRL's reward workers and OpenRLHF's actors are Ray actors, which no
launcher variable describes, and several of them land on one node).
An int: that many items machine-wide. ``None``: no machine-wide limit (per-process only)."""

_CLOSE_TIMEOUT_S = 30.0


_LOCAL_SIZE_VARS = (
    "LOCAL_WORLD_SIZE",  # torchrun, accelerate
    "LOCAL_SIZE",  # the DeepSpeed launcher
    "OMPI_COMM_WORLD_LOCAL_SIZE",  # Open MPI
    "MPI_LOCALNRANKS",  # MPICH
)


def local_ranks() -> int:
    """How many ranks of this job run on this machine, as launchers report it (1 if unknown)."""
    for name in _LOCAL_SIZE_VARS:
        raw = os.environ.get(name, "").strip()
        if raw.isdigit():
            return int(raw)
    return 1


def in_ray_worker() -> bool:
    """Whether this process is a Ray worker (an actor or task), from the raylet Ray names."""
    return os.environ.get("RAY_RAYLET_PID", "").strip().isdigit()


def resolve_machine_slots(
    machine_concurrency: MachineConcurrency, settings: EngineSettings, key: str
) -> MachineSlots | None:
    """The machine-wide limiter the ``machine_concurrency`` argument asks for, if any."""
    value: int | None
    if machine_concurrency == "auto":
        env = os.environ.get("VERIFIERS_MACHINE_CONCURRENCY")
        if env is not None and env.strip():
            value = int(env)
        elif local_ranks() > 1 or in_ray_worker():
            value = settings.concurrency
        else:
            value = None
    else:
        value = machine_concurrency
    if not value:
        return None
    return MachineSlots(value, key=key)


class Scorer:
    """A long-lived engine on a private event-loop thread, callable from anywhere.

    Args:
        settings: Engine settings (default: ``EngineSettings.from_env()``).
        base_dir: Where relative artifact paths resolve (default: the working directory).
        machine_concurrency: Machine-wide limit on items in verification across all processes
            (ranks) of this host; see :data:`MachineConcurrency`.
        machine_key: Names the machine-wide budget; ranks of one job share a key.

    Close it with :meth:`close` (or use it as a context manager); an ``atexit`` hook closes
    it too, so worker processes and sandboxes never outlive the trainer.
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        base_dir: Path | str | None = None,
        machine_concurrency: MachineConcurrency = "auto",
        machine_key: str = "default",
    ) -> None:
        self.settings = settings or EngineSettings.from_env()
        self.base_dir = base_dir
        self.slots = resolve_machine_slots(machine_concurrency, self.settings, machine_key)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._engine: Engine | None = None
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("this Scorer is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name="verifiers-scorer", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
                atexit.register(self.close)
            return self._loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        try:
            loop = self._ensure_loop()
        except RuntimeError:
            coro.close()
            raise
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("Scorer called from its own loop thread (re-entrant use)")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def close(self) -> None:
        """Close the engine (workers, sandboxes, cache) and stop the loop thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        atexit.unregister(self.close)
        if loop is None or thread is None:
            return
        if self._engine is not None:
            engine = self._engine
            try:
                asyncio.run_coroutine_threadsafe(engine.aclose(), loop).result(_CLOSE_TIMEOUT_S)
            except Exception:
                pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_CLOSE_TIMEOUT_S)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scoring -----------------------------------------------------------------------

    def score(self, items: Sequence[Item]) -> list[Result]:
        """Score ``items`` (blocking); results in input order. Safe from any thread."""
        return self._submit(self._score(items)).result()

    async def score_async(self, items: Sequence[Item]) -> list[Result]:
        """Score ``items`` from any event loop without blocking it; results in input order."""
        return await asyncio.wrap_future(self._submit(self._score(items)))

    async def _score(self, items: Sequence[Item]) -> list[Result]:
        if self._engine is None:
            self._engine = Engine(self.settings, base_dir=self.base_dir)
        engine = self._engine
        if self.slots is None:
            return await engine.score(items)
        return await score_with_slots(engine, self.slots, items, self.settings.concurrency)


async def score_with_slots(
    engine: Engine, slots: MachineSlots, items: Sequence[Item], lanes: int
) -> list[Result]:
    """Score ``items`` on ``lanes`` concurrent lanes, each item holding one machine-wide slot
    while it is verified; results in input order."""
    results: list[Result | None] = [None] * len(items)
    queue = iter(enumerate(items))

    async def lane() -> None:
        for index, item in queue:
            if isinstance(item, Result):
                results[index] = item
                continue
            async with slots.slot():
                results[index] = (await engine.score([item]))[0]

    await asyncio.gather(*(lane() for _ in range(min(len(items), max(lanes, 1)))))
    done = [r for r in results if r is not None]
    assert len(done) == len(items)
    return done
