"""Host side of the runner protocol: the framed client, the Sandbox it backs, the warm pool.

Backends (local, docker) only know how to *start* and *kill* a worker (a runner process with a
byte channel to it); everything else — framing, timeouts from the host, recycling, the
session lifecycle — lives here so both behave the same.

Round trips are what a short job pays for (each is two wake-ups on a loaded machine), so a
session sends as few as it can: ``begin`` and ``write_files`` are queued and travel in one
``batch`` frame with the next ``exec`` (or ``read_file``); ``end`` is sent at ``close`` without
waiting, and its reply is read in front of the worker's next reply. A typical session
(``begin``, writes, one ``exec``, ``end``) is one round trip; files the caller will read back
after the job (:meth:`Sandbox.prefetch`) travel in the same frame, as optional reads run right
after the exec, so reading a job's outputs adds none. Read-only files of 1 KiB or more
are sent once per worker and named by their SHA-256 afterwards (the runner keeps them).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any

from verifiers.errors import BadInput, InfraError, SandboxUnavailable

from ._base import Command, ExecResult, Limits, Sandbox
from ._cpus import CpuHomes
from ._runner import (
    HEADER,
    MAX_FRAME,
    PROTOCOL_VERSION,
    STARVE_GRACE,
    blob,
    decode_body,
    encode_frame,
)
from ._settings import SandboxSettings

__all__ = ["Channel", "RunnerHandle", "RunnerLost", "RunnerPool", "RunnerSandbox"]

log = logging.getLogger("verifiers.sandbox")


class RunnerLost(Exception):
    """The runner stopped answering (died, was killed, or broke the protocol)."""

    def __init__(self, message: str, *, timed_out: bool = False, stale: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.stale = stale
        """Lost before it answered an earlier request: nothing sent since then ran."""


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


class StreamChannel(Channel):
    """A channel over an asyncio reader/writer pair (a unix socket, or a process's pipes)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read_exactly(self, size: int) -> bytes:
        return await self._reader.readexactly(size)

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()


class RunnerHandle(ABC):
    """The host's handle on one runner (a warm container or a local sandboxed process): its
    channel, its state, how to kill it. Not a worker process of the engine's
    :class:`~verifiers.processes.ProcessPool`: a runner runs model code, in isolation."""

    def __init__(self, channel: Channel, key: Hashable) -> None:
        self.channel = channel
        self.key = key
        self.sessions = 0
        self.broken: str | None = None
        self.hello: dict[str, Any] = {}
        self.begun = 0
        """Sessions begun on this runner (its work dirs are ``<root>/job<n>``)."""
        self.kept: dict[str, int] = {}
        """SHA-256 -> size of the read-only files the runner keeps for us."""
        self.unread = False
        """A posted request (``end``) whose reply has not been read yet."""
        self.last_end: dict[str, Any] = {}
        self.home: tuple[int, ...] = ()
        """The CPUs its jobs run on (:class:`CpuHomes`; ``()``: not pinned)."""
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        """Short identifier for logs."""
        return f"{type(self).__name__}({self.key})"

    async def handshake(
        self, timeout: float, config: dict[str, Any], source: str | None = None
    ) -> None:
        """Send the runner its config (and, for :data:`BOOTSTRAP` starts, its ``source``
        first), then wait for its hello frame. Both travel on the protocol channel, never on
        the command line (``ps`` shows the command of every process on the host)."""
        if source is not None:
            body = source.encode("utf-8")
            await self.channel.write(HEADER.pack(len(body)) + body)
        await self.channel.write(encode_frame(config))
        hello = await asyncio.wait_for(self._read_frame(), timeout)
        if hello.get("op") != "hello" or hello.get("version") != PROTOCOL_VERSION:
            raise RunnerLost(f"unexpected hello from runner: {hello!r}")
        if hello.get("preload_error"):  # a broken runtime: decided before any job runs
            raise RunnerLost(str(hello["preload_error"])[:2000])
        self.hello = hello

    async def start(
        self, timeout: float, config: dict[str, Any], what: str, source: str | None = None
    ) -> None:
        """:meth:`handshake`; a runner that does not come up is killed and reported.

        Raises:
            SandboxUnavailable: ``what`` (e.g. "local sandbox runner did not start") and why.
        """
        try:
            await self.handshake(timeout, config, source)
        except (RunnerLost, TimeoutError, EOFError, OSError, ValueError) as exc:
            await self.kill()
            raise SandboxUnavailable(
                f"{what}: {exc!r}", hint="run `verifiers sandbox check`"
            ) from None

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
            except (EOFError, OSError) as exc:  # gone before it could read this request
                self.broken = f"runner connection lost: {type(exc).__name__}: {exc}"
                raise RunnerLost(self.broken, stale=True) from None
            try:
                if self.unread:
                    await self._read_posted(timeout)
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

    async def _read_posted(self, timeout: float) -> None:
        """The reply to the posted request, read ahead of the next one's."""
        try:
            self.last_end = await asyncio.wait_for(self._read_frame(), timeout)
        except TimeoutError:
            self.broken = f"no reply to an earlier request within {timeout:.1f}s"
        except RunnerLost as exc:
            self.broken = str(exc)
        except (EOFError, OSError, ValueError, asyncio.IncompleteReadError) as exc:
            self.broken = f"runner connection lost: {type(exc).__name__}: {exc}"
        else:
            self.unread = False
            return
        raise RunnerLost(self.broken, stale=True)

    async def post(self, message: dict[str, Any]) -> None:
        """Send a request without waiting: its reply is read in front of the next call's.

        Raises:
            RunnerLost: the runner is gone.
        """
        if self.broken is not None:
            raise RunnerLost(f"worker already broken: {self.broken}")
        async with self._lock:
            try:
                if self.unread:
                    await self._read_posted(60.0)
                await self.channel.write(encode_frame(message))
                self.unread = True
            except (EOFError, OSError) as exc:
                self.broken = f"runner connection lost: {type(exc).__name__}: {exc}"
                raise RunnerLost(self.broken) from None

    @abstractmethod
    async def kill(self) -> None:
        """Stop the runner for good (container removed / process killed)."""

    async def loss_cause(self) -> str | None:
        """Why the runner died, when there is evidence that the *job* caused it; else None.

        Called after the runner was lost mid-job, before :meth:`kill`. A job cannot signal or
        stop its runner (another uid, no capabilities, private PID namespace): the only way it
        can take the runner down is memory its cgroup charges to the runner's side (tmpfs
        pages, shared memory), and that leaves a kernel OOM record. No record means the
        machine did it (killed from outside, container removed, engine or host trouble).
        The base class has no evidence to read: None.
        """
        return None


_STARVATION_KEYS = (
    "wall_s",
    "cpu_s",
    "run_delay_s",
    "others_cpu_s",
    "cpus",
    "lowered_priority",
    "all_cpu_counted",
)


def _starvation(raw: Any) -> dict[str, float | int | bool] | None:
    """The runner's starvation evidence, known keys and plain numbers only (None if absent)."""
    if not isinstance(raw, dict):
        return None
    kept: dict[str, float | int | bool] = {}
    for key in _STARVATION_KEYS:
        value = raw.get(key)
        if isinstance(value, bool | int | float):
            kept[key] = value
    return kept


def _limits_payload(limits: Limits) -> dict[str, Any]:
    return limits.model_dump()


_KEEP_MIN = 1024
"""Read-only files this big or bigger are kept by the runner and named by hash afterwards."""
_KEEP_PER_WORKER = 16 << 20
"""Most bytes of kept files per runner (it holds them in memory); past this, files travel."""
_digests: dict[int, tuple[bytes, str]] = {}


def _digest(data: bytes) -> str:
    """SHA-256 of ``data``, remembered per object: the same constant judge bytes every time."""
    known = _digests.get(id(data))
    if known is not None and known[0] is data:
        return known[1]
    digest = hashlib.sha256(data).hexdigest()
    if len(_digests) >= 256:
        _digests.clear()
    _digests[id(data)] = (data, digest)
    return digest


def _check_path(name: str) -> None:
    """Refuse at once what the runner would refuse later (the write itself is deferred)."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\x00" in name:
        raise BadInput(f"cannot write sandbox files: bad path {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise BadInput(f"cannot write sandbox files: path escapes the work dir: {name!r}")


class RunnerSandbox(Sandbox):
    """A :class:`Sandbox` backed by one runner worker for the length of one session.

    ``begin`` and ``write_files`` are queued and sent in one ``batch`` frame with the next
    ``exec`` or ``read_file``; errors of a queued write are raised there. ``close`` posts
    ``end`` without waiting for it.
    """

    def __init__(
        self,
        worker: RunnerHandle,
        limits: Limits,
        settings: SandboxSettings,
        release: Callable[[RunnerHandle, bool], Awaitable[None]],
        acquire: Callable[[], Awaitable[RunnerHandle]] | None = None,
    ) -> None:
        self._worker = worker
        self._limits = limits
        self._settings = settings
        self._release = release
        self._acquire = acquire
        self._closed = False
        self._tainted: str | None = None
        self._queued: list[tuple[dict[str, bytes], bool]] = []
        self._prefetch: dict[str, int] = {}
        """Reads to carry after the next exec, in its frame: path -> max_bytes."""
        self._prefetched: dict[str, tuple[int, dict[str, Any]]] = {}
        """The runner's replies to those reads, taken right after the job: path ->
        (max_bytes, reply). Used once, by the ``read_file`` of the same path and cap."""
        self._begin_queued = False
        self._begun = False
        self.workdir = ""

    @property
    def limits(self) -> Limits:
        """The session's default limits."""
        return self._limits

    @property
    def runner_hello(self) -> dict[str, Any]:
        """What the session's runner said when it started (version, uid, what isolation holds
        between its jobs: ``verifiers sandbox check`` prints it)."""
        return dict(self._worker.hello)

    async def begin(self) -> None:
        """Claim a fresh work directory for this session (sent with the first request)."""
        self._begin_queued = True
        self._predict_workdir()

    def _predict_workdir(self) -> None:
        # The runner names work dirs by its session count, and only we begin sessions.
        root = str(self._worker.hello.get("root", ""))
        self.workdir = f"{root}/job{self._worker.begun + 1}" if root else ""

    def _check_open(self) -> None:
        if self._closed:
            raise InfraError("sandbox session is closed")

    def _pending_bytes(self) -> int:
        return sum(len(d) for files, _ in self._queued for d in files.values())

    def _wire_ops(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The queued requests as sent now, and the hashes they ask the runner to keep."""
        ops: list[dict[str, Any]] = []
        keeping: dict[str, int] = {}
        if self._begin_queued:
            ops.append({"op": "begin"})
        budget = _KEEP_PER_WORKER - sum(self._worker.kept.values())
        for files, readonly in self._queued:
            payload: dict[str, Any] = {}
            for name, data in files.items():
                if not readonly or len(data) < _KEEP_MIN:
                    payload[name] = data
                    continue
                digest = _digest(data)
                if digest in self._worker.kept or digest in keeping:
                    payload[name] = {"sha": digest}
                elif len(data) <= budget:
                    payload[name] = {"data": data, "keep": digest}
                    keeping[digest] = len(data)
                    budget -= len(data)
                else:
                    payload[name] = data
            ops.append({"op": "write", "files": payload, "readonly": readonly})
        return ops, keeping

    async def _request(
        self, message: dict[str, Any], timeout: float, after: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Send the queued requests, ``message`` and ``after`` (optional reads) in one frame;
        ``message``'s reply, with ``after``'s replies under ``"_after"`` (empty when
        ``message`` failed: the batch stopped there).

        Raises:
            RunnerLost: the runner died or timed out while running them.
            BadInput: a queued write was refused.
            InfraError: a queued request failed in the runner.
            SandboxUnavailable: no healthy runner could take the session.
        """
        timeout += self._pending_bytes() / 20e6
        after = after or []
        for _ in range(4):
            queued, keeping = self._wire_ops()
            if not queued and not after:
                return await self._worker.call(message, timeout)
            try:
                reply = await self._worker.call(
                    {"op": "batch", "ops": [*queued, message, *after]}, timeout
                )
            except RunnerLost as exc:
                if not (exc.stale and self._begin_queued):
                    raise
                await self._switch_worker(str(exc))  # nothing of ours ran: try a fresh one
                continue
            if not reply.get("ok"):
                self._tainted = str(reply.get("error"))
                raise InfraError(f"sandbox runner refused a batch: {reply.get('error')}")
            replies = list(reply.get("replies") or [])
            if queued and queued[0]["op"] == "begin" and replies and replies[0].get("ok"):
                self.workdir = str(replies[0].get("workdir", self.workdir))
            for index, sub in enumerate(replies[: len(queued)]):
                if sub.get("ok"):
                    continue
                kind = sub.get("kind")
                if queued[index]["op"] == "begin":
                    if kind == "tainted" and self._acquire is not None:
                        await self._switch_worker(str(sub.get("error")))
                        break
                    self._tainted = str(sub.get("error"))
                    raise InfraError(f"sandbox runner refused a session: {sub.get('error')}")
                self._after_batch(queued, index, keeping)
                if kind == "cache_miss":  # the runner lost what we thought it kept: resend
                    self._worker.kept.clear()
                    break
                self._queued.clear()  # the session is in doubt: queued writes go nowhere
                if kind in ("bad_path", "bad_request"):
                    raise BadInput(f"cannot write sandbox files: {sub.get('error')}")
                self._tainted = str(sub.get("error"))
                raise InfraError(f"sandbox runner failed to write files: {sub.get('error')}")
            else:
                self._after_batch(queued, len(queued), keeping)
                done = dict(replies[len(queued)]) if len(replies) > len(queued) else {}
                expected = len(queued) + 1 + (len(after) if done.get("ok") else 0)
                if len(replies) != expected:
                    self._tainted = "short batch reply"
                    raise InfraError("sandbox runner sent a short batch reply")
                done["_after"] = replies[len(queued) + 1 :]
                return done
        raise SandboxUnavailable("no sandbox runner could start the session")

    def _after_batch(
        self, queued: list[dict[str, Any]], done: int, keeping: dict[str, int]
    ) -> None:
        """Forget the queued requests that ran (the first ``done``) and record kept files."""
        if done and queued[0]["op"] == "begin":
            self._begin_queued = False
            self._begun = True
            self._worker.begun += 1
            done -= 1
        if done >= len(self._queued):
            self._worker.kept.update(keeping)
        del self._queued[:done]

    async def _switch_worker(self, why: str) -> None:
        """Recycle a worker that failed before anything of this session ran; take another."""
        if self._acquire is None:
            raise SandboxUnavailable(f"sandbox runner failed at session start: {why}")
        log.debug("sandbox worker %s recycled at session start: %s", self._worker.name, why)
        # Until a new worker is ours, close() must not release the old one a second time.
        self._closed = True
        await self._release(self._worker, False)
        self._worker = await self._acquire()
        self._closed = False
        self._predict_workdir()

    async def _exec(self, command: Command) -> ExecResult:
        self._check_open()
        argv, stdin, env, cwd, timeout = (
            command.argv,
            command.stdin,
            command.env,
            command.cwd,
            command.timeout,
        )
        lim = command.limits or self._limits
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
            request["stdin"] = bytes(stdin)
        preload = _digest(command.preload) if command.preload else ""
        if preload:  # sent once per runner, then named by hash (see Runner.warm_zygote)
            known = preload in self._worker.kept
            request["preload"] = (
                {"sha": preload} if known else {"data": command.preload or b"", "keep": preload}
            )
        started = time.monotonic()
        # A starved job may run on up to STARVE_GRACE times its timeout (the runner decides).
        host_timeout = budget * STARVE_GRACE + self._settings.host_grace_s + lim.output_bytes / 50e6
        prefetch = list(self._prefetch.items())
        self._prefetch.clear()
        self._prefetched.clear()  # the job may change any file
        reads: list[dict[str, Any]] = [
            {"op": "read", "path": path, "max_bytes": cap, "optional": True}
            for path, cap in prefetch
        ]
        host_timeout += sum(cap for _, cap in prefetch) / 20e6
        try:
            reply = await self._request(request, host_timeout, reads)
        except RunnerLost as exc:
            return await self._lost(exc, time.monotonic() - started)
        for (path, cap), answer in zip(prefetch, reply.pop("_after", ()), strict=False):
            self._prefetched[path] = (cap, dict(answer))
        if not reply.get("ok"):
            kind = reply.get("kind")
            if kind in ("bad_path", "not_found", "bad_request"):
                raise BadInput(f"sandbox exec refused: {reply.get('error')}")
            self._tainted = str(reply.get("error"))
            raise InfraError(f"sandbox runner failed: {reply.get('error')}")
        if preload:
            # The runner kept it (or has it already); if it could not, naming it by hash
            # next time only means that job runs on the plain zygote.
            self._worker.kept.setdefault(preload, len(command.preload or b""))
        result = ExecResult(
            returncode=int(reply["returncode"]),
            stdout=blob(reply["stdout"], "stdout"),
            stderr=blob(reply["stderr"], "stderr"),
            truncated=bool(reply["truncated"]),
            timed_out=bool(reply["timed_out"]),
            oom_killed=bool(reply["oom_killed"]),
            duration_s=float(reply["duration_s"]),
            cpu_s=float(reply["cpu_s"]),
            peak_memory_mb=float(reply["peak_memory_mb"]),
            starved=bool(reply.get("starved", False)),
            starvation=_starvation(reply.get("starvation")),
        )
        if result.timed_out or result.oom_killed or int(reply.get("leftover", 0)):
            self._tainted = "timeout/oom/leftover processes"
        return result

    async def _lost(self, exc: RunnerLost, duration: float) -> ExecResult:
        """The runner went away while it ran a job: whose doing was it?

        * no reply past the job's deadline (``timed_out``): the job had its whole budget and
          did not finish; a timeout, the job's ``fail``, whatever else happened;
        * dead with the kernel's OOM record for its container (:meth:`RunnerHandle.loss_cause`):
          the job's memory took the runner down; ``oom_killed``, the job's ``fail``;
        * dead with no such evidence: the machine's (runner killed from outside, container
          removed, engine gone, host OOM killer): ``InfraError``, never a score, and the
          engine retries the item on a fresh runner.

        Raises:
            InfraError: the loss was not the job's doing.
        """
        self._tainted = str(exc)
        cause = None if exc.timed_out else await self._worker.loss_cause()
        await self._worker.kill()
        if exc.timed_out or cause is not None:
            why = f"{cause}: {exc}" if cause else str(exc)
            return ExecResult(
                returncode=-9,
                stderr=f"[verifiers.sandbox] runner lost during the job: {why}\n".encode(),
                timed_out=exc.timed_out,
                oom_killed=cause is not None,
                duration_s=duration,
            )
        raise InfraError(
            f"sandbox runner lost during the job, with no sign the job caused it: {exc}",
            hint="the runner was killed or its container removed from outside; retried on a "
            "fresh one (check the host's memory and whoever prunes containers)",
        )

    async def write_files(self, files: dict[str, bytes | str], *, readonly: bool = False) -> None:
        self._check_open()
        self._prefetched.clear()  # a read after this write must see it
        batch: dict[str, bytes] = {}
        for name, data in files.items():
            _check_path(name)
            batch[name] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self._queued.append((batch, readonly))

    async def read_file(self, path: str, *, max_bytes: int = 64 << 20) -> bytes:
        """Raises ``FileNotFoundError`` also when the job's memory took the runner down
        before the file could be read (its files are gone with it: the job's doing, which
        a domain scores like any missing output), ``InfraError`` when the machine did."""
        self._check_open()
        ready = self._prefetched.pop(path, None)
        if ready is not None and ready[0] == max_bytes:
            return self._read_reply(ready[1], path)
        try:
            reply = await self._request(
                {"op": "read", "path": path, "max_bytes": max_bytes},
                self._settings.start_timeout_s,
            )
        except RunnerLost as exc:
            self._tainted = str(exc)
            cause = None if exc.timed_out else await self._worker.loss_cause()
            await self._worker.kill()
            if cause is not None:
                raise FileNotFoundError(
                    errno.ENOENT, f"sandbox runner lost before the read: {cause}", path
                ) from None
            raise InfraError(f"sandbox runner lost: {exc}") from None
        return self._read_reply(reply, path)

    def prefetch(self, path: str, *, max_bytes: int = 64 << 20) -> None:
        """Carry ``read_file(path, max_bytes=...)`` in the next exec's frame (see
        :meth:`Sandbox.prefetch`): the runner reads the file right after the job, before it
        answers, as the read would have in the next round trip (the job's processes are gone
        by then either way)."""
        self._check_open()
        _check_path(path)
        self._prefetch[path] = int(max_bytes)

    @staticmethod
    def _read_reply(reply: dict[str, Any], path: str) -> bytes:
        """The bytes of a ``read`` reply, or the exception ``read_file`` raises for it."""
        if not reply.get("ok"):
            kind = reply.get("kind")
            if kind == "not_found":
                raise FileNotFoundError(path)
            if kind in ("too_large", "bad_path", "bad_request"):
                raise BadInput(f"cannot read sandbox file {path!r}: {reply.get('error')}")
            raise InfraError(f"sandbox runner failed to read {path!r}: {reply.get('error')}")
        return blob(reply["data"], "data")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queued.clear()  # never sent: nothing ran that could read them
        clean = self._worker.broken is None
        if self._begun and clean:
            try:
                # The reply (was everything of the job killed, the work dir removed?) is read
                # in front of the worker's next reply; a runner that failed refuses the next
                # session, which then moves to a fresh worker before anything of it runs.
                await self._worker.post({"op": "end"})
            except RunnerLost:
                clean = False
        await self._release(self._worker, clean and self._tainted is None)


@dataclass
class _Slot:
    idle: deque[RunnerHandle] = field(default_factory=deque)
    busy: set[RunnerHandle] = field(default_factory=set)
    starting: deque[asyncio.Task[RunnerHandle]] = field(default_factory=deque)
    """Background starts (refills) not yet claimed: a session waits for one of these rather
    than starting a worker of its own, so the pool never grows past ``pool_size``."""
    launching: int = 0
    """Sessions starting a worker of their own right now."""
    semaphore: asyncio.Semaphore | None = None


class RunnerPool:
    """Warm runners per profile key (image, memory, pids); at most ``pool_size`` per key at once."""

    def __init__(
        self,
        start: Callable[[Hashable, tuple[int, ...]], Coroutine[Any, Any, RunnerHandle]],
        settings: SandboxSettings,
    ) -> None:
        self._start_on = start
        """The backend's start: a runner for a profile key, pinned to a home (``()``: none)."""
        self._settings = settings
        self.homes = CpuHomes(settings.cpus, settings.cpu_pinning)
        self._slots: dict[Hashable, _Slot] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False
        self.recycled: Counter[tuple[Hashable, str]] = Counter()
        """Workers recycled so far, by ``(profile key, reason)``: ``used_up`` (served
        ``jobs_per_worker`` sessions), ``tainted`` (a job timed out, hit its memory limit, left
        processes or state behind, or the runner refused further sessions), ``broken`` (the
        runner died or stopped answering). Monotonic; the reward server exports it."""

    async def _start(self, key: Hashable) -> RunnerHandle:
        """Start a runner on the least taken home CPUs (given back if it does not start)."""
        home = self.homes.take()
        worker: RunnerHandle | None = None
        try:
            worker = await self._start_on(key, home)
        finally:
            if worker is None:  # failed or cancelled: nothing holds the home
                self.homes.give(home)
        worker.home = home
        return worker

    def _retire(self, worker: RunnerHandle) -> Awaitable[None]:
        """A worker leaves the pool: its home is free at once (for the refill started next);
        returns its kill, to await or spawn."""
        home, worker.home = worker.home, ()
        self.homes.give(home)
        return worker.kill()

    def _pick_idle(self, slot: _Slot) -> RunnerHandle | None:
        """The idle worker whose home has the fewest busy runners (oldest first on a tie):
        with more runners than CPUs, two sessions never share a CPU while another idles."""
        if not slot.idle:
            return None
        busy: Counter[int] = Counter()
        for other in self._slots.values():
            for worker in other.busy:
                busy.update(worker.home)
        best = min(slot.idle, key=lambda w: sum(busy[cpu] for cpu in w.home))
        slot.idle.remove(best)
        return best

    def _slot(self, key: Hashable) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = _Slot(semaphore=asyncio.Semaphore(self._settings.pool_size))
            self._slots[key] = slot
        return slot

    async def acquire(self, key: Hashable) -> RunnerHandle:
        """A warm worker for ``key`` (started on demand).

        Raises:
            SandboxUnavailable: the backend could not start a worker.
        """
        if self._closed:
            raise SandboxUnavailable("sandbox provider is closed")
        slot = self._slot(key)
        assert slot.semaphore is not None
        await slot.semaphore.acquire()
        acquired: RunnerHandle | None = None
        try:
            for worker in [w for w in slot.idle if w.broken is not None]:
                slot.idle.remove(worker)
                self.recycled[(key, "broken")] += 1
                self._spawn(self._retire(worker))
            acquired = self._pick_idle(slot)
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

    async def release(self, worker: RunnerHandle, reusable: bool) -> None:
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
            if not self._closed:
                reason = (
                    "broken"
                    if worker.broken is not None
                    else "tainted"
                    if not reusable
                    else "used_up"
                )
                self.recycled[(worker.key, reason)] += 1
            self._spawn(self._retire(worker))
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

    def _refilled(self, slot: _Slot, task: asyncio.Task[RunnerHandle]) -> None:
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
            self._spawn(self._retire(worker))
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
        workers: list[RunnerHandle] = []
        starting: list[asyncio.Task[RunnerHandle]] = []
        for slot in self._slots.values():
            workers.extend(slot.idle)
            workers.extend(slot.busy)
            starting.extend(slot.starting)
            slot.idle.clear()
            slot.busy.clear()
            slot.starting.clear()
        for result in await asyncio.gather(*starting, return_exceptions=True):
            if isinstance(result, RunnerHandle):
                workers.append(result)
        await asyncio.gather(*(self._retire(w) for w in workers), return_exceptions=True)
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


@contextlib.asynccontextmanager
async def pooled_session(
    pool: RunnerPool, key: Hashable, limits: Limits, settings: SandboxSettings
) -> AsyncIterator[RunnerSandbox]:
    """Borrow a worker for one session; the work dir is wiped and the worker returned after."""
    worker = await pool.acquire(key)
    sandbox = RunnerSandbox(worker, limits, settings, pool.release, lambda: pool.acquire(key))
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


Worker = RunnerHandle
"""Old name of :class:`RunnerHandle` (branches in flight may still say it)."""
WorkerPool = RunnerPool
"""Old name of :class:`RunnerPool`."""
