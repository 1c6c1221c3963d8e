"""The judge that runs *inside* the sandbox (stdlib only; also imported by the host for its codec).

Why a judge process and a separate candidate process
-----------------------------------------------------
Candidate code that runs in the same interpreter as the code that decides whether it passed can
rewrite that decision: patch ``builtins``/``unittest``/``pytest``, walk frames and ``gc`` to read
the expected values, return objects whose ``__eq__`` is always true, exit before the tests with
status 0, print fake "passed" lines. So the two never share an interpreter:

* the **judge** (``python3 -I harness.py``, trusted) reads its job (test code, inputs, a random
  per-run nonce) from stdin, turns itself non-dumpable (so a same-uid process cannot read its
  memory, fds or environment through ``/proc`` or ``ptrace``), runs the test code, and writes
  one result line per test, prefixed with the nonce, to a private duplicate of its stdout;
* the **candidate** process (forked from the judge *before* the job is read, or started fresh
  after a crash) imports the model's code and answers remote calls over a pipe: call this
  function with these JSON-encoded arguments, return the JSON-encoded result. Objects that are
  not plain data come back as opaque handles; the judge never calls the candidate's ``__eq__``.
  Its stdin is ``/dev/null``, its stdout/stderr are pipes the judge drains (feedback only).

The candidate never sees the nonce, the test code or (for ``io``/``call``) any expected value.
Anything it does to its own process changes nothing the judge believes; killing or stopping the
judge leaves the host without the nonce-signed ``done`` line, which the host scores as 0.

Wire format (host <-> judge): stdin is one JSON object; stdout lines ``<nonce> <kind> <json>``
with kind ``R`` (ready), ``T`` (one test's outcome) or ``D`` (done). Judge <-> candidate:
4-byte big-endian length + JSON, one reply per request.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import struct
import sys
import time
import types

# Kept out of the judge's start-up path (every millisecond here is paid per sample); mypy
# treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CodecError", "decode", "encode"]

MAX_MESSAGE = 16 << 20
"""Largest judge<->candidate message; a bigger reply is a protocol violation."""
MAX_DEPTH = 100
MAX_ITEMS = 1_000_000
_BIG_INT = 1 << 63


class CodecError(Exception):
    """A value cannot be encoded, or an encoded value is malformed."""


# ---------------------------------------------------------------------------------------------
# Codec: tagged JSON for plain Python data. Lists and JSON primitives stand for themselves;
# everything else is an object {"$": tag, "v": ...}. Decoding builds only builtin types.
# ---------------------------------------------------------------------------------------------


def encode(obj: Any, ref: Callable[[Any], Any] | None = None, _depth: int = 0) -> Any:
    """Encode plain data (None/bool/int/float/str/bytes/complex/list/tuple/dict/set).

    ``ref`` turns anything else into a handle; without it such values raise ``CodecError``.
    Subclasses of builtins (IntEnum, namedtuple, OrderedDict ...) are encoded as their base.
    """
    if _depth > MAX_DEPTH:
        raise CodecError("value nested too deeply")
    t = type(obj)
    d = _depth + 1
    if obj is None or t is bool or t is str:
        return obj
    if t is int:
        return obj if -_BIG_INT < obj < _BIG_INT else {"$": "int", "v": hex(obj)}
    if t is float:
        if math.isfinite(obj):
            return obj
        return {"$": "float", "v": repr(obj)}
    if t is list:
        return [encode(x, ref, d) for x in obj]
    if t is tuple:
        return {"$": "tuple", "v": [encode(x, ref, d) for x in obj]}
    if t is dict:
        return {"$": "dict", "v": [[encode(k, ref, d), encode(v, ref, d)] for k, v in obj.items()]}
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [encode(x, ref, d) for x in obj]}
    if t is bytes or t is bytearray:
        import base64

        return {"$": "bytes", "v": base64.b64encode(bytes(obj)).decode("ascii")}
    if t is complex:
        return {"$": "complex", "v": [encode(obj.real), encode(obj.imag)]}
    try:
        return _encode_subclass(obj, ref, d)
    except CodecError:
        raise
    except Exception:
        if ref is not None:
            return ref(obj)
        raise CodecError(f"cannot encode a {type(obj).__name__} object") from None


def _encode_subclass(obj: Any, ref: Callable[[Any], Any] | None, d: int) -> Any:
    # Honest subclasses of builtins and numpy values: encode as the plain base value.
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return encode(int.__index__(obj), ref, d)
    if isinstance(obj, float):
        return encode(float.__float__(obj), ref, d)
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, (list, tuple, dict, set, frozenset, bytes, bytearray)):
        base: Any = next(
            b for b in (list, tuple, dict, set, frozenset, bytes, bytearray) if isinstance(obj, b)
        )
        return encode(base(obj), ref, d)
    if type(obj).__module__ == "numpy" and hasattr(obj, "tolist"):
        return encode(obj.tolist(), ref, d)
    if ref is not None:
        return ref(obj)
    raise CodecError(f"cannot encode a {type(obj).__name__} object")


def decode(data: Any, ref: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """Inverse of :func:`encode`, building only builtin objects (``ref`` maps handles).

    Raises:
        CodecError: malformed input, unhashable keys, or too many items.
    """
    budget = [MAX_ITEMS]
    try:
        return _decode(data, ref, budget, 0)
    except (TypeError, ValueError, KeyError, RecursionError) as exc:
        raise CodecError(f"malformed value: {exc!r}"[:300]) from None


def _decode(
    data: Any, ref: Callable[[dict[str, Any]], Any] | None, budget: list[int], depth: int
) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH + 2:
        raise CodecError("value too large or nested too deeply")
    t = type(data)
    if data is None or t is bool or t is str or t is int:
        return data
    if t is float:
        return data
    if t is list:
        return [_decode(x, ref, budget, depth + 1) for x in data]
    if t is not dict:
        raise CodecError(f"unexpected {t.__name__} in encoded value")
    tag = data.get("$")
    value = data.get("v")
    if tag == "ref":
        if ref is None:
            raise CodecError("unexpected object handle")
        return ref(data)
    if tag == "int":
        return int(str(value), 16)
    if tag == "float":
        if value not in ("nan", "inf", "-inf"):
            raise CodecError(f"bad float {value!r}")
        return float(value)
    if tag == "bytes":
        import base64

        return base64.b64decode(str(value), validate=True)
    if tag == "complex":
        re_, im = (float(_decode(x, None, budget, depth + 1)) for x in value)
        return complex(re_, im)
    if type(value) is not list:
        raise CodecError(f"bad encoded {tag!r}")
    items = [_decode(x, ref, budget, depth + 1) for x in value]
    if tag == "tuple":
        return tuple(items)
    if tag == "set":
        return set(items)
    if tag == "frozenset":
        return frozenset(items)
    if tag == "dict":
        out: dict[Any, Any] = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("bad dict item")
            out[pair[0]] = pair[1]
        return out
    raise CodecError(f"unknown tag {tag!r}")


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


def _wait(fd: int, write: bool, deadline: float | None, sinks: list[_Sink]) -> None:
    """Block until ``fd`` is ready, draining ``sinks`` meanwhile; TimeoutError at ``deadline``."""
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise TimeoutError
        live = [k.fd for k in sinks if k.fd >= 0]
        rd, wr, _ = select.select(
            [*live] if write else [fd, *live], [fd] if write else [], [], left
        )
        for k in sinks:
            if k.fd in rd:
                k.pump()
        if fd in (wr if write else rd):
            return
        if not rd and not wr:
            raise TimeoutError


def _read_exact(fd: int, n: int, deadline: float | None, sinks: list[_Sink] | None = None) -> bytes:
    chunks: list[bytes] = []
    while n > 0:
        if deadline is not None or sinks:
            _wait(fd, False, deadline, sinks or [])
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_msg(fd: int, deadline: float | None, sinks: list[_Sink] | None = None) -> Any:
    (size,) = struct.unpack(">I", _read_exact(fd, 4, deadline, sinks))
    if size > MAX_MESSAGE:
        raise CodecError("message too large")
    return json.loads(_read_exact(fd, size, deadline, sinks))


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


def _candidate_main(rpc_in: int, rpc_out: int) -> None:
    """Serve remote calls on the model's module (runs in the candidate process)."""
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
                    load_error = _exc_info(exc)
                reply: dict[str, Any] = {"seq": seq, "ok": load_error is None}
                if load_error:
                    reply["exc"] = load_error
                _write_msg(rpc_out, reply)
                continue
            if load_error is not None:
                _write_msg(rpc_out, {"seq": seq, "exc": load_error, "load": True})
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
            _write_msg(rpc_out, {"seq": seq, "value": encode(result, ref)})
        except Exception as exc:
            _write_msg(rpc_out, {"seq": seq, "exc": _exc_info(exc)})


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
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": os.getcwd(),
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
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
        limit = time.monotonic() + self.load_timeout
        if self.total_deadline is not None:
            limit = min(limit, self.total_deadline)
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
            while view:
                _wait(self._rpc_w, True, self.deadline, self._sinks)
                view = view[os.write(self._rpc_w, view) :]
            reply = _read_msg(self._rpc_r, self.deadline, self._sinks)
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
            return decode(reply.get("value"), lambda d: _remote(self, gen, d["id"], [], d))
        except CodecError as exc:
            raise CandidateError("dead", {"type": "ProtocolError", "message": str(exc)}) from None

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


def _remote(
    cand: Candidate, gen: int | None, ref: int | None, path: list[str], meta: dict[str, Any]
) -> Remote:
    """A handle for a candidate object: callable only when the candidate's object is."""
    cls = RemoteCallable if meta.get("callable") is True else Remote
    return cls(cand, gen, ref, path, meta)


def _resolve(cand: Candidate, gen: int | None, ref: int | None, path: list[str], name: str) -> Any:
    """``getattr`` in the candidate, answered with what it really has there.

    A plain value comes back as the value itself (so comparisons and predicates on it run in the
    judge); a function, class or other object as a handle; a missing name as AttributeError.
    """
    if ref is not None and gen != cand.generation:
        cand.fault = {
            "type": "StaleObject",
            "message": "object from a candidate process that was restarted",
        }
        raise CandidateError("dead", cand.fault)
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
    return _remote(cand, gen, ref, [*path, name], meta)


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
        if ref is not None and gen != cand.generation:
            cand.fault = {
                "type": "StaleObject",
                "message": "object from a candidate process that was restarted",
            }
            raise CandidateError("dead", cand.fault)
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


class Judge:
    """Runs one job and writes nonce-signed result lines to a private fd."""

    def __init__(self, job: dict[str, Any], out_fd: int, cand: Candidate) -> None:
        self.job = job
        self.nonce = str(job["nonce"])
        self.out_fd = out_fd
        self.cand = cand
        self.t0 = time.monotonic()
        self.deadline = self.t0 + float(job.get("total_timeout_s", 30))
        self.test_timeout = float(job.get("test_timeout_s", 10))
        self.text_cap = int(job.get("text_cap", 2000))
        self.build_s: float | None = None
        """Seconds from the judge's start to a built program (compiled languages)."""

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        line = (
            f"{self.nonce} {kind} {json.dumps(payload, separators=(',', ':'), allow_nan=False)}\n"
        )
        data = line.encode()
        while data:
            n = os.write(self.out_fd, data)
            data = data[n:]

    def start_test(self) -> bool:
        now = time.monotonic()
        if now >= self.deadline:
            return False
        self.cand.deadline = min(self.deadline, now + self.test_timeout)
        self.cand.last_call = None
        self.cand.fault = None
        return True

    def fault_record(self, name: str, **fields: Any) -> dict[str, Any] | None:
        """The failed record of a test during which the candidate died, hung or did not load.

        However the test handled the exception it saw (``pytest.raises(Exception)``, a bare
        ``except``), the candidate's death is its failure, never the test's pass.
        """
        info = self.cand.fault
        if info is None:
            return None
        status = "timeout" if info.get("type") == "Timeout" else "error"
        return self.outcome(
            name,
            status,
            exc_type=info.get("type"),
            message=str(info.get("message", ""))[: self.text_cap],
            tb=str(info.get("tb", ""))[-self.text_cap :],
            **fields,
        )

    def outcome(self, name: str, status: str, **fields: Any) -> dict[str, Any]:
        out, err = self.cand.output()
        rec: dict[str, Any] = {"name": name, "status": status, **fields}
        last = self.cand.last_call
        if status != "passed" and last is not None and "index" not in fields:
            target, args, reply = last
            rec["last_call"] = {
                "target": target,
                "args": _short_json(args),
                "result": _short_json(reply.get("value")) if "value" in reply else None,
            }
        if out:
            rec["stdout"] = out[-self.text_cap :]
        if err:
            rec["stderr"] = err[-self.text_cap :]
        return rec

    def failure(self, name: str, exc: Exception, **fields: Any) -> dict[str, Any]:
        info = getattr(exc, "candidate_info", None)
        if isinstance(exc, CandidateError):
            info = exc.info
            status = "timeout" if isinstance(exc, CandidateTimeout) else "error"
            if exc.kind == "load":
                status = "error"
            return self.outcome(
                name,
                status,
                exc_type=info.get("type"),
                message=str(info.get("message", ""))[: self.text_cap],
                tb=str(info.get("tb", ""))[-self.text_cap :],
                **fields,
            )
        if info is not None:
            return self.outcome(
                name,
                "error",
                exc_type=info.get("type"),
                message=str(info.get("message", ""))[: self.text_cap],
                tb=str(info.get("tb", ""))[-self.text_cap :],
                **fields,
            )
        import traceback

        # Drop the judge's own frames: the model should see the test's lines only.
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.endswith(".judge/harness.py") and f.filename != self.cand.harness
        ]
        tail = "".join(
            traceback.format_list(frames[-4:]) + traceback.format_exception_only(type(exc), exc)
        )
        tail = tail[-self.text_cap :]
        status = "failed" if isinstance(exc, AssertionError) else "error"
        return self.outcome(
            name,
            status,
            exc_type=type(exc).__name__,
            message=str(exc)[: self.text_cap],
            tb=tail,
            **fields,
        )

    # -- kinds ---------------------------------------------------------------------------------

    def run_assert(self) -> None:
        tests = self.job["tests"]
        ns: dict[str, Any] = {"__name__": "__tests__"}
        import linecache

        for fname, src in (("<prelude>", tests.get("prelude") or ""), ("<tests>", tests["code"])):
            lines = src.splitlines(keepends=True)
            linecache.cache[fname] = (len(src), None, lines, fname)
        try:
            if tests.get("prelude"):
                exec(compile(tests["prelude"], "<prelude>", "exec"), ns)  # noqa: S102 - trusted spec code, in the sandbox
            exec(compile(tests["code"], "<tests>", "exec"), ns)  # noqa: S102 - trusted spec code, in the sandbox
        except Exception as exc:
            self.emit(
                "D", {"spec_error": f"test code failed to load: {type(exc).__name__}: {exc}"[:500]}
            )
            return
        entry = tests.get("entry_point")
        name = f"check({entry})" if entry else "tests"
        if not self.start_test():
            self.emit("T", self.outcome(name, "timeout", message="total time limit reached"))
        else:
            try:
                if entry:
                    self.cand.ensure()
                    if self.cand.load_error is not None:
                        raise CandidateError("load", self.cand.load_error)
                    check = ns.get("check")
                    if not callable(check):
                        self.emit(
                            "D", {"spec_error": "test code defines no check(candidate) function"}
                        )
                        return
                    candidate = RemoteCallable(self.cand, None, None, [entry])
                    # HumanEval semantics: the entry point's name in the test code means the
                    # candidate's function, not the prelude's stub.
                    ns[entry] = candidate
                    check(candidate)
                else:
                    # No entry point: the test code itself drives the candidate through ``solution``.
                    # A pass needs positive evidence: check(solution) ran to the end.
                    if not callable(ns.get("check")):
                        self.emit(
                            "D", {"spec_error": "test code defines no check(solution) function"}
                        )
                        return
                    ns.setdefault("solution", _RemoteModule(self.cand, "solution"))
                    ns["check"](ns["solution"])
                self.emit("T", self.fault_record(name) or self.outcome(name, "passed"))
            except Exception as exc:
                self.emit("T", self.failure(name, exc))
        self.emit("D", {})

    def run_call(self) -> None:
        tests = self.job["tests"]
        entry = str(tests["entry_point"])
        for i, case in enumerate(tests["cases"]):
            name = case.get("name") or f"case {i}"
            if not self.start_test():
                self.emit(
                    "T", self.outcome(name, "timeout", index=i, message="total time limit reached")
                )
                continue
            try:
                value = self.cand.remote(
                    "call",
                    None,
                    entry.split("."),
                    args=case.get("args", []),
                    kwargs=case.get("kwargs", {"$": "dict", "v": []}),
                )
                rec = self.outcome(name, "returned", index=i)
                rec["value"] = (
                    self.cand.encode_arg(value) if not isinstance(value, Remote) else None
                )
                if isinstance(value, Remote):
                    rec["opaque"] = repr(value)[:200]
                self.emit("T", rec)
            except CandidateError as exc:
                rec = self.failure(name, exc, index=i)
                if exc.kind == "raised":
                    rec["status"] = "raised"
                self.emit("T", rec)
        self.emit("D", {})

    # -- compiled and scripted languages (a ``program`` in the job, see ``_languages``) ------

    def _program_env(self) -> dict[str, str]:
        """A program's environment: the runtime's job environment (PATH, toolchain caches)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIERS_")}
        env.setdefault("PATH", "/usr/bin:/bin")
        env["LANG"] = "C.UTF-8"
        return env

    def _limit_fn(self, mem: int | None) -> Callable[[], None]:
        hands_off = _hands_off_installer()

        def limit() -> None:
            import resource

            if mem:
                resource.setrlimit(resource.RLIMIT_AS, (int(mem), int(mem)))
            hands_off()  # the program cannot act on the judge (see _hands_off_filter)

        return limit

    def build(self) -> bool:
        """Compile the program (each step a child with the job's limits and time budget).

        Returns False after writing the ``D`` line: ``infra_error`` when a toolchain is missing
        (decided before any candidate code runs), ``compile`` with the compiler's output when
        the candidate's code did not build or its compile ran past the time budget (the
        model's failure: an infinite template or constexpr loop is a timeout, never an abstain).
        """
        import shutil
        import subprocess

        prog = self.job["program"]
        missing = [t for t in prog.get("tools", []) if shutil.which(str(t)) is None]
        if missing:
            self.emit("D", {"infra_error": f"toolchain not installed in the runtime: {missing}"})
            return False
        os.makedirs(str(prog.get("build_dir", "build")), exist_ok=True)
        mem = None if prog.get("vm") else prog.get("compile_memory_bytes")
        build_deadline = time.monotonic() + float(prog.get("compile_timeout_s", 60))
        for step in prog.get("compile", []):
            t = time.monotonic()
            deadline = build_deadline
            if deadline <= t:
                self.emit("D", {"compile": {"status": "timeout", "output": ""}})
                return False
            try:
                proc = subprocess.Popen(
                    [str(a) for a in step],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=self._program_env(),
                    preexec_fn=self._limit_fn(mem),
                )
            except OSError as exc:
                self.emit("D", {"infra_error": f"cannot start {step[0]}: {exc}"})
                return False
            assert proc.stdout is not None
            sink = _Sink(os.dup(proc.stdout.fileno()), 64 << 10)
            proc.stdout.close()
            timed_out = _communicate(os.open(os.devnull, os.O_WRONLY), b"", [sink], deadline)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            sink.pump()
            sink.close()
            text = bytes(sink.buf).decode("utf-8", "replace")
            if timed_out or proc.returncode != 0:
                self.emit(
                    "D",
                    {
                        "compile": {
                            "status": "timeout" if timed_out else "failed",
                            "returncode": proc.returncode,
                            "output": text[: self.text_cap * 2],
                            "duration_s": round(time.monotonic() - t, 3),
                        }
                    },
                )
                return False
        self.build_s = round(time.monotonic() - self.t0, 4)
        # The tests' own time (timeout_s) starts once the program is built.
        self.deadline = time.monotonic() + float(self.job.get("total_timeout_s", 30))
        return True

    def run_program_call(self) -> None:
        """Run the generated call harness (``_callgen``) and turn its lines into records.

        The candidate shares the harness's process, so any line may be its own: only one
        record per case is taken, for the case being waited on, in order; a record for any
        other case fails the current one. A crash, exit or hang fails the current case and the
        harness is restarted at the next one. Values are checked on the host.
        """
        import subprocess

        prog = self.job["program"]
        cases = self.job["tests"]["cases"]
        n = len(cases)
        mark = str(prog.get("mark", "\x1e@")).encode()
        mem = None if prog.get("vm") else self.cand.limits.get("memory_bytes")
        cap = self.cand.output_cap
        i = 0
        while i < n:
            if not self.start_test():
                for k in range(i, n):
                    self.emit(
                        "T",
                        {"index": k, "status": "timeout", "message": "total time limit reached"},
                    )
                break
            proc = subprocess.Popen(
                [*[str(a) for a in prog["run"]], str(i)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=self._program_env(),
                preexec_fn=self._limit_fn(mem),
            )
            assert proc.stdout is not None and proc.stderr is not None
            out_fd = os.dup(proc.stdout.fileno())
            err = _Sink(os.dup(proc.stderr.fileno()), cap)
            proc.stdout.close()
            proc.stderr.close()
            os.set_blocking(out_fd, False)
            buf = bytearray()
            seen = 0
            chatter = bytearray()
            case_deadline = min(self.deadline, time.monotonic() + self.test_timeout)
            ended: dict[str, Any] | None = None
            eof = False
            while ended is None and not eof:
                left = case_deadline - time.monotonic()
                if left <= 0:
                    ended = {
                        "status": "timeout",
                        "message": f"no result within {self.test_timeout:g}s",
                    }
                    break
                live = [out_fd] + ([err.fd] if err.fd >= 0 else [])
                rd, _, _ = select.select(live, [], [], left)
                if err.fd in rd:
                    err.pump()
                if out_fd not in rd:
                    continue
                try:
                    chunk = os.read(out_fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    eof = True
                seen += len(chunk)
                buf += chunk
                if seen > cap + (n + 1) * 4096:
                    ended = {"status": "error", "message": "output too long (truncated)"}
                    break
                while ended is None and b"\n" in buf:
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf = bytearray(rest)
                    if not line.startswith(mark):
                        chatter += line[:cap] + b"\n"
                        del chatter[: max(0, len(chatter) - self.text_cap)]
                        continue
                    rec = self._call_record(line[len(mark) :], i)
                    if chatter:
                        rec["stdout"] = chatter.decode("utf-8", "replace")
                        chatter = bytearray()
                    self.emit("T", rec)
                    i += 1
                    if rec.get("forged"):
                        ended = {}
                        break
                    if i >= n:
                        ended = {}
                        break
                    if not self.start_test():
                        ended = {}
                        break
                    case_deadline = min(self.deadline, time.monotonic() + self.test_timeout)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            os.close(out_fd)
            err.pump()
            err.close()
            if ended == {}:
                continue
            if ended is None:
                rc = proc.returncode
                why = (
                    f"killed by signal {-rc}"
                    if rc is not None and rc < 0
                    else f"exited with status {rc}"
                )
                ended = {"status": "error", "message": f"the program {why} during this call"}
            rec = {"index": i, **ended}
            stderr = bytes(err.buf).decode("utf-8", "replace")
            if stderr:
                rec["stderr"] = stderr[-self.text_cap :]
            if chatter:
                rec["stdout"] = chatter.decode("utf-8", "replace")
            self.emit("T", rec)
            i += 1
        self.emit("D", {"build_s": self.build_s})

    def _call_record(self, body: bytes, i: int) -> dict[str, Any]:
        kind, _, rest = body.partition(b" ")
        index, _, payload = rest.partition(b" ")
        if kind not in (b"R", b"X") or index != str(i).encode():
            return {
                "index": i,
                "status": "error",
                "forged": True,
                "message": "the program wrote a harness record out of turn (only the harness "
                "may write lines starting with \\x1e@)",
            }
        try:
            value = json.loads(payload.decode("utf-8", "strict"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return {"index": i, "status": "error", "message": "unreadable return value"}
        if kind == b"X":
            # C++, Java, JS/TS send {"type", "message"} (the type is matched against a case's
            # ``raises``; "" for the harness's own errors); Go and Rust panics a message only.
            exc_type, message = "exception", value
            if isinstance(value, dict):
                exc_type = str(value.get("type", ""))[:200]
                message = value.get("message", "")
            return {
                "index": i,
                "status": "raised",
                "exc_type": exc_type,
                "message": str(message)[: self.text_cap],
            }
        try:
            return {"index": i, "status": "returned", "value": encode(value)}
        except (CodecError, RecursionError, ValueError):
            return {"index": i, "status": "error", "message": "return value too large or deep"}

    def run_io(self) -> None:
        import subprocess

        tests = self.job["tests"]
        code_path = self.cand.code_path
        prog = self.job.get("program")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": os.getcwd(),
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        argv = [sys.executable, code_path]
        mem = self.cand.limits.get("memory_bytes")
        if prog is not None:
            argv = [str(a) for a in prog["run"]]
            env = self._program_env()
            if prog.get("vm"):
                mem = None
        limit = self._limit_fn(mem)

        cap = self.cand.output_cap
        for i, case in enumerate(tests["cases"]):
            name = case.get("name") or f"case {i}"
            if not self.start_test():
                self.emit(
                    "T",
                    {
                        "name": name,
                        "index": i,
                        "status": "timeout",
                        "message": "total time limit reached",
                    },
                )
                continue
            timeout = max(0.01, (self.cand.deadline or self.deadline) - time.monotonic())
            t = time.monotonic()
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=env,
                preexec_fn=limit,
            )
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            outs = [
                _Sink(os.dup(proc.stdout.fileno()), cap),
                _Sink(os.dup(proc.stderr.fileno()), cap),
            ]
            proc.stdout.close()
            proc.stderr.close()
            feed_fd = os.dup(proc.stdin.fileno())
            proc.stdin.close()
            timed_out = _communicate(feed_fd, case.get("stdin", "").encode(), outs, t + timeout)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            for sink in outs:
                sink.pump()
                sink.close()
            rec: dict[str, Any] = {
                "name": name,
                "index": i,
                "status": "timeout" if timed_out else "ran",
                "returncode": proc.returncode,
                "stdout": bytes(outs[0].buf).decode("utf-8", "replace"),
                "stdout_truncated": outs[0].dropped > 0,
                "stderr": bytes(outs[1].buf).decode("utf-8", "replace")[-self.text_cap :],
                "duration_s": round(time.monotonic() - t, 4),
            }
            self.emit("T", rec)
        self.emit("D", {} if self.build_s is None else {"build_s": self.build_s})

    def run_pytest(self) -> None:
        """Run the pytest files; the candidate never sees or shapes them.

        The test files never exist on disk: pytest is given empty placeholders to discover, and
        every module (test files and helper files alike) is compiled from the judge's memory
        (with pytest's assertion rewriting) by ``_TestSources``, which also answers imports of
        helper files. So a candidate that runs during collection (``EMPTY = Stack()`` at module
        level) finds nothing to read, nothing to rewrite, and no directory of the judge's import
        path to plant a module in. ``from solution import *`` is compiled into a binding of the
        candidate's own public functions and classes that shadows no builtin and no name the
        test module already has. A module whose collection fails once the candidate was
        involved counts as (at least) its statically counted tests, failed.
        """
        import linecache
        import tempfile

        tests = self.job["tests"]
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        sys.dont_write_bytecode = True
        try:
            import pytest
        except Exception as exc:
            self.emit(
                "D", {"infra_error": f"pytest is not importable in the sandbox: {exc!r}"[:300]}
            )
            return
        module = str(tests.get("module", "solution"))
        remote_module = _RemoteModule(self.cand, module)
        sys.modules[module] = remote_module
        tdir = tempfile.mkdtemp(prefix=".t", dir=os.getcwd())
        sources = _TestSources(self, module, remote_module, _public_names(self.cand.code_path))
        paths = []
        for rel, text in sorted(tests["files"].items()):
            path = os.path.join(tdir, rel)
            try:
                tree = sources.add(rel, path, str(text))
            except SyntaxError as exc:
                self.emit(
                    "D",
                    {
                        "spec_error": f"test file {rel} failed to collect (it does not compile): {exc}"[
                            :500
                        ]
                    },
                )
                return
            lines = str(text).splitlines(keepends=True)
            linecache.cache[path] = (len(str(text)), None, lines, path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if rel.endswith(".py"):
                # An empty placeholder for pytest to discover; the source stays in memory.
                with open(path, "w", encoding="utf-8"):
                    pass
                paths.append(path)
            sources.static[path] = _static_test_count(tree)
        sys.meta_path.insert(0, sources)
        ini = os.path.join(tdir, "pytest.ini")
        with open(ini, "w") as fh:
            fh.write("[pytest]\n")
        judge = self

        class MemoryModule(pytest.Module):  # type: ignore[misc]
            def _getobj(self) -> Any:
                return sources.load_test_module(str(self.path), self.config)

        class Plugin:
            def __init__(self) -> None:
                self.collected: list[str] = []
                self.collect_errors: list[str] = []
                self.results: dict[str, dict[str, Any]] = {}

            @pytest.hookimpl(tryfirst=True)
            def pytest_pycollect_makemodule(self, module_path: Any, parent: Any) -> Any:
                if str(module_path) in sources.by_path:
                    return MemoryModule.from_parent(parent, path=module_path)
                return None

            def pytest_collectreport(self, report: Any) -> None:
                if report.failed:
                    path = os.path.join(tdir, str(report.nodeid).split("::")[0])
                    text = f"{report.nodeid}: {str(report.longrepr)[-800:]}"
                    if path in sources.blamed:
                        sources.blamed[path] = text
                    else:
                        self.collect_errors.append(text)

            def pytest_collection_finish(self, session: Any) -> None:
                self.collected = [item.nodeid for item in session.items]

            @pytest.hookimpl(tryfirst=True)
            def pytest_runtest_setup(self, item: Any) -> None:
                if not judge.start_test():
                    pytest.fail("total time limit reached", pytrace=False)

            def pytest_runtest_logreport(self, report: Any) -> None:
                rec = self.results.setdefault(
                    report.nodeid, {"name": report.nodeid, "status": "passed"}
                )
                if report.when == "call" and report.passed and rec["status"] == "passed":
                    rec["ran"] = True
                fault = judge.fault_record(report.nodeid)
                if fault is not None and rec["status"] == "passed":
                    # The candidate died, hung or never loaded during this test: failed,
                    # whatever the test caught (``pytest.raises(Exception)``).
                    fault["phase"] = report.when
                    rec.clear()
                    rec.update(fault)
                elif report.failed and rec["status"] == "passed":
                    rec["status"] = "failed"
                    rec["phase"] = report.when
                    text = str(report.longrepr)
                    rec["tb"] = text[-judge.text_cap :]
                    exc = getattr(report.longrepr, "reprcrash", None)
                    if exc is not None:
                        rec["message"] = str(exc.message)[: judge.text_cap]
                elif report.skipped and rec["status"] == "passed":
                    rec["status"] = "skipped"

        plugin = Plugin()
        args = [
            *paths,
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",
            "--continue-on-collection-errors",
            "-c",
            ini,
            "--rootdir",
            tdir,
            "-o",
            "addopts=",
            "-o",
            "python_functions=test*",
            "--tb=short",
            "--capture=sys",
        ]
        # Collection needs a time limit too: module-level code may call the candidate.
        self.cand.deadline = min(self.deadline, time.monotonic() + self.test_timeout)
        try:
            code = pytest.main(args, plugins=[plugin])
        except Exception as exc:
            self.emit("D", {"infra_error": f"pytest crashed: {exc!r}"[:300]})
            return
        if plugin.collect_errors:
            self.emit(
                "D",
                {
                    "spec_error": "test files failed to collect: "
                    + " | ".join(plugin.collect_errors)[:1500],
                    "collected": plugin.collected,
                },
            )
            return
        out, err = self.cand.output()
        expected = list(plugin.collected)
        for path, why in sorted(sources.blamed.items()):
            # A module whose collection the candidate broke: each of its tests failed.
            rel = os.path.relpath(path, tdir)
            n = max(1, sources.static.get(path, 1))
            for k in range(n):
                name = f"{rel}::<not collected {k + 1}/{n}>"
                expected.append(name)
                self.emit(
                    "T",
                    {
                        "name": name,
                        "status": "error",
                        "message": "the test module failed to collect: " + why[-1500:],
                    },
                )
        for nodeid in plugin.collected:
            rec = plugin.results.get(nodeid, {"name": nodeid, "status": "missing"})
            if rec.get("status") == "passed" and not rec.pop("ran", False):
                rec["status"] = "missing"
            rec.pop("ran", None)
            o, e = self.cand.output()
            out, err = out + o, err + e
            if out:
                rec["stdout"] = out[-self.text_cap :]
            if err:
                rec["stderr"] = err[-self.text_cap :]
            out = err = ""
            self.emit("T", rec)
        self.emit(
            "D",
            {
                "collected": expected,
                "exit_code": int(code),
                "collect_errors": [v for v in sources.blamed.values() if v][:5],
            },
        )


class _StarBinder:
    """``from <module> import *`` in a test file, compiled into a call of this.

    Binds the candidate's own public functions and classes (the ``def``/``class`` names of its
    source, which the judge reads itself) that the candidate's module really has, and never a
    builtin's name or a name the test module already bound (``abs``, ``math``, an earlier
    import): a candidate cannot swap ``abs`` or ``math.isclose`` under the test's feet.
    """

    def __init__(self, module: Any, names: list[str], cand: Candidate) -> None:
        self.module = module
        self.names = names
        self.cand = cand

    def __call__(self, ns: dict[str, Any]) -> None:
        import builtins

        self.cand.touches += 1
        for name in self.names:
            if name in ns or hasattr(builtins, name):
                continue
            try:
                ns[name] = getattr(self.module, name)
            except AttributeError:
                continue


def _public_names(path: str) -> list[str]:
    """Top-level ``def``/``class`` names of the candidate's source not starting with ``_``.

    Read and parsed by the judge, never asked of the candidate. A source the parser rejects
    (or that is too deep for it) has no names: importing it will fail anyway.
    """
    import ast

    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(4 << 20))
    except Exception:
        return []
    names: list[str] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not node.name.startswith("_") and node.name not in names:
                names.append(node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                todo.extend(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return names


def _static_test_count(tree: Any) -> int:
    """Tests a pytest file defines, counted from its syntax (a lower bound: literal
    ``parametrize`` lists multiply, anything dynamic counts once)."""
    import ast

    def weight(fn: Any) -> int:
        n = 1
        for dec in fn.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and isinstance(dec.func, ast.Attribute)
                and dec.func.attr == "parametrize"
                and len(dec.args) >= 2
                and isinstance(dec.args[1], (ast.List, ast.Tuple))
            ):
                n *= max(1, len(dec.args[1].elts))
        return n

    total = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            total += weight(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            total += sum(
                weight(m)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                and m.name.startswith("test")
            )
    return total


class _TestSources:
    """Imports the task's test and helper files from the judge's memory (a meta-path finder).

    Nothing is read from disk, so nothing the candidate writes can change or add to the code
    the judge runs; test files get pytest's assertion rewriting, and ``from <module> import *``
    becomes a :class:`_StarBinder` call.
    """

    def __init__(self, judge: Judge, module: str, remote: Any, names: list[str]) -> None:
        self.judge = judge
        self.module = module
        self.binder = _StarBinder(remote, names, judge.cand)
        self.by_name: dict[str, str] = {}
        self.by_path: dict[str, tuple[str, Any]] = {}
        self.static: dict[str, int] = {}
        self.blamed: dict[str, str] = {}

    def add(self, rel: str, path: str, text: str) -> Any:
        import ast

        tree = ast.parse(text, path)
        if rel.endswith(".py"):
            name = os.path.basename(rel)[:-3]
            self.by_name.setdefault(name, path)
            dotted = rel[:-3].replace("/", ".").replace(os.sep, ".")
            self.by_name.setdefault(dotted, path)
            self.by_path[path] = (text, tree)
        return tree

    # importlib's finder/loader protocol
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        import importlib.util

        file = self.by_name.get(name)
        if file is None or name == self.module:
            return None
        return importlib.util.spec_from_loader(name, self, origin=file)  # type: ignore[arg-type]

    def create_module(self, spec: Any) -> Any:
        return None

    def exec_module(self, mod: Any) -> None:
        file = self.by_name[mod.__name__]
        self._exec(mod, file, None)

    def _exec(self, mod: Any, file: str, config: Any) -> None:
        import ast
        import copy

        text, tree = self.by_path[file]
        tree = _StarRewriter(self.module).visit(copy.deepcopy(tree))
        ast.fix_missing_locations(tree)
        base = os.path.basename(file)
        if config is not None or base.startswith("test_") or base.endswith("_test.py"):
            try:
                from _pytest.assertion.rewrite import rewrite_asserts

                rewrite_asserts(tree, text.encode("utf-8"), file, config)
            except Exception:
                pass
        code = compile(tree, file, "exec", dont_inherit=True)
        mod.__file__ = file
        mod.__dict__["__verifiers_star__"] = self.binder
        exec(code, mod.__dict__)  # noqa: S102 - the task's trusted test code, in the sandbox

    def load_test_module(self, file: str, config: Any) -> Any:
        """The module pytest collects for ``file`` (replaces its import from disk)."""
        rel = os.path.basename(file)[:-3]
        name = next((n for n, f in self.by_name.items() if f == file and "." in n), rel)
        if self.by_name.get(rel) == file:
            name = rel
        mod = types.ModuleType(name)
        sys.modules[name] = mod
        before = self.judge.cand.touches
        try:
            self._exec(mod, file, config)
        except Exception as exc:
            if self.judge.cand.touches != before or isinstance(exc, CandidateError):
                self.blamed[file] = ""
            raise
        config.pluginmanager.consider_module(mod)
        return mod


class _StarRewriter:
    """Replaces ``from <module> import *`` (module level) with ``__verifiers_star__(globals())``."""

    def __init__(self, module: str) -> None:
        self.module = module

    def visit(self, tree: Any) -> Any:
        import ast

        def rewrite(body: list[Any]) -> list[Any]:
            out = []
            for node in body:
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.level == 0
                    and node.module == self.module
                    and any(a.name == "*" for a in node.names)
                ):
                    call = ast.Call(
                        func=ast.Name(id="__verifiers_star__", ctx=ast.Load()),
                        args=[
                            ast.Call(
                                func=ast.Name(id="globals", ctx=ast.Load()), args=[], keywords=[]
                            )
                        ],
                        keywords=[],
                    )
                    out.append(ast.copy_location(ast.Expr(value=call), node))
                    continue
                for block in ("body", "orelse", "finalbody"):
                    if isinstance(node, (ast.If, ast.Try, ast.With)) and hasattr(node, block):
                        setattr(node, block, rewrite(getattr(node, block)))
                for handler in getattr(node, "handlers", []) if isinstance(node, ast.Try) else []:
                    handler.body = rewrite(handler.body)
                out.append(node)
            return out

        tree.body = rewrite(tree.body)
        return tree


def _short_json(value: Any, limit: int = 300) -> str:
    """A readable, bounded rendering of an encoded value for feedback."""
    try:
        text = repr(decode(value, lambda d: _Shown(str(d.get("repr", "<object>")))))
    except CodecError:
        text = "<undecodable>"
    except (ValueError, RecursionError):  # repr() of an int past the string limit
        text = "<value too large to display>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Shown:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _communicate(feed_fd: int, data: bytes, sinks: list[_Sink], deadline: float) -> bool:
    """Write ``data`` to a child's stdin and drain its output until both pipes close.

    Returns True when ``deadline`` passed first.
    """
    os.set_blocking(feed_fd, False)
    view = memoryview(data)
    if not view:
        os.close(feed_fd)
        feed_fd = -1
    while feed_fd >= 0 or any(k.fd >= 0 for k in sinks):
        left = deadline - time.monotonic()
        if left <= 0:
            if feed_fd >= 0:
                os.close(feed_fd)
            return True
        live = [k.fd for k in sinks if k.fd >= 0]
        rd, wr, _ = select.select(live, [feed_fd] if feed_fd >= 0 else [], [], left)
        for k in sinks:
            if k.fd in rd:
                k.pump()
        if feed_fd >= 0 and feed_fd in wr:
            try:
                view = view[os.write(feed_fd, view[:65536]) :]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                view = view[:0]
            if not view:
                os.close(feed_fd)
                feed_fd = -1
    return False


def _no_dump() -> bool:
    """PR_SET_DUMPABLE=0: same-uid processes lose access to our memory, fds and environ."""
    try:
        # Already non-dumpable (a runner that dropped privileges leaves its jobs so): the
        # kernel then hands /proc/self to root. Saves importing ctypes on the hot path.
        if os.getuid() != 0 and os.stat("/proc/self/environ").st_uid == 0:
            return True
    except OSError:
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(4, 0, 0, 0, 0) == 0)
    except Exception:
        return False


def _writable(path: str) -> bool:
    """Whether this uid (the candidate's too) could add a module to ``path``.

    Root could write anywhere, so the test says nothing there (the sandboxes never run jobs
    as root; the bare test sandbox does).
    """
    try:
        if os.geteuid() == 0:
            return False
        return os.access(path, os.W_OK)
    except (OSError, ValueError):
        return False


def _judge_main(harness: str) -> int:
    dumpable_off = _no_dump()
    # As a fresh interpreter would have it (a runner's zygote may hand us SIG_DFL): a
    # candidate that closes its pipe must give EPIPE here, not kill the judge.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # Only the standard library and installed packages may be imported from here on: never
    # the script's directory or the work directory, where the candidate can write files.
    here = os.path.dirname(harness)
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here, cwd)]
    # Anything else on the import path must be out of the job's reach: a module the candidate
    # planted there would run inside the judge the next time it imports lazily (and in every
    # later job). Dropping such entries would break the judge's own imports and score honest
    # code 0, so a sandbox like that is refused as infrastructure instead.
    open_dirs = [p for p in sys.path if _writable(p)]
    # Results go to a private duplicate of stdout; fds 1 and 2 then point to /dev/null so that
    # nothing else (pytest's own output, test prints) can interleave with or crowd them out.
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    cand = Candidate(harness, "", "solution", {}, 64 << 10)
    kind_hint = os.environ.get("VERIFIERS_JUDGE_PREFORK", "1")
    if kind_hint == "1":
        try:
            cand.prefork()
        except OSError:
            cand.pid = None
    # Only now read the job: the forked candidate never had it in memory.
    job = json.loads(sys.stdin.buffer.read())
    # Keep fds 0-2 occupied so later pipes never land on them (a child's stdio would
    # replace them).
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    cand.code_path = os.path.abspath(str(job["code_path"]))
    cand.module = str(job.get("module", "solution"))
    cand.limits = dict(job.get("limits", {}))
    cand.output_cap = int(job.get("output_cap", 64 << 10))
    judge = Judge(job, out_fd, cand)
    cand.load_timeout = judge.test_timeout
    cand.total_deadline = judge.deadline
    judge.emit("R", {"dumpable_off": dumpable_off, "python": sys.version.split()[0]})
    if open_dirs:
        cand.kill()
        judge.emit(
            "D",
            {
                "infra_error": "the sandbox lets jobs write to the judge's import path "
                f"({', '.join(open_dirs)[:300]}): mount the runtime read-only"
            },
        )
        return 0
    kind = job["tests"]["kind"]
    try:
        if job.get("program") is not None:
            cand.kill()
            # The host runs a compiled language in two execs of one session (see
            # ``_verifier``): "build" compiles and stops; "run" runs the tests on the build.
            phase = job.get("phase")
            if phase == "build":
                if judge.build():
                    judge.emit("D", {"built": True, "build_s": judge.build_s})
            elif phase == "run" or judge.build():
                if kind == "io":
                    judge.run_io()
                elif kind == "call":
                    judge.run_program_call()
                else:
                    judge.emit("D", {"spec_error": f"test kind {kind!r} needs Python"})
        elif kind == "io":
            cand.kill()
            judge.run_io()
        else:
            if kind == "call":
                cand.ensure()
            # assert: the test code is compiled and run first (run_assert), then the model's
            # code is loaded, so nothing the model's module body does can make the task's own
            # code fail and read as a broken task.
            # pytest: the code is loaded on first use, after collection took the test files
            # off the disk; the preforked process waits for it.
            if kind == "assert":
                judge.run_assert()
            elif kind == "call":
                judge.run_call()
            elif kind == "pytest":
                judge.run_pytest()
            else:
                judge.emit("D", {"spec_error": f"unknown test kind {kind!r}"})
    finally:
        cand.kill()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "candidate":
        _candidate_main(int(argv[2]), int(argv[3]))
        return 0
    return _judge_main(os.path.abspath(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
