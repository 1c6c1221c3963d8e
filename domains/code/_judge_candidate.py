"""The candidate process and the judge's handle on it (in the sandbox; stdlib only).

Why a separate candidate process
--------------------------------
Candidate code that runs in the same interpreter as the code that decides whether it passed can
rewrite that decision: patch ``builtins``/``unittest``/``pytest``, walk frames and ``gc`` to read
the expected values, return objects whose ``__eq__`` is always true, exit before the tests with
status 0, print fake "passed" lines. So the judge (``_judge``) and the model's code never share
an interpreter: the **candidate** process (forked from the judge *before* the job is read, or
started fresh after a crash) imports the model's code and answers remote calls over a pipe:
call this function with these JSON-encoded arguments, return the JSON-encoded result. Objects
that are not plain data come back as opaque handles (:class:`Remote`); the judge never calls the
candidate's ``__eq__``. Its stdin is ``/dev/null``, its stdout/stderr are pipes the judge drains
(feedback only). It never sees the nonce, the test code or (for ``io``/``call``) any expected
value.

This module holds both ends of that pipe: the candidate's server loop (:func:`_candidate_main`,
run under the hands-off seccomp filter below), the framing (4-byte big-endian length + JSON, one
reply per request), and the judge side's :class:`Candidate` with its proxies.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import sys
import time
import types

from ._judge_codec import CodecError, decode, encode

# Kept out of the judge's start-up path (every millisecond here is paid per sample); mypy
# treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_MESSAGE = 16 << 20
"""Largest judge<->candidate message; a bigger reply is a protocol violation."""


# ---------------------------------------------------------------------------------------------
# Framing over pipes
# ---------------------------------------------------------------------------------------------


def _frame(obj: Any) -> bytes:
    data = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
    if len(data) > MAX_MESSAGE:
        raise CodecError("message too large")
    return struct.pack(">I", len(data)) + data


def _write_msg(fd: int, obj: Any) -> None:
    view = memoryview(_frame(obj))
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _wait(
    fd: int,
    write: bool,
    deadline: float | None,
    sinks: list[_Sink],
    extend: Callable[[], float | None] | None = None,
) -> None:
    """Block until ``fd`` is ready, draining ``sinks`` meanwhile; TimeoutError at ``deadline``
    unless ``extend`` (asked there) gives a later one (a starved step, see :class:`Clock`)."""
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            later = extend() if extend is not None else None
            if later is None:
                raise TimeoutError
            deadline = later
            continue
        live = [k.fd for k in sinks if k.fd >= 0]
        rd, wr, _ = select.select(
            [*live] if write else [fd, *live], [fd] if write else [], [], left
        )
        for k in sinks:
            if k.fd in rd:
                k.pump()
        if fd in (wr if write else rd):
            return


def _read_exact(
    fd: int,
    n: int,
    deadline: float | None,
    sinks: list[_Sink] | None = None,
    extend: Callable[[], float | None] | None = None,
) -> bytes:
    chunks: list[bytes] = []
    while n > 0:
        if deadline is not None or sinks:
            _wait(fd, False, deadline, sinks or [], extend)
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_msg(
    fd: int,
    deadline: float | None,
    sinks: list[_Sink] | None = None,
    extend: Callable[[], float | None] | None = None,
) -> Any:
    (size,) = struct.unpack(">I", _read_exact(fd, 4, deadline, sinks, extend))
    if size > MAX_MESSAGE:
        raise CodecError("message too large")
    return json.loads(_read_exact(fd, size, deadline, sinks, extend))


# ---------------------------------------------------------------------------------------------
# The candidate side (untrusted once the model's code is loaded)
# ---------------------------------------------------------------------------------------------


def _exc_info(exc: BaseException, tb_lines: int = 8) -> dict[str, Any]:
    import traceback

    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines).splitlines()
    return {
        "type": type(exc).__name__,
        "builtin": type(exc).__module__ == "builtins",
        "message": str(exc)[:500],
        "tb": "\n".join(text[-tb_lines:])[-2000:],
    }


def _candidate_main(
    rpc_in: int,
    rpc_out: int,
    *,
    exc_info: Callable[[BaseException], dict[str, Any]] = _exc_info,
    write_msg: Callable[[int, Any], None] = _write_msg,
) -> None:
    """Serve remote calls on the model's module (runs in the candidate process).

    ``exc_info`` (an exception's reply) and ``write_msg`` (one framed reply) are hooks for a
    server built on this one: workspace's project process names an exception's builtin bases
    and flushes the project's output before each reply (domains/workspace/_project_server.py).
    """
    import importlib.util

    # Before any model code: the candidate cannot act on the judge (see _hands_off_filter).
    _hands_off()

    objects: dict[int, Any] = {}

    def ref(obj: Any) -> dict[str, Any]:
        objects[id(obj)] = obj
        try:
            text = repr(obj)[:200]
        except Exception:
            text = f"<{type(obj).__name__} object>"
        return {
            "$": "ref",
            "id": id(obj),
            "type": type(obj).__name__,
            "repr": text,
            "callable": callable(obj),
        }

    def unref(data: dict[str, Any]) -> Any:
        oid = data.get("id")
        if oid not in objects:
            raise CodecError("unknown object handle")
        return objects[oid]

    module: Any = None
    load_error: dict[str, Any] | None = None
    while True:
        try:
            req = _read_msg(rpc_in, None)
        except (EOFError, OSError):
            os._exit(0)
        op = req.get("op")
        seq = req.get("seq")
        try:
            if op == "load":
                limits = req.get("limits", {})
                _apply_limits(limits)
                path = req["path"]
                sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
                spec = importlib.util.spec_from_file_location(req.get("module", "solution"), path)
                if spec is None or spec.loader is None:
                    raise ImportError(f"cannot load {path}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                try:
                    spec.loader.exec_module(module)
                except Exception as exc:
                    load_error = exc_info(exc)
                reply: dict[str, Any] = {"seq": seq, "ok": load_error is None}
                if load_error:
                    reply["exc"] = load_error
                write_msg(rpc_out, reply)
                continue
            if load_error is not None:
                write_msg(rpc_out, {"seq": seq, "exc": load_error, "load": True})
                continue
            target: Any = module if req.get("ref") is None else unref({"id": req["ref"]})
            for name in req.get("path", []):
                target = getattr(target, name)
            if op == "call":
                args = decode(req.get("args", []), unref)
                kwargs = decode(req.get("kwargs", {"$": "dict", "v": []}), unref)
                result = target(*args, **kwargs)
            elif op == "value":
                result = target
            elif op == "repr":
                result = repr(target)[:2000]
            elif op == "len":
                result = len(target)
            elif op == "bool":
                result = bool(target)
            elif op == "iter":
                result = []
                for i, item in enumerate(target):
                    if i >= 100_000:
                        raise OverflowError("iteration produced more than 100000 items")
                    result.append(item)
            elif op == "getitem":
                result = target[decode(req["key"], unref)]
            elif op == "attr":
                # What the module (or object) really has under this name: a plain value the
                # judge then holds itself, or only whether it is callable.
                try:
                    found = getattr(target, str(req.get("name")))
                except AttributeError:
                    result = {"kind": "missing"}
                else:
                    try:
                        result = {"kind": "value", "value": encode(found)}
                    except CodecError:
                        result = {"kind": "callable" if callable(found) else "object"}
            elif op == "names":
                result = [
                    n for n in getattr(target, "__all__", dir(target)) if not n.startswith("_")
                ]
            else:
                raise ValueError(f"unknown op {op!r}")
            write_msg(rpc_out, {"seq": seq, "value": encode(result, ref)})
        except Exception as exc:
            write_msg(rpc_out, {"seq": seq, "exc": exc_info(exc)})


# ---------------------------------------------------------------------------------------------
# The candidate's hands off the judge. The candidate runs under the judge's uid, and the kernel
# lets a process of the same uid lower another's resource limits (``prlimit``), renice it and
# pin its CPUs; only ptrace and ``/proc/<pid>/{mem,fd,environ}`` are closed by the judge being
# non-dumpable. A candidate that lowered the judge's ``RLIMIT_AS`` from its module body made
# the judge's own next step fail (the task's test code, pytest collecting a module the
# candidate never touched), which the judge reported as a broken task: an abstain in place of
# the model's certain 0. So every process that runs model code (the candidate, an ``io``
# program, a compiled program) starts under a seccomp filter, before any model code, that
# refuses (EPERM) the calls that change *another* process: ``prlimit``/``sched_*``/
# ``migrate_pages``/``move_pages`` on a pid other than 0 (itself), ``setpriority``/
# ``ioprio_set`` on anything but itself. Compat-ABI calls (i386 ``int 0x80``, x32) are refused
# whole, so those numbers cannot be dodged. Filters are inherited by every child and survive
# ``exec``. Signals stay allowed: killing or stopping the judge leaves no done line, which
# scores 0, and the corpora's kill-the-judge rows rely on exactly that. (The sandbox runner's
# own filter, for keyrings and message queues, is the runner's; the judge cannot import it: it
# runs with the standard library only, so this small program is built here.)
# ---------------------------------------------------------------------------------------------

# name: (x86_64 nr, aarch64 nr)
_PROCESS_CALLS: dict[str, tuple[int, int]] = {
    "prlimit64": (302, 261),
    "setpriority": (141, 140),
    "ioprio_set": (251, 30),
    "sched_setparam": (142, 118),
    "sched_setscheduler": (144, 119),
    "sched_setaffinity": (203, 122),
    "sched_setattr": (314, 274),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
}
_RULES: dict[str, str] = {
    "prlimit64": "self",
    "sched_setparam": "self",
    "sched_setscheduler": "self",
    "sched_setaffinity": "self",
    "sched_setattr": "self",
    "migrate_pages": "self",
    "move_pages": "self",
    "setpriority": "priority",
    "ioprio_set": "ioprio",
}
_ARCHES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}


def _hands_off_filter(machine: str) -> bytes | None:
    """The classic-BPF program described above; None on an architecture it does not know."""
    if machine not in _ARCHES:
        return None
    arch, column = _ARCHES[machine]
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM

    def arg(i: int) -> tuple[int, int, int, int]:
        return (ld, 0, 0, 16 + 8 * i)  # low 32 bits of args[i] (the kernel reads an int)

    blocks: dict[str, list[tuple[int, int, int, int]]] = {
        "self": [arg(0), (jeq, 0, 1, 0), (ret, 0, 0, allow), (ret, 0, 0, deny)],
        # setpriority(PRIO_PROCESS=0, 0, n) only: PRIO_PGRP/PRIO_USER with 0 mean the caller's
        # group or *every process of its uid*, the judge included.
        "priority": [
            arg(0),
            (jeq, 0, 3, 0),
            arg(1),
            (jeq, 0, 1, 0),
            (ret, 0, 0, allow),
            (ret, 0, 0, deny),
        ],
        "ioprio": [
            arg(0),
            (jeq, 0, 3, 1),  # IOPRIO_WHO_PROCESS
            arg(1),
            (jeq, 0, 1, 0),
            (ret, 0, 0, allow),
            (ret, 0, 0, deny),
        ],
    }
    program: list[tuple[int, int, int, int]] = [
        (ld, 0, 0, 4),  # A = arch
        (jeq, 1, 0, arch),
        (ret, 0, 0, deny),  # a compat ABI (i386 int 0x80): other numbers, refused whole
        (ld, 0, 0, 0),  # A = nr
    ]
    if machine == "x86_64":
        program += [(jset, 0, 1, 0x40000000), (ret, 0, 0, deny)]  # x32 numbers
    for name, numbers in _PROCESS_CALLS.items():
        block = blocks[_RULES[name]]
        program.append((jeq, 0, len(block), numbers[column]))
        program.extend(block)
    program.append((ret, 0, 0, allow))
    return struct.pack("=" + "HBBI" * len(program), *(x for op in program for x in op))


_installers: list[Callable[[], bool]] = []


def _hands_off_installer() -> Callable[[], bool]:
    """The filter, built once per judge process (before it forks the children
    that install it: a child pays two ``prctl`` calls, not the build); returns the installer.

    The installer returns whether the kernel took the filter. ``PR_SET_NO_NEW_PRIVS`` comes
    first, as an unprivileged filter needs (the sandbox sets it for every job already).
    """
    if _installers:
        return _installers[0]

    def unavailable() -> bool:
        return False

    install = unavailable
    program = _hands_off_filter(os.uname().machine)
    if program is not None:
        try:
            import ctypes

            # struct sock_fprog {unsigned short len; struct sock_filter *filter;} at offset 0,
            # the program right after it, in one buffer that lives as long as this process.
            buffer = ctypes.create_string_buffer(16 + len(program))
            address = ctypes.addressof(buffer)
            data = struct.pack("=H6xQ", len(program) // 8, address + 16) + program
            ctypes.memmove(address, data, len(data))
            prctl = ctypes.pythonapi.prctl
            pointer = ctypes.c_void_p(address)

            def install() -> bool:
                prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
                return bool(prctl(22, 2, pointer, 0, 0) == 0)  # SECCOMP_MODE_FILTER

            install.buffer = buffer  # type: ignore[attr-defined]
        except (OSError, AttributeError):
            install = unavailable
    _installers.append(install)
    return install


def _hands_off() -> bool:
    """Install the filter in this process (a child about to run model code)."""
    return _hands_off_installer()()


def python_env() -> dict[str, str]:
    """The environment of a Python process that runs the model's code (nothing of the judge's)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": os.getcwd(),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def _apply_limits(limits: dict[str, Any]) -> None:
    import resource

    mem = limits.get("memory_bytes")
    if mem:
        for res in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            try:
                resource.setrlimit(res, (int(mem), int(mem)))
            except (ValueError, OSError):
                pass


def _candidate_child(rpc_in: int, rpc_out: int, out_w: int, err_w: int) -> None:
    """Entry of a freshly forked candidate: detach from the judge's stdio, then serve."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    # Every other fd up to 255 closed, in C: ``closerange`` ignores fds that are not open,
    # where a Python loop paid a raised-and-caught OSError for each of ~250 numbers.
    low = 3
    for fd in sorted({rpc_in, rpc_out}):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 256)
    os.setpgid(0, 0)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    try:
        _candidate_main(rpc_in, rpc_out)
    finally:
        os._exit(0)


# ---------------------------------------------------------------------------------------------
# The judge side (trusted)
# ---------------------------------------------------------------------------------------------


class CandidateError(Exception):
    """The candidate raised, died, timed out or broke the protocol during a remote call."""

    def __init__(self, kind: str, info: dict[str, Any]) -> None:
        super().__init__(f"{info.get('type', kind)}: {info.get('message', '')}")
        self.kind = kind
        self.info = info


class CandidateTimeout(CandidateError):
    pass


# pytest's report of a test names an exception class by module and name unless it comes from
# ``__main__``: as when the judge was one ``__main__`` module, the model reads "CandidateError".
CandidateError.__module__ = CandidateTimeout.__module__ = "__main__"


class _Sink:
    """Keeps the first ``cap`` bytes read from a non-blocking pipe and drops the rest.

    Pumped by whoever waits on the candidate (no threads: each costs start-up time per
    sample), so a chatty candidate never blocks for long on a full pipe.
    """

    def __init__(self, fd: int, cap: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.cap = cap
        self.buf = bytearray()
        self.dropped = 0
        self.mark = 0

    def pump(self) -> None:
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return
            room = self.cap - len(self.buf)
            if room > 0:
                self.buf += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def take(self) -> str:
        self.pump()
        data = bytes(self.buf[self.mark :])
        self.mark = len(self.buf)
        return data.decode("utf-8", "replace")


END_MARGIN_S = 1.5
"""Seconds before its exec's wall limit by which the judge stops extending a starved step, so
that it still writes its done line (with the evidence: an abstain) before the runner's kill."""


def exec_end(exec_timeout: Any) -> float | None:
    """The monotonic time by which the judge stops waiting on a starved step: its exec's wall
    limit (``exec_timeout_s`` in the job) less :data:`END_MARGIN_S`, counted from when the
    runner's clock for this job started; None when not given.

    The runner names that time in ``VERIFIERS_JOB_STARTED`` (its CLOCK_MONOTONIC, which the
    job shares). The job's process may be much older: a zygote's spare is forked while the
    job before runs, and a limit counted from its start had passed before the job began
    (every test "timed out" at once, an honest fix's 0). Without the variable (an older
    runner) the limit counts from this process's start, which the runner's clock started
    just before where no spare is kept.

    A step extended past it would be killed with the judge by the runner (no done line, the
    model's 0) unless the runner's own rule also found the whole job starved: so the judge
    never waits past it, and a step still starved there is reported starved (an abstain)."""
    if exec_timeout is None:
        return None
    now = time.monotonic()
    try:
        started = float(os.environ.get("VERIFIERS_JOB_STARTED", ""))
    except ValueError:
        started = float("nan")
    if not (now - 86400.0 <= started <= now):  # nan, absent or not a past time: not the runner's
        age = 0.0
        try:
            with open("/proc/self/stat") as handle:
                start = int(handle.read().rsplit(")", 1)[1].split()[19])
            tick = float(os.sysconf("SC_CLK_TCK"))
            age = max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - start / tick)
        except (OSError, ValueError, IndexError, AttributeError):
            pass
        started = now - age
    return started + float(exec_timeout) - END_MARGIN_S


def job_members() -> list[int]:
    """The job's processes: every process of this uid that the job's private PID namespace
    shows (the runner only counts CPU this way where the namespace is private)."""
    uid = os.getuid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    found.append(int(name))
            except OSError:
                continue
    return found


class Patience:
    """Whether a timed step that reached its wall time limit was starved of CPU by the
    machine, by the sandbox runner's own rule (``CpuWindow``, shipped as
    ``_judge_starvation``: one definition) on the job's CPU account (the runner names it in
    ``VERIFIERS_JOB_CPU``; none: never starved), over a window from the step's start (the CPU,
    run delay and tasks the job had before the step are not the step's).

    A starved step runs on, re-checked every quarter of its limit, until it is no longer
    starved (then its timeout stands: the model's), finishes, uses its limit in CPU, or
    reaches STARVE_GRACE times its limit or ``end`` (:func:`exec_end`), whichever is first:
    then ``starved`` holds the evidence, the judge puts it on its ``D`` line and the host
    abstains (the engine's ``_raise_if_starved``). A step that spins, sleeps or churns
    processes is not starved: its timeout is its fail.
    """

    def __init__(self, limit: float, end: float | None = None) -> None:
        self.starved: dict[str, Any] | None = None
        self.end = end
        self.window: Any = None
        counting = os.environ.get("VERIFIERS_JOB_CPU", "")
        if not counting:
            return  # never starved: no window to measure (and nothing to pay per step)
        from ._judge_starvation import CpuWindow

        self.window = CpuWindow(
            limit,
            limit,
            account="" if counting == "pids" else counting,
            pid_check=counting == "pids",
        )
        self.window.already(job_members())  # the job's CPU and wait before the step are not its
        self.window.tasks_from_now()

    def started(self, pid: int) -> None:
        """The step's first process, when it started before the window did: its tasks are the
        pids from it on (a task of it that died before the window still counts)."""
        window = self.window
        if window is not None and (window.first_pid <= 0 or pid < window.first_pid):
            window.job_started(pid)

    def more(self) -> float | None:
        """At the step's deadline: a later deadline while it is starved, else None."""
        if self.window is None:
            return None
        verdict = self.window.verdict(job_members())
        now = time.monotonic()
        if not verdict.pop("starved"):
            return None
        cap = self.window.cap if self.end is None else min(self.window.cap, self.end)
        if now < cap:
            return float(min(cap, now + self.window.step))
        self.starved = verdict
        return None


class Clock:
    """A wall time limit from now (never past ``end``) that, once reached, asks
    :class:`Patience` whether the machine starved the step: then it runs on."""

    def __init__(self, limit: float, end: float | None = None) -> None:
        now = time.monotonic()
        self.deadline = now + max(0.0, limit)
        if end is not None:
            self.deadline = min(self.deadline, end)
        self.patience = Patience(limit, end)
        self.over = False
        """Reached for good: asked no more (a step that outran its limit fed stays timed out,
        whatever a later window would say; the workspace runner's later calls ask it too)."""

    @property
    def starved(self) -> dict[str, Any] | None:
        return self.patience.starved

    def expired(self, now: float | None = None) -> bool:
        """Whether the limit is reached for good (a starved step's deadline moves on)."""
        if self.over:
            return True
        now = time.monotonic() if now is None else now
        while now >= self.deadline:
            later = self.patience.more()
            if later is None:
                self.over = True
                return True
            self.deadline = later
        return False


class Candidate:
    """The judge's handle on the candidate process: start, call, kill, restart."""

    def __init__(
        self, harness: str, code_path: str, module: str, limits: dict[str, Any], output_cap: int
    ) -> None:
        self.harness = harness
        self.code_path = code_path
        self.module = module
        self.limits = limits
        self.output_cap = output_cap
        self.pid: int | None = None
        self.generation = 0
        self.seq = 0
        self.deadline: float | None = None
        self.dead_info: dict[str, Any] | None = None
        self._rpc_w = -1
        self._rpc_r = -1
        self._sinks: list[_Sink] = []
        self.load_error: dict[str, Any] | None = None
        self.loaded = False
        self.last_call: tuple[str, Any, dict[str, Any]] | None = None
        self.load_timeout = 10.0
        self.total_deadline: float | None = None
        self.clocks: list[Clock] = []
        """The judge's limits on the current step (its total and per-test :class:`Clock`),
        each asked at its deadline whether the machine starved the step; ``deadline`` and
        ``total_deadline`` are plain wall limits on top (workspace's runner sets those)."""
        self.end: float | None = None
        """The load's clock ends by then too (see :func:`exec_end`)."""
        self.starved: dict[str, Any] | None = None
        """The evidence of the first step whose clock ran out while the machine starved it."""
        self.on_starved: Callable[[dict[str, Any]], None] | None = None
        """Called with that evidence at once (the judge ends the run: ``Judge.abandon``)."""
        self.fault: dict[str, Any] | None = None
        """Set when the candidate failed to load, died, timed out or broke the protocol since
        the current test started: that test fails whatever its code caught."""
        self.touches = 0
        """Remote operations so far (tells a collection error the candidate caused from one
        in the test files themselves)."""

    # -- process management ------------------------------------------------------------------

    def prefork(self) -> None:
        """Fork the first candidate before the judge reads its secret job (fast path)."""
        _hands_off_installer()  # built here once; the child only installs it
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: never returns
            for fd in (to_child_w, from_child_r, out_r, err_r):
                os.close(fd)
            _candidate_child(to_child_r, from_child_w, out_w, err_w)
        for fd in (to_child_r, from_child_w, out_w, err_w):
            os.close(fd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self._install(pid, to_child_w, from_child_r, out_r, err_r)

    def _spawn(self) -> None:
        import subprocess

        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = {**python_env(), "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-I", self.harness, "candidate", str(to_child_r), str(from_child_w)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(to_child_r, from_child_w),
            start_new_session=True,
            env=env,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        assert proc.stdout is not None and proc.stderr is not None
        out_r = os.dup(proc.stdout.fileno())
        err_r = os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        self._install(proc.pid, to_child_w, from_child_r, out_r, err_r)

    def _install(self, pid: int, rpc_w: int, rpc_r: int, out_r: int, err_r: int) -> None:
        os.set_blocking(rpc_w, False)
        self.pid = pid
        self._rpc_w = rpc_w
        self._rpc_r = rpc_r
        self.generation += 1
        self.dead_info = None
        self.loaded = False
        for sink in self._sinks:
            sink.close()
        self._sinks = [_Sink(out_r, self.output_cap), _Sink(err_r, self.output_cap)]

    def ensure(self) -> None:
        """Start (or restart) the candidate and load the model's code, once per process.

        A failure to import the code is permanent: every later test reports it.
        """
        if self.load_error is not None:
            return
        alive = self.pid is not None and self.dead_info is None
        if alive and self.loaded:
            return
        if not alive:
            self.kill()
            self._spawn()
        self._load()

    def _load(self) -> None:
        self.loaded = True
        saved = self.deadline
        saved_clocks = self.clocks
        # The import has its own limit (a clock from now: what ran before is not its time),
        # within the step's and the total ones.
        self.clocks = [*saved_clocks, Clock(self.load_timeout, self.end)]
        if self.total_deadline is not None:
            limit = self.total_deadline
            self.deadline = limit if saved is None else min(saved, limit)
        try:
            reply = self._request(
                {"op": "load", "path": self.code_path, "module": self.module, "limits": self.limits}
            )
        except CandidateError as exc:
            self.load_error = dict(exc.info)
            self.load_error["message"] = "while importing the code: " + str(
                self.load_error.get("message", "")
            )
            return
        finally:
            self.deadline = saved
            self.clocks = saved_clocks
        self.load_error = reply.get("exc") if not reply.get("ok") else None

    def kill(self) -> None:
        if self.pid is None:
            return
        for fd in (self._rpc_w, self._rpc_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pid = None
        for sink in self._sinks:
            sink.pump()

    def output(self) -> tuple[str, str]:
        if not self._sinks:
            return "", ""
        return self._sinks[0].take(), self._sinks[1].take()

    # -- remote calls --------------------------------------------------------------------------

    def _request(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.pid is None or self.dead_info is not None:
            self.fault = self.dead_info or {"type": "CandidateDied", "message": "not running"}
            raise CandidateError("dead", self.fault)
        self.seq += 1
        msg["seq"] = self.seq
        try:
            view = memoryview(_frame(msg))
            deadline = self._deadline()
            while view:
                _wait(self._rpc_w, True, deadline, self._sinks, self._extend)
                view = view[os.write(self._rpc_w, view) :]
            reply = _read_msg(self._rpc_r, deadline, self._sinks, self._extend)
        except TimeoutError:
            self.dead_info = {"type": "Timeout", "message": "the candidate exceeded its time limit"}
            self.fault = self.dead_info
            self.kill()
            raise CandidateTimeout("timeout", self.dead_info) from None
        except (EOFError, OSError, ValueError, CodecError) as exc:
            status = self._exit_status()
            self.dead_info = {
                "type": "CandidateDied",
                "message": f"the candidate process ended ({status})",
            }
            if not isinstance(exc, (EOFError, OSError)):
                self.dead_info = {
                    "type": "ProtocolError",
                    "message": f"bad reply from the candidate: {exc!r}"[:300],
                }
            self.fault = self.dead_info
            self.kill()
            raise CandidateError("dead", self.dead_info) from None
        if type(reply) is not dict or reply.get("seq") != self.seq:
            self.dead_info = {
                "type": "ProtocolError",
                "message": "out-of-sequence reply from the candidate",
            }
            self.fault = self.dead_info
            self.kill()
            raise CandidateError("dead", self.dead_info)
        return reply

    def _deadline(self) -> float | None:
        """The first of the step's limits: its clocks' deadlines and the plain ones."""
        found = [c.deadline for c in self.clocks]
        if self.deadline is not None:
            found.append(self.deadline)
        return min(found) if found else None

    def _extend(self) -> float | None:
        """At the wait's deadline: the next one while every clock that ran out was starved
        (it runs on), else None (the step's timeout; a clock's starved evidence is kept)."""
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            return None
        for clock in self.clocks:
            if clock.expired(now):
                if self.starved is None:
                    self.starved = clock.starved
                if clock.starved is not None and self.on_starved is not None:
                    self.on_starved(clock.starved)
                return None
        return self._deadline()

    def _exit_status(self) -> str:
        if self.pid is None:
            return "not running"
        try:
            for _ in range(50):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.pid = None
                    if os.WIFSIGNALED(status):
                        return f"killed by signal {os.WTERMSIG(status)}"
                    return f"exit status {os.WEXITSTATUS(status)}"
                time.sleep(0.002)
        except OSError:
            pass
        return "closed its pipe"

    def remote(self, op: str, ref: int | None, path: list[str], **extra: Any) -> Any:
        """Run one operation in the candidate and decode its answer into judge-side values."""
        self.touches += 1
        self.ensure()
        if self.load_error is not None:
            self.fault = self.load_error
            raise CandidateError("load", self.load_error)
        reply = self._request({"op": op, "ref": ref, "path": path, **extra})
        if op == "call":
            self.last_call = (".".join(path) or "object", extra.get("args"), reply)
        if "exc" in reply:
            info = reply["exc"]
            if type(info) is not dict:
                info = {"type": "ProtocolError", "message": "malformed exception reply"}
            info = {k: v if type(v) in (str, bool) else str(v)[:2000] for k, v in info.items()}
            if reply.get("load"):
                self.fault = info
                raise CandidateError("load", info)
            raise CandidateError("raised", info)
        gen = self.generation
        try:
            return decode(reply.get("value"), lambda d: self.proxy(gen, d["id"], [], d))
        except CodecError as exc:
            raise CandidateError("dead", {"type": "ProtocolError", "message": str(exc)}) from None

    def proxy(
        self, gen: int | None, ref: int | None, path: list[str], meta: dict[str, Any]
    ) -> Remote:
        """A handle for a candidate object: callable only when the candidate's object is.

        Every handle this candidate hands out is made here: a subclass hands out its own
        :class:`Remote` subclasses (workspace's project process does).
        """
        cls = RemoteCallable if meta.get("callable") is True else Remote
        return cls(self, gen, ref, path, meta)

    def encode_arg(self, value: Any) -> Any:
        def ref(obj: Any) -> Any:
            if isinstance(obj, Remote):
                rid = object.__getattribute__(obj, "_ref")
                rgen = object.__getattribute__(obj, "_gen")
                if rid is not None and rgen == self.generation:
                    return {"$": "ref", "id": rid}
            raise CodecError(f"cannot pass a {type(obj).__name__} object to the candidate")

        return encode(value, ref)


SAFE_EXCEPTIONS = frozenset(
    {
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BufferError",
        "EOFError",
        "Exception",
        "FileExistsError",
        "FileNotFoundError",
        "FloatingPointError",
        "ImportError",
        "IndexError",
        "IsADirectoryError",
        "KeyError",
        "LookupError",
        "ModuleNotFoundError",
        "NameError",
        "NotADirectoryError",
        "NotImplementedError",
        "OSError",
        "OverflowError",
        "PermissionError",
        "RecursionError",
        "ReferenceError",
        "RuntimeError",
        "TimeoutError",
        "TypeError",
        "UnboundLocalError",
        "UnicodeError",
        "ValueError",
        "ZeroDivisionError",
    }
)
"""Builtin exceptions a candidate's exception is rebuilt as in the judge (by name; the name is
the candidate's to choose, even by forging its reply, so only names whose meaning is "this call
failed" are here). Never control flow: ``StopIteration`` would end a ``map(candidate, ...)``
loop in the test early with nothing checked; ``StopAsyncIteration``, ``GeneratorExit``,
``KeyboardInterrupt`` and ``SystemExit`` likewise. Anything else stays a ``CandidateError``."""

PLAIN_PREDICATES = frozenset(
    {
        "startswith",
        "endswith",
        "isalnum",
        "isalpha",
        "isascii",
        "isdecimal",
        "isdigit",
        "isidentifier",
        "islower",
        "isnumeric",
        "isprintable",
        "isspace",
        "istitle",
        "isupper",
        "issubset",
        "issuperset",
        "isdisjoint",
    }
)
"""Predicates of builtin data types. On a plain value the judge holds they run in the judge; on
a candidate *object* they would be the candidate's answer to a question that carries the
expected value (``r.startswith("Hello")``), so they are refused there."""


def _rebuild_exception(err: CandidateError) -> Exception:
    """An exception the judge-side test can catch (``except ValueError`` keeps working).

    Only a raise in the candidate is rebuilt, and only as one of :data:`SAFE_EXCEPTIONS`;
    death, timeouts, load failures and protocol errors stay ``CandidateError`` (and mark the
    test failed through ``Candidate.fault`` whatever the test catches).
    """
    info = err.info
    name = str(info.get("type"))
    if err.kind == "raised" and name in SAFE_EXCEPTIONS:
        import builtins

        cls: type[Exception] = getattr(builtins, name)
        try:
            exc = cls(str(info.get("message", "")))
        except Exception:
            return err
        exc.__dict__["candidate_info"] = info
        return exc
    return err


def _stale(cand: Candidate, gen: int | None, ref: int | None) -> dict[str, Any] | None:
    """The fault of a handle from a candidate process since restarted (also set as the
    candidate's), or None for a live one.

    The caller raises, so a traceback the model sees has the frames it had before.
    """
    if ref is None or gen == cand.generation:
        return None
    cand.fault = {
        "type": "StaleObject",
        "message": "object from a candidate process that was restarted",
    }
    return cand.fault


def _resolve(cand: Candidate, gen: int | None, ref: int | None, path: list[str], name: str) -> Any:
    """``getattr`` in the candidate, answered with what it really has there.

    A plain value comes back as the value itself (so comparisons and predicates on it run in the
    judge); a function, class or other object as a handle; a missing name as AttributeError.
    """
    stale = _stale(cand, gen, ref)
    if stale is not None:
        raise CandidateError("dead", stale)
    try:
        info = cand.remote("attr", ref, path, name=name)
    except CandidateError as exc:
        raise _rebuild_exception(exc) from None
    kind = info.get("kind") if type(info) is dict else None
    if kind == "missing":
        raise AttributeError(name)
    if kind == "value":
        try:
            return decode(info.get("value"))
        except CodecError as exc:
            cand.fault = {"type": "ProtocolError", "message": str(exc)[:300]}
            raise CandidateError("dead", cand.fault) from None
    meta = {"callable": kind == "callable"}
    return cand.proxy(gen, ref, [*path, name], meta)


class Remote:
    """A judge-side stand-in for a candidate object (a handle, or a path in its module).

    Attribute access asks the candidate what it really has (plain values come back as values);
    ``len``, iteration and truth value are the candidate's; equality and hashing are identity,
    membership is computed here over the values the candidate's iteration yields, and the
    predicates of builtin data types are refused, so no question that carries the test's
    expected value is ever answered by the candidate.
    """

    def __init__(
        self,
        cand: Candidate,
        gen: int | None,
        ref: int | None,
        path: list[str],
        meta: dict[str, Any] | None = None,
    ) -> None:
        object.__setattr__(self, "_cand", cand)
        object.__setattr__(self, "_gen", gen)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_meta", meta or {})

    def _op(self, op: str, **extra: Any) -> Any:
        cand: Candidate = object.__getattribute__(self, "_cand")
        gen = object.__getattribute__(self, "_gen")
        ref = object.__getattribute__(self, "_ref")
        stale = _stale(cand, gen, ref)
        if stale is not None:
            raise CandidateError("dead", stale)
        try:
            return cand.remote(op, ref, object.__getattribute__(self, "_path"), **extra)
        except CandidateError as exc:
            raise _rebuild_exception(exc) from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in PLAIN_PREDICATES:
            meta = object.__getattribute__(self, "_meta")
            raise TypeError(
                f"{name}() asked of a candidate object ({meta.get('type', 'object')}), not of "
                "plain data: the judge evaluates it only on values it holds (return a str, "
                "list, set ...)"
            )
        return _resolve(
            object.__getattribute__(self, "_cand"),
            object.__getattribute__(self, "_gen"),
            object.__getattribute__(self, "_ref"),
            object.__getattribute__(self, "_path"),
            name,
        )

    def _plain(self) -> Any:
        if object.__getattribute__(self, "_ref") is not None and not object.__getattribute__(
            self, "_path"
        ):
            return self
        return self._op("value")

    def __eq__(self, other: object) -> bool:
        mine = self._plain()
        theirs = other._plain() if isinstance(other, Remote) else other
        if isinstance(mine, Remote) or isinstance(theirs, Remote):
            return mine is theirs
        return bool(mine == theirs)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        meta = object.__getattribute__(self, "_meta")
        if meta.get("repr") and not object.__getattribute__(self, "_path"):
            return str(meta["repr"])
        try:
            return str(self._op("repr"))
        except Exception:
            return "<candidate object>"

    def __len__(self) -> int:
        n = self._op("len")
        if type(n) is not int:
            raise TypeError("len() of a candidate object was not an int")
        return n

    def __bool__(self) -> bool:
        return self._op("bool") is True

    def __iter__(self) -> Any:
        items = self._op("iter")
        if type(items) is not list:
            raise TypeError("iteration of a candidate object did not give a list")
        return iter(items)

    def __getitem__(self, key: Any) -> Any:
        cand: Candidate = object.__getattribute__(self, "_cand")
        return self._op("getitem", key=cand.encode_arg(key))

    def __contains__(self, key: Any) -> bool:
        # Computed here over what the object yields: the candidate never sees the key.
        return any(item is key or item == key for item in self.__iter__())


class RemoteCallable(Remote):
    """A :class:`Remote` for a candidate function, class or other callable object."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        cand: Candidate = object.__getattribute__(self, "_cand")
        return self._op(
            "call", args=cand.encode_arg(list(args)), kwargs=cand.encode_arg(dict(kwargs))
        )


class _RemoteModule(types.ModuleType):
    """Stands in for ``import solution`` inside test code (judge side).

    It reports exactly what the candidate's module has: ``hasattr``/``getattr`` ask the
    candidate (a missing name is AttributeError), plain values come back as values, functions
    and classes as callable handles, other objects as non-callable ones. ``from solution
    import *`` never goes through here in test files (see ``_StarBinder``).
    """

    def __init__(self, cand: Candidate, name: str) -> None:
        super().__init__(name)
        object.__setattr__(self, "_cand", cand)

    # The candidate module's docstring, not this class's (a data descriptor, so it wins over
    # both the class docstring and the module dict's ``__doc__``).
    __doc__ = property(lambda self: self.__getattr__("__doc__"))  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        cand: Candidate = object.__getattribute__(self, "_cand")
        if name == "__all__":
            names = cand.remote("names", None, [])
            return [n for n in names if type(n) is str] if type(names) is list else []
        if name in ("__path__", "__spec__", "__loader__", "__file__", "__wrapped__"):
            raise AttributeError(name)
        if name.startswith("__") and name.endswith("__") and name != "__doc__":
            raise AttributeError(name)
        return _resolve(cand, None, None, [], name)

    def __dir__(self) -> list[str]:
        try:
            return list(self.__getattr__("__all__"))
        except Exception:
            return []
