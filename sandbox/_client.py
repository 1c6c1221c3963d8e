"""Host side of the runner protocol: the framed client, the Sandbox it backs, the warm pool.

Backends (local, docker) only know how to *start* and *kill* a worker (a runner process with a
byte channel to it); everything else — framing, timeouts from the host, recycling, the
session lifecycle — lives here so both behave the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import BadInput, InfraError, SandboxUnavailable

from ._base import ExecResult, Limits, Sandbox
from ._runner import HEADER, MAX_FRAME, PROTOCOL_VERSION, b64, decode_body, encode_frame, unb64
from ._settings import SandboxSettings

__all__ = ["Channel", "RunnerLost", "RunnerSandbox", "Worker", "WorkerPool"]

log = logging.getLogger("verifiers.sandbox")


class RunnerLost(Exception):
    """The runner stopped answering (died, was killed, or broke the protocol)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class Channel(ABC):
    """A byte stream to one runner."""

    @abstractmethod
    async def read_exactly(self, size: int) -> bytes:
        """Exactly ``size`` bytes; raises ``EOFError`` / ``OSError`` when the stream ends."""

    @abstractmethod
    async def write(self, data: bytes) -> None:
        """Send bytes (and wait until they are buffered by the transport)."""

    @abstractmethod
    def close(self) -> None:
        """Drop the connection."""


class Worker(ABC):
    """One runner: a warm container or a local sandboxed process."""

    def __init__(self, channel: Channel, key: Hashable) -> None:
        self.channel = channel
        self.key = key
        self.sessions = 0
        self.broken: str | None = None
        self.hello: dict[str, Any] = {}
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        """Short identifier for logs."""
        return f"{type(self).__name__}({self.key})"

    async def handshake(self, timeout: float) -> None:
        """Wait for the runner's hello frame."""
        hello = await asyncio.wait_for(self._read_frame(), timeout)
        if hello.get("op") != "hello" or hello.get("version") != PROTOCOL_VERSION:
            raise RunnerLost(f"unexpected hello from runner: {hello!r}")
        self.hello = hello

    async def _read_frame(self) -> dict[str, Any]:
        header = await self.channel.read_exactly(HEADER.size)
        (size,) = HEADER.unpack(header)
        if size > MAX_FRAME:
            raise RunnerLost(f"runner sent an oversized frame ({size} bytes)")
        return decode_body(await self.channel.read_exactly(size))

    async def call(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request, wait for its reply; any failure marks the worker broken.

        Raises:
            RunnerLost: the runner died, timed out (``timed_out=True``) or sent garbage.
        """
        if self.broken is not None:
            raise RunnerLost(f"worker already broken: {self.broken}")
        async with self._lock:
            try:
                await self.channel.write(encode_frame(message))
                return await asyncio.wait_for(self._read_frame(), timeout)
            except TimeoutError:
                self.broken = f"no reply within {timeout:.1f}s"
                raise RunnerLost(self.broken, timed_out=True) from None
            except RunnerLost as exc:
                self.broken = str(exc)
                raise
            except (EOFError, OSError, ValueError, asyncio.IncompleteReadError) as exc:
                self.broken = f"runner connection lost: {type(exc).__name__}: {exc}"
                raise RunnerLost(self.broken) from None

    @abstractmethod
    async def kill(self) -> None:
        """Stop the runner for good (container removed / process killed)."""


def _limits_payload(limits: Limits) -> dict[str, Any]:
    return limits.model_dump()


class RunnerSandbox(Sandbox):
    """A :class:`Sandbox` backed by one runner worker for the length of one session."""

    def __init__(
        self,
        worker: Worker,
        limits: Limits,
        settings: SandboxSettings,
        release: Callable[[Worker, bool], Awaitable[None]],
    ) -> None:
        self._worker = worker
        self._limits = limits
        self._settings = settings
        self._release = release
        self._closed = False
        self._tainted: str | None = None
        self.workdir = ""

    @property
    def limits(self) -> Limits:
        """The session's default limits."""
        return self._limits

    async def begin(self) -> None:
        """Create the fresh work directory for this session."""
        try:
            reply = await self._worker.call({"op": "begin"}, self._settings.start_timeout_s)
        except RunnerLost as exc:
            raise SandboxUnavailable(f"sandbox runner failed at session start: {exc}") from None
        if not reply.get("ok"):
            self._tainted = str(reply.get("error"))
            raise InfraError(f"sandbox runner refused a session: {reply.get('error')}")
        self.workdir = str(reply.get("workdir", ""))

    def _check_open(self) -> None:
        if self._closed:
            raise InfraError("sandbox session is closed")

    async def exec(
        self,
        argv: list[str],
        *,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        self._check_open()
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise BadInput("argv must be a non-empty list of strings (never a shell string)")
        lim = limits or self._limits
        if lim.memory_mb > self._limits.memory_mb or lim.pids > self._limits.pids:
            # The container's cgroup was sized for the session; never exceed it.
            lim = lim.model_copy(
                update={
                    "memory_mb": min(lim.memory_mb, self._limits.memory_mb),
                    "pids": min(lim.pids, self._limits.pids),
                }
            )
        budget = float(timeout) if timeout is not None else lim.timeout_s
        if budget <= 0:
            raise BadInput(f"timeout must be positive, got {budget}")
        request: dict[str, Any] = {
            "op": "exec",
            "argv": list(argv),
            "env": dict(env or {}),
            "cwd": cwd or ".",
            "timeout": budget,
            "limits": _limits_payload(lim),
        }
        if stdin:
            request["stdin"] = b64(stdin)
        started = time.monotonic()
        host_timeout = budget + self._settings.host_grace_s + lim.output_bytes / 50e6
        try:
            reply = await self._worker.call(request, host_timeout)
        except RunnerLost as exc:
            # Only the job could have made the runner go away mid-job (it cannot be reached
            # otherwise), so this is the job's failure: a result, never a pass.
            self._tainted = str(exc)
            await self._worker.kill()
            return ExecResult(
                returncode=-9,
                stderr=f"[verifiers.sandbox] runner lost during the job: {exc}\n".encode(),
                timed_out=exc.timed_out,
                duration_s=time.monotonic() - started,
            )
        if not reply.get("ok"):
            kind = reply.get("kind")
            if kind in ("bad_path", "not_found", "bad_request"):
                raise BadInput(f"sandbox exec refused: {reply.get('error')}")
            self._tainted = str(reply.get("error"))
            raise InfraError(f"sandbox runner failed: {reply.get('error')}")
        result = ExecResult(
            returncode=int(reply["returncode"]),
            stdout=unb64(reply["stdout"]),
            stderr=unb64(reply["stderr"]),
            truncated=bool(reply["truncated"]),
            timed_out=bool(reply["timed_out"]),
            oom_killed=bool(reply["oom_killed"]),
            duration_s=float(reply["duration_s"]),
            cpu_s=float(reply["cpu_s"]),
            peak_memory_mb=float(reply["peak_memory_mb"]),
        )
        if result.timed_out or result.oom_killed or int(reply.get("leftover", 0)):
            self._tainted = "timeout/oom/leftover processes"
        return result

    async def write_files(self, files: dict[str, bytes | str], *, readonly: bool = False) -> None:
        self._check_open()
        payload = {
            name: b64(data.encode("utf-8") if isinstance(data, str) else bytes(data))
            for name, data in files.items()
        }
        reply = await self._call({"op": "write", "files": payload, "readonly": readonly})
        if not reply.get("ok"):
            if reply.get("kind") in ("bad_path", "bad_request"):
                raise BadInput(f"cannot write sandbox files: {reply.get('error')}")
            raise InfraError(f"sandbox runner failed to write files: {reply.get('error')}")

    async def read_file(self, path: str, *, max_bytes: int = 64 << 20) -> bytes:
        self._check_open()
        reply = await self._call({"op": "read", "path": path, "max_bytes": max_bytes})
        if not reply.get("ok"):
            kind = reply.get("kind")
            if kind == "not_found":
                raise FileNotFoundError(path)
            if kind in ("too_large", "bad_path", "bad_request"):
                raise BadInput(f"cannot read sandbox file {path!r}: {reply.get('error')}")
            raise InfraError(f"sandbox runner failed to read {path!r}: {reply.get('error')}")
        return unb64(reply["data"])

    async def _call(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self._worker.call(message, self._settings.start_timeout_s)
        except RunnerLost as exc:
            self._tainted = str(exc)
            raise InfraError(f"sandbox runner lost: {exc}") from None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        clean = False
        if self._worker.broken is None:
            try:
                reply = await self._worker.call({"op": "end"}, self._settings.start_timeout_s)
                clean = bool(reply.get("ok")) and bool(reply.get("clean"))
            except RunnerLost:
                clean = False
        await self._release(self._worker, clean and self._tainted is None)


@dataclass
class _Slot:
    idle: deque[Worker] = field(default_factory=deque)
    busy: set[Worker] = field(default_factory=set)
    starting: deque[asyncio.Task[Worker]] = field(default_factory=deque)
    """Background starts (refills) not yet claimed: a session waits for one of these rather
    than starting a worker of its own, so the pool never grows past ``pool_size``."""
    launching: int = 0
    """Sessions starting a worker of their own right now."""
    semaphore: asyncio.Semaphore | None = None


class WorkerPool:
    """Warm workers per profile key; at most ``pool_size`` per key at once."""

    def __init__(
        self,
        start: Callable[[Hashable], Coroutine[Any, Any, Worker]],
        settings: SandboxSettings,
    ) -> None:
        self._start = start
        self._settings = settings
        self._slots: dict[Hashable, _Slot] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    def _slot(self, key: Hashable) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = _Slot(semaphore=asyncio.Semaphore(self._settings.pool_size))
            self._slots[key] = slot
        return slot

    async def acquire(self, key: Hashable) -> Worker:
        """A warm worker for ``key`` (started on demand).

        Raises:
            SandboxUnavailable: the backend could not start a worker.
        """
        if self._closed:
            raise SandboxUnavailable("sandbox provider is closed")
        slot = self._slot(key)
        assert slot.semaphore is not None
        await slot.semaphore.acquire()
        acquired: Worker | None = None
        try:
            while slot.idle and acquired is None:
                worker = slot.idle.popleft()
                if worker.broken is None:
                    acquired = worker
                else:
                    self._spawn(worker.kill())
            while acquired is None and slot.starting:
                pending = slot.starting.popleft()
                try:
                    acquired = await pending
                except Exception as exc:  # a failed refill: try the next or start one here
                    log.debug("background worker start failed: %s", exc)
            if acquired is None:
                slot.launching += 1
                try:
                    acquired = await self._start(key)
                finally:
                    slot.launching -= 1
            slot.busy.add(acquired)
            return acquired
        finally:
            if acquired is None:  # start failed or was cancelled: give the slot back
                slot.semaphore.release()

    async def release(self, worker: Worker, reusable: bool) -> None:
        """Return a worker; recycle it when it is used up, broken or suspicious."""
        slot = self._slot(worker.key)
        assert slot.semaphore is not None
        slot.busy.discard(worker)
        worker.sessions += 1
        keep = (
            reusable
            and not self._closed
            and worker.broken is None
            and worker.sessions < self._settings.jobs_per_worker
        )
        if keep:
            slot.idle.append(worker)
        else:
            self._spawn(worker.kill())
            if self._settings.replenish and not self._closed:
                self._refill(worker.key)
        slot.semaphore.release()

    def _refill(self, key: Hashable) -> None:
        slot = self._slot(key)
        total = len(slot.idle) + len(slot.busy) + len(slot.starting) + slot.launching
        if total >= self._settings.pool_size:
            return
        task = asyncio.get_running_loop().create_task(self._start(key))
        slot.starting.append(task)
        task.add_done_callback(lambda done: self._refilled(slot, done))

    def _refilled(self, slot: _Slot, task: asyncio.Task[Worker]) -> None:
        if task not in slot.starting:
            return  # claimed by a session, which got the worker (or the error)
        slot.starting.remove(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:  # a failed background start is retried on demand
            log.debug("background worker start failed: %s", error)
            return
        worker = task.result()
        if self._closed:
            self._spawn(worker.kill())
        else:
            slot.idle.append(worker)

    async def warm(self, key: Hashable, count: int) -> None:
        """Start workers until ``count`` are idle for ``key`` (capped at ``pool_size``)."""
        slot = self._slot(key)
        missing = min(count, self._settings.pool_size) - len(slot.idle) - len(slot.busy)
        if missing <= 0:
            return
        workers = await asyncio.gather(*(self._start(key) for _ in range(missing)))
        slot.idle.extend(workers)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def wrapped() -> None:
            try:
                await coro
            except Exception as exc:  # background cleanup must never crash the loop
                log.debug("sandbox background task failed: %s", exc)

        task = asyncio.get_running_loop().create_task(wrapped())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def counts(self) -> dict[str, int]:
        """How many workers are idle and busy (for tests and diagnostics)."""
        idle = sum(len(s.idle) + len(s.starting) for s in self._slots.values())
        busy = sum(len(s.busy) for s in self._slots.values())
        return {"idle": idle, "busy": busy}

    async def close(self) -> None:
        """Kill every worker, idle or busy, and wait for background tasks."""
        self._closed = True
        workers: list[Worker] = []
        starting: list[asyncio.Task[Worker]] = []
        for slot in self._slots.values():
            workers.extend(slot.idle)
            workers.extend(slot.busy)
            starting.extend(slot.starting)
            slot.idle.clear()
            slot.busy.clear()
            slot.starting.clear()
        for result in await asyncio.gather(*starting, return_exceptions=True):
            if isinstance(result, Worker):
                workers.append(result)
        await asyncio.gather(*(w.kill() for w in workers), return_exceptions=True)
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


@contextlib.asynccontextmanager
async def pooled_session(
    pool: WorkerPool, key: Hashable, limits: Limits, settings: SandboxSettings
) -> AsyncIterator[RunnerSandbox]:
    """Borrow a worker for one session; the work dir is wiped and the worker returned after."""
    worker = await pool.acquire(key)
    sandbox = RunnerSandbox(worker, limits, settings, pool.release)
    try:
        await sandbox.begin()
        yield sandbox
    finally:
        await sandbox.close()


def merge_limits(base: Limits, overrides: dict[str, Any]) -> Limits:
    """``base`` with keyword overrides (``limits=Limits(...)`` replaces it entirely).

    Raises:
        BadInput: an unknown limit name or an invalid value.
    """
    overrides = dict(overrides)
    replacement = overrides.pop("limits", None)
    if replacement is not None:
        if not isinstance(replacement, Limits):
            raise BadInput("limits= must be a verifiers.sandbox.Limits")
        base = replacement
    if not overrides:
        return base
    try:
        return Limits.model_validate({**base.model_dump(), **overrides})
    except Exception as exc:
        raise BadInput(f"invalid sandbox limits {overrides!r}: {exc}") from None
