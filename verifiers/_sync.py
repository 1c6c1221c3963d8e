"""``SyncEngine``: the blocking twin of :class:`~verifiers.Engine`.

It is to ``Engine`` what httpx's ``Client`` is to its ``AsyncClient``.

Trainers call reward functions from plain threads (TRL's main thread, veRL's executor threads,
OpenRLHF's ``asyncio.to_thread``) and from their own event loops. An :class:`Engine` is bound
to the loop it first ran on (its semaphore, worker processes and warm sandboxes live there),
and a fresh engine per call would throw the warm sandboxes away every step. So a
``SyncEngine`` runs one long-lived engine on a private event loop in a daemon thread and hands
work to it with ``run_coroutine_threadsafe``: sync callers block on the future, async callers
await it (:meth:`SyncEngine.score_async`) without blocking their own loop. That keeps the
sync facade's rule (never nest event loops, never ``nest_asyncio``) instead of bending it.

Everything that is not I/O (settings, the error boundary, ordering, the cache) is the
engine's own: this class only owns the thread. The trainer adapters build on it
(:class:`verifiers.rl_adapters.Scorer` is this class with ``machine_concurrency="auto"``) and
use only its public methods: :meth:`SyncEngine.submit` to start a batch and collect it later
(TRL scores a batch once for all of its reward functions), :meth:`SyncEngine.run` to run
their own coroutine next to the engine (OpenRLHF's group rendezvous waits on this loop),
:meth:`SyncEngine.score_now` for one sample's verdict when it needs no waiting (veRL's
per-sample ``compute_score``).

The fast path: a verdict that needs no waiting (an inline verifier such as ``answer.numeric``,
a bad input) is made on the caller's own thread, by the engine's own preparation step
(``Engine._prepare``: the same validation, resolution, error boundary and stamp as on the
loop), so a call whose items are all such verdicts never hops threads. The hop costs more
than the verdict (about 90 us of CPU against 30-100 us per inline item on this machine), and
veRL calls ``compute_score`` once per sample. As soon as one item needs judging (a sandbox, a
worker process, a deadline), the whole call goes to the loop as before, in order; nothing is
made twice (the verdicts made here travel with the call as ready results). With
``fail_fast_after`` set every call takes the loop, where the engine watches for streaks.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Coroutine, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar, cast

from ._machine import MachineConcurrency, MachineSlots, machine_slots_for
from .context import SandboxProvider
from .engine import Engine, EngineSettings, Item
from .types import Result

__all__ = ["SyncEngine"]

T = TypeVar("T")

log = logging.getLogger("verifiers.engine")

CLOSE_TIMEOUT_S = 30.0
"""How long :meth:`SyncEngine.close` waits for the engine to close and its thread to end."""


class SyncEngine:
    """A long-lived :class:`~verifiers.Engine` callable from any thread or event loop.

    Args:
        settings: Engine settings (default: ``EngineSettings.from_env()``).
        base_dir: Where relative artifact paths resolve (default: the working directory).
        sandboxes: A sandbox provider to use instead of opening ``settings.sandbox``.
        machine_concurrency: Items judged at once across every process of this machine that
            uses the same ``machine_key`` (the ranks of one trainer); ``None`` or ``0``: no
            machine-wide limit, only this engine's own ``concurrency``; ``"auto"``: on where
            this process shares the machine with others of its job (see
            :data:`~verifiers._machine.MachineConcurrency`). Passed to the engine as its
            ``machine_slots`` option.
        machine_key: Names the machine-wide budget; processes sharing it share the limit.

    Close it with :meth:`close` (or ``with SyncEngine() as engine``); an ``atexit`` hook
    closes it too, so worker processes and sandboxes never outlive the process.

    Example:
        >>> from verifiers import SyncEngine
        >>> with SyncEngine() as engine:
        ...     result = engine.score_one(
        ...         {"completion": "4", "task": {"verifier": "answer.numeric", "reference": 4}}
        ...     )
        >>> result.status, result.reward
        ('pass', 1.0)
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        base_dir: Path | str | None = None,
        sandboxes: SandboxProvider | None = None,
        machine_concurrency: MachineConcurrency = None,
        machine_key: str = "default",
    ) -> None:
        self.settings = settings or EngineSettings.from_env()
        self.base_dir = base_dir
        self.machine_slots: MachineSlots | None = machine_slots_for(
            machine_concurrency, self.settings.concurrency, machine_key
        )
        self._sandboxes = sandboxes
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._engine: Engine | None = None
        self._closed = False

    # -- scoring -----------------------------------------------------------------------

    def score(self, items: Iterable[Item]) -> list[Result]:
        """Score ``items`` (blocking); one result per item, in input order.

        Safe from any thread, and from inside a running event loop (it blocks that loop's
        thread, so there prefer :meth:`score_async`).

        Raises:
            RuntimeError: the engine is closed, or this is called from its own loop thread.
        """
        started = self._start_batch(items)
        return started if isinstance(started, list) else started.result()

    def score_one(self, item: Item) -> Result:
        """Score one item (blocking)."""
        return self.score([item])[0]

    def score_now(self, item: Item) -> Result | None:
        """``item``'s verdict if it needs no waiting, made on this thread; else ``None``.

        The fast path of :meth:`score` for one item, without its batch around it: the same
        engine step (``Engine._prepare``: validation, resolution, error boundary, stamp), so
        the result is field for field what :meth:`score` returns. ``None`` when the item
        needs judging (a sandbox, a worker, a deadline) or ``fail_fast_after`` is set: then
        score it with :meth:`score` or :meth:`score_async` (it is prepared again there; no
        verdict was made). For callers that score one sample per call: veRL's per-sample
        ``compute_score``, where the batch wrapper cost more than a twentieth of a verdict.

        It never blocks, so it is safe from any thread (the engine's own loop thread too).

        Raises:
            RuntimeError: the engine is closed.
        """
        if self._loop is None or self._closed:
            self._ensure_loop()  # refuses a closed engine; the loop is needed to close it later
        if self.settings.fail_fast_after:
            return None
        ready = (self._engine or self._engine_now())._prepare(item)
        return ready if isinstance(ready, Result) else None

    async def score_async(self, items: Iterable[Item]) -> list[Result]:
        """Score ``items`` from any event loop without blocking it; results in input order.

        From a coroutine already on this engine's own loop (one passed to :meth:`run`) it
        awaits the engine directly.
        """
        batch = list(items)
        ready = self._ready(batch)
        if ready is not None:
            return ready
        if self._thread is not None and threading.current_thread() is self._thread:
            return await self._score(batch)
        return await asyncio.wrap_future(self._submit(self._score(batch)))

    def submit(self, items: Iterable[Item]) -> Future[list[Result]]:
        """Start scoring ``items`` and return at once; the future holds the results in order.

        For a caller that hands the same batch to several consumers (TRL calls one reward
        function per component): score once, and let each wait on the future (``.result()``,
        or ``await asyncio.wrap_future(future)`` in a loop).

        Raises:
            RuntimeError: the engine is closed, or this is called from its own loop thread.
        """
        started = self._start_batch(items)
        if isinstance(started, list):
            done: Future[list[Result]] = Future()
            done.set_result(started)
            return done
        return started

    def _start_batch(self, items: Iterable[Item]) -> list[Result] | Future[list[Result]]:
        """The results when every verdict was made on this thread, else the loop's future.

        :meth:`score` returns the list as it is: a future per call (its condition variable,
        ``set_result``, ``result``) cost a fifth of an inline verdict on veRL's per-sample path.
        """
        batch = list(items)
        self._check_caller()
        ready = self._ready(batch)
        if ready is not None:
            return ready
        return self._submit(self._score(batch))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on this engine's loop and block until it finishes; its result.

        For callers that combine scoring (``await engine.score_async(...)`` inside ``coro``)
        with async state of their own that must live on one loop for every calling thread
        (OpenRLHF's group rendezvous: each rollout's thread waits for its group-mates there).

        Raises:
            RuntimeError: the engine is closed, or this is called from its own loop thread.
        """
        return self._submit(coro).result()

    async def _score(self, items: list[Item]) -> list[Result]:
        return await self._engine_now().score(items)

    def _engine_now(self) -> Engine:
        """The one engine, made on first use (on any thread: making it touches no loop)."""
        engine = self._engine
        if engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = Engine(
                        self.settings,
                        base_dir=self.base_dir,
                        sandboxes=self._sandboxes,
                        machine_slots=self.machine_slots,
                    )
                engine = self._engine
        return engine

    def _ready(self, items: list[Item]) -> list[Result] | None:
        """Every item's verdict, made on this thread, when none needs waiting; else ``None``.

        Each verdict made replaces its item in ``items`` (the caller's own copy): when a later
        item needs the loop, the engine passes the ready results through in place, so no
        verdict is made twice.

        Raises:
            RuntimeError: the engine is closed.
        """
        self._ensure_loop()  # refuses a closed engine; the loop is needed to close it later
        if self.settings.fail_fast_after or not items:
            return None
        engine = self._engine_now()
        for index, item in enumerate(items):
            ready = engine._prepare(item)
            if not isinstance(ready, Result):
                return None
            items[index] = ready  # a later fallback to the loop passes it through as it is
        return cast("list[Result]", items)

    def _check_caller(self) -> None:
        if self._thread is not None and threading.current_thread() is self._thread:
            raise RuntimeError("SyncEngine called from its own loop thread (re-entrant use)")

    # -- lifecycle ---------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("this SyncEngine is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name="verifiers-engine", daemon=True)
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
            raise RuntimeError("SyncEngine called from its own loop thread (re-entrant use)")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def close(self) -> None:
        """Close the engine (workers, sandboxes, cache) and stop its thread. Idempotent."""
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
                asyncio.run_coroutine_threadsafe(engine.aclose(), loop).result(CLOSE_TIMEOUT_S)
            except Exception as exc:  # closing must finish: log and stop the thread anyway
                log.warning("closing the engine failed: %s", exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT_S)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> SyncEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
