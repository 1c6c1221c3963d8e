"""The sandbox runner: a stdlib-only job server that runs *inside* the isolation boundary.

One runner lives in each warm container (and in each local bubblewrap/unshare sandbox). It
talks to the host over its stdin/stdout with length-prefixed JSON frames and forks one child per
job, so a job costs a ``fork`` + ``exec`` instead of a ``docker run`` (~385 ms) or a
``docker exec`` (~100 ms).

Why each step exists:

* The protocol file descriptors are moved away from 0/1 and made close-on-exec, so a job can
  never write forged frames to the host.
* The runner makes itself non-dumpable, so a job running as the same uid cannot ptrace it or
  open ``/proc/<runner>/fd``.
* Every job runs in its own session and process group (``setsid``), with rlimits, ``oom_score_adj``
  1000, and, when the runner is root, under an unprivileged uid without capabilities. After the
  job's main process exits (or at the deadline) the runner kills the group and then every
  remaining process of the job uid it can see (escaped daemons, fork bombs).
* Work directories are owned by root with the sticky bit: the job can add files but cannot
  delete or rename files written ``readonly`` by the verifier. Paths from the host are checked
  component by component without following symlinks, so a job cannot redirect a later
  ``write``/``read`` of the (root) runner outside its work directory.

This file must stay importable and runnable by a bare ``/usr/bin/python3`` (3.9+) with no
third-party package. The host starts it as ``python3 -I /run/verifiers/runner.py`` (a
read-only bind of this file, or a host-owned copy the job uid cannot write) and sends its
config (limits, job uid, the runtime's preload source) as the *first frame* on the protocol
channel: ``ps`` and ``/proc/<pid>/cmdline`` show a short command, never this source or the
config, and a job can never change the source a later runner starts from. Where no file can
reach the runner (a remote Docker engine), the host runs :data:`BOOTSTRAP` with ``-c``, which
reads this source as one frame from stdin.

Frames: 4-byte big-endian length, then a body: an ASCII JSON object and, when the message
holds bytes, a newline and the bytes (see :func:`encode_frame`): file contents, stdin, stdout
and stderr travel as they are, never as base64 inside the JSON.
Requests carry ``op`` (``begin``, ``exec``, ``write``, ``read``, ``end``, ``ping``, ``batch``);
replies carry ``ok`` and either the op's fields or ``error`` + ``kind``. ``batch`` runs a list of
requests in order in one frame and stops at the first that fails (``replies``: one per request
run), so a session costs one round trip: ``[begin, write, exec]``, or ``[begin, write, exec,
read...]`` with the files the host will read after the job (``optional`` reads: a missing file
is that read's reply, not the end of the batch).

Read-only files the host marks with a content hash (``{"data": ..., "keep": sha256}``) are kept
in this process's memory; later sessions name them by hash (``{"sha": sha256}``) instead of
sending them again (a constant judge, a fixed test suite). Each is still written as a fresh,
read-only, root-owned file in the job's own work dir.

An ``exec`` may carry a ``preload`` (trusted Python source from the host, encoded like a kept
file): the zygote forks a *warm zygote* that runs it once, and every fast-path job naming it is
forked from there (``Runner.warm_zygote``): a domain's constant harness (code.tests' judge
modules) is loaded once per runner instead of once per job. A warm zygote never runs or reads
a job either, so every job still starts from a process that held no job data.

After an ``end`` that could not kill every process of the job or remove its work dir, the
runner refuses every further session (``kind: "tainted"``): the host recycles it.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import gc
import hashlib
import json
import os
import resource
import select
import selectors
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

PROTOCOL_VERSION = 2
HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 30
_READ_CHUNK = 1 << 16


# -- framing (also imported by the host side) ------------------------------------------------


_BLOB = "\x00bytes"
"""The key of the JSON object that stands for a bytes value: ``{"\\u0000bytes": [start,
length]}`` in the frame's trailing bytes. No key the protocol uses otherwise holds a NUL (file
names cannot), so the object is never a message's own."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """One frame: length prefix + compact ASCII JSON, then ``\\n`` + the message's bytes.

    Bytes values anywhere in ``message`` travel raw after the JSON, each replaced there by a
    :data:`_BLOB` reference: base64 in JSON cost the sender and the receiver ~6 ns a byte
    each way (a render scene's ~100 KB .blend crosses two hops: ~1.2 ms a scene). ASCII JSON
    (``ensure_ascii``) never holds a raw newline, so the first one ends it.
    """
    blobs: list[bytes] = []
    size = 0

    def as_blob(value: Any) -> Any:
        nonlocal size
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"{type(value).__name__} is not JSON serializable")
        data = bytes(value)
        blobs.append(data)
        size += len(data)
        return {_BLOB: [size - len(data), len(data)]}

    body = json.dumps(message, separators=(",", ":"), default=as_blob).encode("ascii")
    if not blobs:
        return HEADER.pack(len(body)) + body
    return b"".join([HEADER.pack(len(body) + 1 + size), body, b"\n", *blobs])


def decode_body(body: bytes) -> dict[str, Any]:
    """Parse a frame body (see :func:`encode_frame`); a non-object, or a bytes reference
    outside the frame, is a protocol error (``ValueError``)."""
    end = body.find(b"\n")
    text, tail = (body, b"") if end < 0 else (body[:end], memoryview(body)[end + 1 :])

    def from_blob(obj: dict[str, Any]) -> Any:
        if _BLOB not in obj:
            return obj
        where = obj[_BLOB]
        if (
            len(obj) != 1
            or not isinstance(where, list)
            or len(where) != 2
            or not all(type(x) is int and x >= 0 for x in where)
            or where[0] + where[1] > len(tail)
        ):
            raise ValueError("frame has a bad bytes reference")
        return bytes(tail[where[0] : where[0] + where[1]])

    message = json.loads(text.decode("ascii"), object_hook=from_blob)
    if not isinstance(message, dict):
        raise ValueError("frame is not a JSON object")
    return message


def blob(value: Any, what: str = "value") -> bytes:
    """``value`` as the bytes a frame carried; ``ValueError`` when it is anything else."""
    if not isinstance(value, bytes):
        raise ValueError(f"{what} must be bytes, not {type(value).__name__}")
    return value


# -- runner ----------------------------------------------------------------------------------


class RequestError(Exception):
    """A request the runner refuses; ``kind`` tells the host which exception to raise."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _request_bytes(value: Any, what: str) -> bytes:
    """:func:`blob` for a request's field: anything else is the host's bad request."""
    try:
        return blob(value, what)
    except ValueError as exc:
        raise RequestError("bad_request", str(exc)) from None


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        try:
            chunk = os.read(fd, min(remaining, 1 << 20))
        except InterruptedError:
            continue
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    short_of_memory = 0
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as exc:
            # A job at its memory cgroup's limit can make a kernel buffer allocation fail for
            # a moment (the OOM killer is still freeing it); the reply must still get out.
            if exc.errno not in (errno.ENOMEM, errno.ENOBUFS) or short_of_memory >= 500:
                raise
            short_of_memory += 1
            time.sleep(0.01)
            continue
        view = view[written:]


_prctl: list[Any] = []


def _set_dumpable(flag: int) -> None:
    """``prctl(PR_SET_DUMPABLE, flag)``. The runner sets 0: no ptrace or ``/proc/<pid>/fd``
    access by a job of the same uid. A fast-path job sets 1 again, as ``exec`` would.
    (libc is looked up once, in the runner, so forked jobs only make the call.)"""
    try:
        if not _prctl:
            import ctypes

            _prctl.append(ctypes.CDLL(None, use_errno=True).prctl)
        _prctl[0](4, flag, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _oom_kills() -> int:
    """The memory cgroup's OOM-kill counter (v1 or v2), or -1 when none is visible."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == "oom_kill":
                        return int(parts[1])
        except (OSError, ValueError):
            continue
    return -1


_SHMEM_SLACK = 2 << 20
"""Shared memory a finished job may leave charged (page rounding, kernel bookkeeping)."""


def _memory_stat_path() -> str:
    """The memory cgroup's ``memory.stat`` visible to us (v2 or v1), or ``""``."""
    for path in ("/sys/fs/cgroup/memory.stat", "/sys/fs/cgroup/memory/memory.stat"):
        if os.path.exists(path):
            return path
    return ""


def _shmem_bytes(path: str) -> int:
    """Shared memory (tmpfs, shm) charged to the cgroup whose ``memory.stat`` is ``path``;
    hierarchical where v1 says so (``total_shmem``); -1 when unknown."""
    if not path:
        return -1
    try:
        with open(path) as handle:
            fields = dict(line.split()[:2] for line in handle if len(line.split()) >= 2)
    except OSError:
        return -1
    for name in ("total_shmem", "shmem"):
        if name in fields:
            try:
                return int(fields[name])
            except ValueError:
                return -1
    return -1


def _mqueue_mount(path: str) -> str:
    """``path`` when a POSIX message queue filesystem of our own IPC namespace is mounted
    there (so its queues can be listed and removed), else ``""``."""
    if not path:
        return ""
    try:
        with open("/proc/self/mounts") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 3 and parts[1] == path and parts[2] == "mqueue":
                    return path
    except OSError:
        pass
    return ""


# Syscalls no job needs whose state outlives the job: the kernel keyrings are per uid, not per
# namespace (a key added by one job is there for the next job of the same uid, on the local
# backend even across runners); POSIX message queues where no mqueue mount of our own lets us
# list and remove them. Numbers per audit arch: (arch, nr mask, keyring calls, mq_open).
_AUDIT_ARCHES = (
    (0xC000003E, 0xBFFFFFFF, (248, 249, 250), 240),  # x86_64 (the mask folds x32 in)
    (0x40000003, 0xFFFFFFFF, (286, 287, 288), 277),  # i386 (int 0x80 from a 64-bit job)
    (0xC00000B7, 0xFFFFFFFF, (217, 218, 219), 180),  # aarch64
)


def _seccomp_filter(*, block_mqueue: bool) -> bytes:
    """A classic-BPF seccomp program: the calls above fail with ``EPERM``, the rest run."""
    ld_abs, jeq, and_k, ret = 0x20, 0x15, 0x54, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM
    program: list[tuple[int, int, int, int]] = [(ld_abs, 0, 0, 4)]  # A = arch
    for arch, mask, keyring, mq_open in _AUDIT_ARCHES:
        calls = [*keyring, *([mq_open] if block_mqueue else [])]
        body: list[tuple[int, int, int, int]] = [(ld_abs, 0, 0, 0)]  # A = nr
        if mask != 0xFFFFFFFF:
            body.append((and_k, 0, 0, mask))
        for index, nr in enumerate(calls):
            body.append((jeq, len(calls) - index, 0, nr))  # to the deny after "ret allow"
        body.append((ret, 0, 0, allow))
        body.append((ret, 0, 0, deny))
        body.append((ld_abs, 0, 0, 4))  # A = arch again for the next test
        program.append((jeq, 0, len(body), arch))
        program.extend(body)
    program.append((ret, 0, 0, allow))
    return b"".join(struct.pack("=HBBI", *op) for op in program)


class _SeccompProgram:
    """A filter ready for ``prctl(PR_SET_SECCOMP)``, built once in the runner (jobs fork it)."""

    def __init__(self, program: bytes) -> None:
        import ctypes

        class _Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._fprog = _Fprog(len(program) // 8, ctypes.addressof(self._buffer))
        self.address = ctypes.c_void_p(ctypes.addressof(self._fprog))

    def install(self) -> bool:
        """``PR_SET_NO_NEW_PRIVS`` then the filter, in the job child before it drops to the
        job uid (no new privileges also keeps setuid programs of a host system view inert).
        False when the kernel refuses."""
        if not _prctl:
            _set_dumpable(0)  # loads libc's prctl (the runner set 0 already)
        if not _prctl:
            return False
        _prctl[0](38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        return int(_prctl[0](22, 2, self.address, 0, 0)) == 0  # SECCOMP_MODE_FILTER


def _probe_seccomp(program: _SeccompProgram) -> bool:
    """Whether a child can install the filter and is then refused ``keyctl``."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            import ctypes

            if program.install():
                libc = ctypes.CDLL(None, use_errno=True)
                arch_nr = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine, -1)
                if arch_nr > 0 and libc.syscall(arch_nr, 0, -4, 0) == -1:  # KEYCTL_GET_KEYRING_ID
                    code = 0 if ctypes.get_errno() == errno.EPERM else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _cg_write(path: str, name: str, value: str, *, optional: bool = False) -> bool:
    """Write a cgroup control file; an absent optional one is False, any other error raises."""
    try:
        with open(os.path.join(path, name), "w") as handle:
            handle.write(value)
        return True
    except (FileNotFoundError, PermissionError):
        if optional:
            return False
        raise


def _cg_counter(path: str, key: str) -> int:
    try:
        with open(path) as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def _cg_members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as handle:
            return [int(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return []


# -- starvation: why a job ran into its wall-clock backstop -----------------------------------
#
# A job's budget is CPU time (RLIMIT_CPU), which machine load does not move; the wall-clock
# deadline is a backstop for jobs that sleep or block. When the backstop fires, the runner asks
# whether the machine starved the job (the model's score must never depend on the load) or the
# job spent its time as it chose (sleeping, blocking, spinning: the model's ``fail``). Starved
# means ALL of:
#
# * the job got little CPU: less than STARVE_CPU_SHARE of one CPU over its wall time;
# * it wanted more: its live threads waited runnable (``schedstat`` run_delay) for at least
#   STARVE_DELAY_SHARE of the wall time, summed;
# * someone else had the CPUs: the busy time of the job's CPUs (``/proc/stat``) minus the job's
#   own CPU is at least STARVE_OTHERS_SHARE of their capacity. A job's own threads compete
#   with each other (64 spinning threads, a fork bomb, bursts of threads that wake together):
#   that raises run_delay but also its CPU, and never the others' share, so it is not starved;
# * it has not used its CPU budget (``cpu_s``, else its timeout): that is the model's timeout;
# * no live thread of the job lowered its own priority (nice above the runner's, SCHED_BATCH,
#   SCHED_IDLE) nor its session's (``/proc/<pid>/autogroup`` nice): a job that made itself
#   lose to everything else chose its own wait.
#
# The job's CPU must count every task it ever had, the dead ones too: a job that keeps one
# runnable thread among short-lived spinners it replaces continually (double-forked orphans
# reaped by init, children auto-reaped through SIG_IGN or SA_NOCLDWAIT, exec'd shells) would
# otherwise see its own CPU leave its account and count as "others": an endless loop, a
# certain fail, made to look starved. So the job's CPU is its cgroup's CPU account (v1
# ``cpuacct.usage``, v2 ``cpu.stat`` ``usage_usec``: the CPU of every task that ever ran in
# it, the job's own cgroup on the local backend, the container's on Docker, an upper bound of
# the job's when one job runs at a time), never less than its live processes' sum. Where no
# such account exists the rule holds only when no task of the job was created and died during
# the window (every pid the job's private PID namespace gave out since the job's first
# process is still a live task); without a private PID namespace either, no job is starved.
# Whatever a dead task did can only add to the job's CPU: its run delay and priority are
# never read (only live threads' are), so a dead task can never tip the verdict to starved.

STARVE_CPU_SHARE = 0.25
STARVE_DELAY_SHARE = 0.5
STARVE_OTHERS_SHARE = 0.5
STARVE_GRACE = 4.0
"""A job found starved at its wall deadline runs on, re-checked every quarter of its
timeout, until it is no longer starved (then it is killed as usual), has used its CPU budget
(the model's timeout), finishes, or reaches STARVE_GRACE times its timeout: only then is it
reported ``starved``. So a slow honest job on a loaded machine can still pass, and a spinning
one burns its CPU budget and fails, instead of both abstaining."""
_CLK_TCK = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
_SCHED_OTHER = 0


def _cpu_account(path: str) -> float | None:
    """CPU seconds charged so far to the cgroup whose account file is ``path`` (v1
    ``cpuacct.usage`` in ns, v2 ``cpu.stat`` ``usage_usec``), the CPU of its dead tasks
    included; None when it cannot be read."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    try:
        if path.endswith("cpu.stat"):
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "usage_usec":
                    return int(parts[1]) / 1e6
            return None
        return int(text.strip()) / 1e9
    except ValueError:
        return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _total_forks() -> int | None:
    """Tasks (processes and threads) created on this machine since boot (``/proc/stat``)."""
    try:
        with open("/proc/stat") as handle:
            for line in handle:
                if line.startswith("processes "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _live_tids() -> set[int]:
    """Every live task (thread) this process's PID namespace shows."""
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            try:
                found.update(int(t) for t in os.listdir(f"/proc/{name}/task"))
            except (OSError, ValueError):
                continue
    return found


def _delay(task: str) -> float:
    """Seconds the task at ``/proc/<pid>/task/<tid>`` waited runnable since it started."""
    try:
        with open(f"{task}/schedstat") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _task_delays(pid: int) -> dict[str, float]:
    """:func:`_delay` of each thread of ``pid``, by ``pid/tid``."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    return {f"{pid}/{tid}": _delay(f"/proc/{pid}/task/{tid}") for tid in tids}


_RESERVED_PIDS = 300
"""Where the kernel's pid allocator starts again after it wraps at ``pid_max``."""


def pids_since(first: int, last: int, pid_max: int) -> list[int]:
    """The pids a namespace gave out from ``first`` to ``last`` (both included), in order,
    wrapping at ``pid_max`` back to :data:`_RESERVED_PIDS` as the kernel does."""
    if first <= last:
        return list(range(first, last + 1))
    return list(range(first, pid_max)) + list(range(_RESERVED_PIDS, last + 1))


def _cpu_busy(cpus: set[int]) -> float:
    """Seconds the CPUs in ``cpus`` spent busy (not idle or iowait) since boot."""
    total = 0
    try:
        with open("/proc/stat") as handle:
            for line in handle:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                parts = line.split()
                try:
                    index = int(parts[0][3:])
                except ValueError:
                    continue
                if index in cpus and len(parts) >= 9:
                    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, parts[1:9])
                    total += user + nice + system + irq + softirq + steal
    except (OSError, ValueError):
        return 0.0
    return total / _CLK_TCK


def _stat_fields(path: str) -> list[str]:
    """The fields of a ``/proc/.../stat`` file after the command name (field 3 is index 0)."""
    try:
        with open(path) as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _autogroup_nice(pid: int) -> int:
    """The nice value of ``pid``'s autogroup (``/proc/<pid>/autogroup``: ``/autogroup-N nice
    K``); a process may raise it for its whole session, which weighs the session down as one."""
    try:
        with open(f"/proc/{pid}/autogroup") as handle:
            return int(handle.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


class CpuWindow:
    """What the machine's CPUs had done when a job started, to compare at its deadline.

    ``account``: the job's cgroup CPU account file (see :func:`_cpu_account`), ``""`` for
    none; ``pid_check``: without an account, whether the job runs in a private PID
    namespace, where a task that was created and died shows as a pid given out but gone."""

    def __init__(self, timeout: float, budget: float, account: str = "", pid_check: bool = False):
        self.budget = budget
        """The job's CPU seconds: used up, it is the model's timeout, never starved."""
        self.step = max(0.05, timeout / 4)
        try:
            self.cpus = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self.cpus = set(range(os.cpu_count() or 1))
        # The job starts at the runner's own priority: only a thread below it lowered itself.
        own = _stat_fields(f"/proc/{os.getpid()}/stat")
        self.nice = int(own[16]) if len(own) > 38 else 0
        self.policy = int(own[38]) if len(own) > 38 else _SCHED_OTHER
        self.account = account
        self.account_start = _cpu_account(account) if account else None
        if self.account_start is None:
            self.account = ""
        self.pid_check = pid_check and not self.account
        self.forks = _total_forks() if self.pid_check else None
        self.delay_before: dict[str, float] = {}
        """Run delay per task (``pid/tid``) before the window, for :meth:`already`."""
        self.cpu_before: dict[int, tuple[str, float]] = {}
        """CPU seconds per process (by pid, with its start time) before the window, for
        :meth:`already`: a judge's own start-up (pytest's import) is not its step's CPU."""
        self.first_pid = 0
        """The job's first process (set by :meth:`job_started`); pids before it are not the
        job's: its tasks can only get later ones."""
        self.started = time.monotonic()
        self.cap = self.started + STARVE_GRACE * timeout
        """The last wall deadline of a starved job."""
        self.busy = _cpu_busy(self.cpus)

    def job_started(self, pid: int) -> None:
        self.first_pid = pid

    def already(self, members: list[int]) -> None:
        """Tasks that ran before the window (a judge that times one of its steps): only the
        run delay and CPU they get from now on count (``schedstat`` and ``stat`` count from a
        task's start). Without this, the CPU a judge spent before a step (pytest's import)
        made every starved step look fed."""
        for pid in members:
            for tid, delay in _task_delays(pid).items():
                self.delay_before[tid] = delay
            fields = _stat_fields(f"/proc/{pid}/stat")
            if len(fields) > 19:
                cpu = sum(int(v) for v in fields[11:15]) / _CLK_TCK
                self.cpu_before[pid] = (fields[19], cpu)  # (start time, CPU so far)

    def tasks_from_now(self) -> None:
        """The job's tasks are the ones given out from now on (a judge's step whose processes
        are already running): a pid given out since is one of its tasks, and must be live."""
        last = _read_int("/proc/sys/kernel/ns_last_pid")
        self.first_pid = -1 if last is None else last + 1

    @property
    def counting(self) -> str:
        """How the job's CPU is known: ``cgroup`` (an account with its dead tasks), ``pids``
        (live tasks, sound while none died), ``none`` (never starved here)."""
        return "cgroup" if self.account else ("pids" if self.pid_check else "none")

    def _all_tasks_live(self) -> bool:
        """Without a CPU account: whether every task the job ever had is still alive, so
        the live processes' sum is all of its CPU. Any doubt is False."""
        if not self.pid_check or self.first_pid <= 0 or self.forks is None:
            return False
        last = _read_int("/proc/sys/kernel/ns_last_pid")
        pid_max = _read_int("/proc/sys/kernel/pid_max")
        forks = _total_forks()
        if last is None or pid_max is None or forks is None:
            return False
        if forks - self.forks >= pid_max - _RESERVED_PIDS:
            return False  # the allocator may have wrapped past where it started
        if last + 1 == self.first_pid:
            return True  # no task given out since the window started (see tasks_from_now)
        given = pids_since(self.first_pid, last, pid_max)
        return not set(given) - _live_tids()

    def verdict(self, members: list[int]) -> dict[str, Any]:
        """Whether the job made of processes ``members`` was starved, with the evidence."""
        elapsed = max(1e-3, time.monotonic() - self.started)
        busy = _cpu_busy(self.cpus) - self.busy
        cpu = 0.0
        delay = 0.0
        lowered = False
        for pid in members:
            fields = _stat_fields(f"/proc/{pid}/stat")
            if len(fields) > 19:
                own = sum(int(v) for v in fields[11:15]) / _CLK_TCK  # utime..cstime
                start, before = self.cpu_before.get(pid, ("", 0.0))
                cpu += max(0.0, own - before) if start == fields[19] else own
            lowered = lowered or _autogroup_nice(pid) > 0
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                task = f"/proc/{pid}/task/{tid}"
                fields = _stat_fields(f"{task}/stat")
                if len(fields) > 38 and (
                    int(fields[16]) > self.nice or int(fields[38]) != self.policy
                ):
                    lowered = True  # niced, or SCHED_BATCH / SCHED_IDLE (no RT for jobs)
                delay += max(0.0, _delay(task) - self.delay_before.get(f"{pid}/{tid}", 0.0))
        if self.account:
            now = _cpu_account(self.account)
            counted = now is not None and self.account_start is not None
            if now is not None and self.account_start is not None:
                cpu = max(cpu, now - self.account_start)
        else:
            counted = self._all_tasks_live()
        others = max(0.0, busy - cpu)
        starved = (
            counted
            and not lowered
            and cpu < self.budget
            and cpu < STARVE_CPU_SHARE * elapsed
            and delay >= STARVE_DELAY_SHARE * elapsed
            and others >= STARVE_OTHERS_SHARE * len(self.cpus) * elapsed
        )
        return {
            "starved": starved,
            "wall_s": round(elapsed, 3),
            "cpu_s": round(cpu, 3),
            "run_delay_s": round(delay, 3),
            "others_cpu_s": round(others, 3),
            "cpus": len(self.cpus),
            "lowered_priority": lowered,
            "all_cpu_counted": counted,
        }


STARVATION_RULE = (
    "STARVE_CPU_SHARE",
    "STARVE_DELAY_SHARE",
    "STARVE_OTHERS_SHARE",
    "STARVE_GRACE",
    "_CLK_TCK",
    "_SCHED_OTHER",
    "_RESERVED_PIDS",
    "_delay",
    "_task_delays",
    "_cpu_account",
    "_read_int",
    "_total_forks",
    "_live_tids",
    "pids_since",
    "_cpu_busy",
    "_stat_fields",
    "_autogroup_nice",
    "CpuWindow",
)
"""The top-level names that make the starvation rule. Other trusted processes of a job that
keep wall-clock limits of their own (the code judge's per-test and compile limits) apply the
same rule through :func:`rule_source`, never a copy of it."""


def rule_source(wanted: tuple[str, ...] = STARVATION_RULE) -> str:
    """The source of a stdlib-only module that defines the top-level names ``wanted``
    (default: :data:`STARVATION_RULE`), cut from this file: the host's half of a rule that a
    trusted process inside a job applies too (the code judge ships the starvation rule, the
    Godot fork driver ``_oom_kills``), so there is one definition of it, never a copy.

    ``wanted`` must name the definitions whole, with what they use: the module holds only
    ``os``, ``time`` and ``typing.Any`` besides them.

    Raises:
        ValueError: a name in ``wanted`` is not a top-level function, class or assignment
            of this file.
    """
    import ast

    with open(__file__, encoding="utf-8") as handle:
        source = handle.read()
    parts = [
        "from __future__ import annotations",
        "import os",
        "import time",
        "from typing import Any",
    ]
    found: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = {node.name}
        elif isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        else:
            continue
        if names & set(wanted):
            found |= names & set(wanted)
            parts.append(str(ast.get_source_segment(source, node)))
    missing = sorted(set(wanted) - found)
    if missing:
        raise ValueError(
            f"rule_source: {missing} are not top-level definitions of {__file__}; "
            "name functions, classes or assignments of that file"
        )
    return "\n\n\n".join(parts) + "\n"


class Runner:
    """The job server. ``config`` is the host's first frame (see :func:`main`)."""

    def __init__(self, config: dict[str, Any], rfd: int, wfd: int) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.root = str(config.get("root", "/work"))
        self.is_root = os.geteuid() == 0
        self.job_uid = int(config.get("job_uid", 65534)) if self.is_root else os.getuid()
        self.job_gid = int(config.get("job_gid", 65534)) if self.is_root else os.getgid()
        self.private_pids = bool(config.get("private_pids", False))
        self.address_space = bool(config.get("address_space", True))
        self.nproc = bool(config.get("nproc", True))
        self.path = str(config.get("path", "/usr/local/bin:/usr/bin:/bin"))
        self.base_env = {str(k): str(v) for k, v in dict(config.get("env", {})).items()}
        self.private_ipc = bool(config.get("private_ipc", False))
        self.private_scratch = bool(config.get("private_scratch", False))
        self.mqueue_dir = _mqueue_mount(str(config.get("mqueue", "")))
        self.seccomp: _SeccompProgram | None = None
        if config.get("seccomp", True):
            program = _SeccompProgram(_seccomp_filter(block_mqueue=not self.mqueue_dir))
            self.seccomp = program if _probe_seccomp(program) else None
        self.cgroup_stat = _memory_stat_path()
        cgroup = dict(config.get("cgroup") or {})
        self.cgroup_version = int(cgroup.get("version", 0))
        self.cgroup_dirs = {str(k): str(v) for k, v in dict(cgroup.get("dirs") or {}).items()}
        self.cpu_view = str(cgroup.get("cpu_view") or "")
        """Where jobs see the dir of their cgroup's CPU account (read-only), if anywhere."""
        if self.cgroup_dirs:
            self.cgroup_stat = os.path.join(
                self.cgroup_dirs.get("memory", self.cgroup_dirs.get("unified", "")), "memory.stat"
            )
        self.cpu_accounts = [str(p) for p in config.get("cpu_account") or ()]
        """Account files of a cgroup that holds every job of this runner (Docker: the
        container's), used where the job has no cgroup CPU account of its own."""
        self.jobs_started = 0
        self.cgroups_made = 0
        self.cgroup_reserve: list[list[str]] = []
        """Job cgroups made ahead (at most one set; see :meth:`cgroup_upkeep`)."""
        self.cgroup_graveyard: list[str] = []
        """Job cgroups emptied and waiting for their ``rmdir`` (see :meth:`cgroup_upkeep`)."""
        self.spares: dict[socket.socket, list[str]] = {}
        """Per zygote socket (plain or warm): the cgroup dirs its spare job process has
        joined ahead of the next job (``[]`` where jobs get no cgroup); see :meth:`_spawn_fast`."""
        self.job_cgroup: list[str] = []
        """The running job's own cgroups (one per hierarchy), empty between jobs."""
        self.scratch_baseline = self._scratch_snapshot()
        self.shmem_baseline = _shmem_bytes(self.cgroup_stat)
        self.workdir: str | None = None
        self.sessions = 0
        self.tainted: str | None = None
        self.kept: dict[str, bytes] = {}
        self.kept_bytes = 0
        self.keep_limit = int(config.get("keep_bytes", 16 << 20))
        self.zygote: socket.socket | None = None
        self.zygote_pid = 0
        self.warm: dict[str, _WarmZygote] = {}
        """Warm zygotes by the digest of their preload (see :meth:`warm_zygote`), oldest first."""
        self.warm_refused: set[str] = set()
        """Preloads that failed once: their jobs run on the zygote from then on."""
        self.preload_error = ""
        self.preload_vm = 0
        """Address space of the zygote after its preload (0 without one)."""
        self.python_real = os.path.realpath(sys.executable)
        self._is_us: dict[tuple[str, str], bool] = {}
        self.ancestors = self._ancestors()
        self.launcher: _Launcher | None = None
        self.huge_pages = bool(config.get("huge_pages", True))
        """Whether a preloaded zygote collapses its memory into huge pages (see
        :func:`_collapse_huge_pages`; off only to measure the difference)."""
        self.launcher_ok = (
            bool(config.get("launcher", True))
            and self.is_root
            and self.job_uid != 0
            and _SETRESUID >= 0
        )
        """Whether non-python jobs may start through a :class:`_Launcher` (``posix_spawn``)."""
        self.spare_ok = (
            bool(config.get("spare", True))
            and self.is_root
            and self.job_uid != 0
            and self.starvation_report() in ("cgroup", "container")
        )
        """Whether zygotes keep a spare job process forked (and joined to the next job's
        cgroups) ahead of the next job (see :meth:`_spawn_fast`). Only where the spare is told
        apart from jobs by uid (a root runner) and the job's CPU has an account of its own
        (never the pid count, which a spare forked earlier would confuse)."""
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2"):
            signal.signal(getattr(signal, name), signal.SIG_IGN)

    # .. main loop ..........................................................................

    def serve(self) -> int:
        self.send(
            {
                "op": "hello",
                "version": PROTOCOL_VERSION,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "job_uid": self.job_uid,
                "root": self.root,
                "python": sys.version.split()[0],
                "oom_counter": _oom_kills() >= 0,
                "fast_python": self.zygote is not None,
                "preload_error": self.preload_error,
                "isolation": self.isolation_report(),
                "cpus": sorted(os.sched_getaffinity(0)),
            }
        )
        while True:
            header = _read_exact(self.rfd, HEADER.size)
            if header is None:
                break
            (size,) = HEADER.unpack(header)
            if size > MAX_FRAME:
                break
            body = _read_exact(self.rfd, size)
            if body is None:
                break
            try:
                request = decode_body(body)
            except ValueError as exc:
                self.send({"ok": False, "kind": "runner", "error": f"bad frame: {exc}"})
                continue
            self.send(self.handle(request))
        try:
            self.end()  # the host is gone: still leave nothing behind (the full cleanup)
        except Exception:  # exiting anyway; a private namespace goes with us
            pass
        return 0

    def isolation_report(self) -> dict[str, Any]:
        """What holds between jobs here (``verifiers sandbox check`` prints it)."""
        return {
            "keyring_blocked": self.seccomp is not None,
            "ipc_scrub": self.private_ipc or (self.is_root and self.job_uid != 0),
            "mqueue": "scrub" if self.mqueue_dir else ("block" if self.seccomp else "open"),
            "scratch_scrub": "all" if self.private_scratch else "job uid",
            "shmem_check": self.shmem_baseline >= 0,
            "job_cgroup": self.cgroup_report(),
            "starvation": self.starvation_report(),
        }

    def send(self, message: dict[str, Any]) -> None:
        _write_all(self.wfd, encode_frame(message))

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request's reply: its fields + ``ok``, or ``ok: false`` + ``kind`` + ``error``."""
        try:
            reply = self.dispatch(request)
            reply["ok"] = True
        except RequestError as exc:
            reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:  # report, keep serving: the host decides to recycle
            reply = {"ok": False, "kind": "runner", "error": f"{type(exc).__name__}: {exc}"}
        return reply

    def batch(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run requests in order; stop at the first failure (the rest never ran), except a
        ``read`` marked ``optional`` (a file the job may or may not have left: the host's
        prefetch after an ``exec``), whose failure is its reply and the batch goes on."""
        ops = request.get("ops")
        if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
            raise RequestError("bad_request", "batch needs a list of requests")
        replies: list[dict[str, Any]] = []
        for sub in ops:
            if sub.get("op") == "batch":
                raise RequestError("bad_request", "batches do not nest")
            reply = self.handle(sub)
            replies.append(reply)
            if not reply["ok"] and not (sub.get("op") == "read" and sub.get("optional")):
                break
        return {"replies": replies}

    def dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "batch":
            return self.batch(request)
        if self.tainted is not None and op in ("begin", "exec", "write", "read"):
            raise RequestError("tainted", f"runner needs recycling: {self.tainted}")
        if op == "ping":
            return {
                "pong": True,
                "fds": len(os.listdir("/proc/self/fd")),
                "jobs": len(self._job_pids()),
            }
        if op == "begin":
            return self.begin()
        if op == "end":
            return self.end()
        if self.workdir is None:
            raise RequestError("protocol", f"{op!r} before 'begin'")
        if op == "exec":
            return self.run_job(request)
        if op == "write":
            return self.write_files(request)
        if op == "read":
            return self.read_file(request)
        raise RequestError("protocol", f"unknown op {op!r}")

    # .. sessions ...........................................................................

    def begin(self) -> dict[str, Any]:
        if self.workdir is not None:
            self.end()
        self.sessions += 1
        path = os.path.join(self.root, f"job{self.sessions}")
        os.mkdir(path, 0o700)
        os.chmod(path, 0o1777)  # root-owned + sticky: the job cannot remove readonly files
        self.workdir = path
        os.mkdir(os.path.join(path, ".tmp"), 0o700)
        self._chown_job(os.path.join(path, ".tmp"))
        return {"workdir": path}

    def end(self) -> dict[str, Any]:
        """Kill what is left of the job and remove everything it could have left behind.

        Total: every step runs even when an earlier one failed, any exception counts as a
        failure (a job decides the shape of what it leaves: a tree deeper than the recursion
        limit, a file it made unremovable), and any failure taints the runner, which then
        refuses sessions until the host recycles it.
        """
        problems: list[str] = []
        leftover = self.sweep(None)
        if leftover:
            problems.append(f"{leftover} job processes survived")
        for what, step in (
            ("work dir", self.remove_workdir),
            ("shared scratch", self.scrub_shared),
            ("IPC objects", self.scrub_ipc),
            ("shared memory", self.check_shmem),
        ):
            try:
                ok = step()
            except Exception as exc:  # any failure of cleanup is a tamper sign, never fatal
                ok = False
                what = f"{what} ({type(exc).__name__}: {exc})"
            if not ok:
                problems.append(f"{what} not clean")
        clean = not problems
        if not clean:
            self.tainted = "; ".join(problems)
        reply: dict[str, Any] = {"clean": clean, "leftover": leftover}
        if problems:
            reply["problems"] = problems
        return reply

    def scrub_shared(self) -> bool:
        """Remove what the job left in the scratch dirs outside its work dir (/tmp, /dev/shm,
        /var/tmp, POSIX message queues), and check that nothing is left.

        Those outlive the job's work dir: without this, one rollout's files (or a full tmpfs,
        or shared memory charged to the container's memory cgroup) would reach the next
        rollout in the same container. When the scratch dirs are private to this runner (a
        container, bubblewrap's own tmpfs), everything that was not there when the runner
        started goes; otherwise only what the job uid owns, and only when jobs run under their
        own uid (so that "owned by the job uid" means "made by a job").
        """
        folders = list(_SHARED_SCRATCH)
        if self.mqueue_dir:
            folders.append(self.mqueue_dir)
        clean = True
        for folder in folders:
            for _ in range(2):  # remove, then verify
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    break
                doomed = [e for e in entries if self._made_by_jobs(folder, e)]
                if not doomed:
                    break
                for entry in doomed:
                    try:
                        _rmtree(entry.path)
                    except FileNotFoundError:
                        continue
                    except OSError:
                        clean = False
            else:
                clean = False
        return clean

    def _made_by_jobs(self, folder: str, entry: os.DirEntry[str]) -> bool:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            return False
        if self.private_scratch:
            return (entry.name, info.st_ino) not in self.scratch_baseline.get(folder, set())
        return self.is_root and self.job_uid != 0 and info.st_uid == self.job_uid

    def _scratch_snapshot(self) -> dict[str, set[tuple[str, int]]]:
        """What the scratch dirs hold before any job ran (kept by ``scrub_shared``)."""
        snapshot: dict[str, set[tuple[str, int]]] = {}
        for folder in (*_SHARED_SCRATCH, self.mqueue_dir):
            if not folder:
                continue
            try:
                snapshot[folder] = {(e.name, e.inode()) for e in os.scandir(folder)}
            except OSError:
                continue
        return snapshot

    def scrub_ipc(self) -> bool:
        """Remove the System V shared memory segments, message queues and semaphore sets
        jobs made, and check that none is left.

        They live in the IPC namespace, not in any file a job owns, so they outlive the job
        that made them: a segment can carry data (expected values learnt by one sample, read
        by the next) and stays charged to the memory cgroup. Where the namespace is private to
        this runner every object in it is a job's; otherwise only the job uid's. Removal runs
        as the job uid (``IPC_RMID`` needs the owner or creator; the runner has no
        ``CAP_SYS_ADMIN``).
        """
        if not (self.private_ipc or (self.is_root and self.job_uid != 0)):
            return True  # the host's namespace and no uid of our own: nothing is ours
        found = self._ipc_objects()
        if not found:
            return True
        self._remove_ipc(found)
        return not self._ipc_objects()

    def _ipc_objects(self) -> list[tuple[str, int]]:
        objects: list[tuple[str, int]] = []
        for kind, id_column in (("shm", "shmid"), ("msg", "msqid"), ("sem", "semid")):
            try:
                with open(f"/proc/sysvipc/{kind}") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                continue
            if not lines:
                continue
            header = lines[0].split()
            try:
                at_id, at_uid, at_cuid = (header.index(c) for c in (id_column, "uid", "cuid"))
            except ValueError:
                continue
            for line in lines[1:]:
                cols = line.split()
                if len(cols) <= max(at_id, at_uid, at_cuid):
                    continue
                owners = {int(cols[at_uid]), int(cols[at_cuid])}
                if self.private_ipc or self.job_uid in owners:
                    objects.append((kind, int(cols[at_id])))
        return objects

    def _remove_ipc(self, objects: list[tuple[str, int]]) -> None:
        """``IPC_RMID`` each object, from a child running as the job uid."""
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                if self.is_root:
                    os.setgroups([])
                    os.setgid(self.job_gid)
                    os.setuid(self.job_uid)
                for kind, ident in objects:
                    if kind == "shm":
                        libc.shmctl(ident, 0, None)  # IPC_RMID
                    elif kind == "msg":
                        libc.msgctl(ident, 0, None)
                    else:
                        libc.semctl(ident, 0, 0)
                code = 0
            finally:
                os._exit(code)
        while True:
            try:
                os.waitpid(pid, 0)
                return
            except InterruptedError:
                continue
            except ChildProcessError:
                return

    def check_shmem(self) -> bool:
        """True when the shared memory charged to our memory cgroup (tmpfs files, SysV and
        POSIX shm) is back to what it was before any job ran.

        The check behind the scrubs: whatever a job found to keep shared memory alive, it
        would be charged to the cgroup and shrink what the next job may use (a hog's leak
        would OOM-kill the next honest sample). Where no memory cgroup is visible, True.
        """
        if self.shmem_baseline < 0:
            return True
        return _shmem_bytes(self.cgroup_stat) <= self.shmem_baseline + _SHMEM_SLACK

    def remove_workdir(self) -> bool:
        path, self.workdir = self.workdir, None
        if path is None:
            return True
        _rmtree(path)
        return not os.path.lexists(path)

    # .. per-job cgroups .....................................................................

    def cgroup_report(self) -> dict[str, Any] | None:
        """Which per-job cgroup limits hold (None: none, rlimits per process only)."""
        if not self.cgroup_dirs:
            return None
        return {
            "version": self.cgroup_version,
            "memory": "memory" in self.cgroup_dirs,
            "pids": "pids" in self.cgroup_dirs,
            "cpu": self.cgroup_version == 2 or "cpuacct" in self.cgroup_dirs,
        }

    def cpu_account(self, made: list[str]) -> str:
        """The CPU account file that holds all of the job's CPU, dead tasks included: its own
        cgroup's (v1 ``cpuacct``, v2 ``cpu.stat``), else one of a cgroup around every job
        of this runner (``cpu_account`` in the config), else ``""``."""
        if made and self.cgroup_version == 2:
            return os.path.join(made[0], "cpu.stat")  # in every v2 cgroup, controller or not
        parent = self.cgroup_dirs.get("cpuacct")
        for path in made:
            if parent and os.path.dirname(path) == parent:
                return os.path.join(path, "cpuacct.usage")
        for path in self.cpu_accounts:
            if _cpu_account(path) is not None:
                return path
        return ""

    def job_view(self, account: str) -> str:
        """``account`` as the job sees it (``""`` where it cannot: never starved there)."""
        if not account or account in self.cpu_accounts:
            return account  # the container's: the same path for the job
        folder, name = os.path.split(account)
        if self.cpu_view:
            return os.path.join(self.cpu_view, os.path.basename(folder), name)
        return ""

    def starvation_report(self) -> str:
        """How a job's CPU is counted when its wall backstop asks if it was starved."""
        if self.cgroup_version == 2 or "cpuacct" in self.cgroup_dirs:
            return "cgroup"
        if any(_cpu_account(p) is not None for p in self.cpu_accounts):
            return "container"
        return "pids" if self.private_pids else "none"

    def job_cgroups(self, limits: dict[str, Any], made: list[str] | None = None) -> list[str]:
        """Make this job's own cgroups (one per hierarchy) with its memory and pids limits;
        the job child joins them before it runs anything (``limits["cgroup_procs"]``).
        ``made``: cgroups made ahead of the job (a zygote's spare sits in them), given the
        job's limits here.

        Memory then counts every process of the job together (``RLIMIT_AS`` is per process:
        20 forked children could hold 20 times the limit), with the tmpfs pages it writes.
        """
        self.jobs_started += 1
        if not self.cgroup_dirs:
            return []
        if made is None and self.cgroup_reserve:
            made = self.cgroup_reserve.pop()
        try:
            if made is None:
                made = self.make_cgroups(limits)
            else:
                self._cgroup_limits(made, limits)
        except OSError as exc:
            self.release_job_cgroups(made or [])
            raise RequestError("runner", f"cannot make the job's cgroup: {exc}") from None
        limits["cgroup_procs"] = [os.path.join(p, "cgroup.procs") for p in made]
        limits["cgroup_memory"] = self.cgroup_version == 2 or "memory" in self.cgroup_dirs
        return made

    def make_cgroups(self, limits: dict[str, Any]) -> list[str]:
        """A new job cgroup per hierarchy, with ``limits``; [] where jobs get none.

        Raises:
            OSError: one could not be made (those made are removed).
        """
        made: list[str] = []
        if not self.cgroup_dirs:
            return made
        self.cgroups_made += 1
        name = f"job{self.cgroups_made}"
        try:
            for parent in self.cgroup_dirs.values():
                path = os.path.join(parent, name)
                os.mkdir(path)
                made.append(path)
            self._cgroup_limits(made, limits)
        except OSError:
            self.release_job_cgroups(made)
            raise
        return made

    def _cgroup_limits(self, made: list[str], limits: dict[str, Any]) -> None:
        """Write the job's memory and pids limits into its cgroups."""
        memory = str(int(limits.get("memory_mb", 512)) << 20)
        pids = str(int(limits.get("pids", 64)))
        kinds = list(self.cgroup_dirs)  # ``made`` holds one per hierarchy, in this order
        for index, path in enumerate(made):
            kind = kinds[index]
            if self.cgroup_version == 2:
                _cg_write(path, "memory.max", memory)
                _cg_write(path, "memory.swap.max", "0", optional=True)
                _cg_write(path, "pids.max", pids)
            elif kind == "memory":
                try:
                    _cg_write(path, "memory.limit_in_bytes", memory)
                    _cg_write(path, "memory.memsw.limit_in_bytes", memory, optional=True)
                except OSError:  # raising a cgroup's limits: memory+swap may not be below
                    _cg_write(path, "memory.memsw.limit_in_bytes", memory, optional=True)
                    _cg_write(path, "memory.limit_in_bytes", memory)
                _cg_write(path, "memory.swappiness", "0", optional=True)
            elif kind == "pids":
                _cg_write(path, "pids.max", pids)

    def cgroup_upkeep(self, limits: dict[str, Any]) -> None:
        """While a job runs: remove the cgroups of jobs before it and make the next job's.

        Every ``mkdir`` and ``rmdir`` of a cgroup takes the kernel's global cgroup lock, and
        a cgroup-v1 join holds that lock for an RCU grace period (~10 ms): on a host whose
        other runners (or spares) join cgroups all the time, one of them on a job's path
        waited that long now and then (measured: 0.17 ms, spikes of 12-42 ms). Here they wait,
        if at all, while the job runs. A cgroup that cannot be removed (a process in it, which
        only this runner could have put there) taints the runner.
        """
        graveyard, self.cgroup_graveyard = self.cgroup_graveyard, []
        for path in graveyard:
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                self.tainted = self.tainted or f"a job cgroup could not be removed: {exc}"
        if self.cgroup_dirs and not self.cgroup_reserve:
            try:
                self.cgroup_reserve.append(self.make_cgroups(limits))
            except OSError:
                pass  # made on demand then, as without a reserve

    def release_job_cgroups(self, made: list[str], *, later: bool = False) -> tuple[bool, int]:
        """Kill whatever is still in the job's cgroups and remove them: (OOM-killed, how many
        cgroups could not be removed). ``later``: once empty, removed by the next
        :meth:`cgroup_upkeep` instead (off the host's wait for this job's reply)."""
        oom = False
        stuck = 0
        for path in made:
            for events in ("memory.events", "memory.oom_control"):
                count = _cg_counter(os.path.join(path, events), "oom_kill")
                oom = oom or count > 0
            left = self._kill_until_gone(
                functools.partial(_cg_members, path),
                rounds=200,
                pause=0.005,
                kill_all=functools.partial(_cg_write, path, "cgroup.kill", "1", optional=True),
            )
            if later and not left:
                self.cgroup_graveyard.append(path)
                continue
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError:
                stuck += 1
        return oom, stuck

    # .. jobs ...............................................................................

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.workdir is not None
        argv = [str(a) for a in request.get("argv", [])]
        if not argv:
            raise RequestError("bad_request", "empty argv")
        limits = dict(request.get("limits", {}))
        timeout = float(request.get("timeout", 10.0))
        output_cap = int(limits.get("output_bytes", 1 << 20))
        cwd = self.resolve(str(request.get("cwd") or "."), must_exist=True)
        env = dict(self.base_env)
        env.update({"HOME": self.workdir, "TMPDIR": os.path.join(self.workdir, ".tmp")})
        env.setdefault("PATH", self.path)
        env.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
        stdin_data = _request_bytes(request["stdin"], "stdin") if request.get("stdin") else b""
        # Before the job's clock starts: a new warm zygote's preload is the runner's time.
        warm = self.warm_zygote(request.get("preload")) if "preload" in request else None
        fast = self.fast_python(argv, env)  # depends on argv, PATH and PYTHON* only
        # The zygote the job should fork from: its spare (if any) already sits in cgroups
        # made for this job, which the job then gets (with its limits).
        route = (warm.sock if warm is not None else self.zygote) if fast else None
        spare = self.spares.pop(route, None) if route is not None else None

        oom_before = _oom_kills()
        job_cgroups = self.job_cgroup = self.job_cgroups(limits, spare or None)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        started = time.monotonic()
        cpu_budget = limits.get("cpu_s")
        window = CpuWindow(
            timeout,
            float(cpu_budget) if cpu_budget is not None else timeout,
            account=self.cpu_account(job_cgroups),
            pid_check=self.private_pids,
        )
        # Where the job's trusted parts (the code judge) find the same account for their own
        # time limits: the account file, "pids" (count pids) or "" (never starved).
        env["VERIFIERS_JOB_CPU"] = self.job_view(window.account) or (
            "pids" if window.pid_check else ""
        )
        # When the job's clock started (this runner's CLOCK_MONOTONIC, which the job shares):
        # the job's process may be older (a zygote's spare, forked while an earlier job ran),
        # so its own start time is not the clock's.
        env["VERIFIERS_JOB_STARTED"] = repr(started)
        job = _Job(argv, env, cwd, limits, timeout, (in_r, out_w, err_w))
        pid = self._spawn_fast(fast, job, warm) if fast and warm is not None else 0
        via = warm.sock if pid and warm is not None else None
        if pid == 0 and warm is not None:
            self.drop_warm(warm)
        if pid == 0 and fast:
            pid = self._spawn_fast(fast, job) if self.zygote is not None else 0
            via = self.zygote if pid else None
        launched = False
        if pid == 0:
            fast = None
            pid = self._spawn_launched(job)
            via = self.launcher.sock if pid and self.launcher is not None else None
            launched = via is not None
        if pid == 0:
            pid = os.fork()
            if pid == 0:  # child: never returns
                self._child(job)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        window.job_started(pid)
        self.cgroup_upkeep(limits)
        deadline = started + timeout
        result = self._supervise(
            pid, stdin_data, in_w, out_r, err_r, deadline, output_cap, via, window
        )
        duration = time.monotonic() - started
        self.job_cgroup = []
        cgroup_oom, cgroup_left = self.release_job_cgroups(job_cgroups, later=True)
        result["leftover"] = max(0, int(result["leftover"])) + cgroup_left
        status, usage = result["status"], result["usage"]
        if os.WIFSIGNALED(status):
            returncode = -os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            returncode = os.WEXITSTATUS(status)
        else:
            returncode = -signal.SIGKILL
        timed_out = bool(result["timed_out"]) or returncode == -signal.SIGXCPU
        # Only the wall backstop asks why: a job killed by its CPU budget (SIGXCPU) had it all.
        starvation = result["starvation"] if result["timed_out"] else None
        oom_after = _oom_kills()
        oom = (oom_before >= 0 and oom_after > oom_before) or cgroup_oom
        stderr = result["stderr"]
        if not oom and returncode != 0 and not timed_out:
            tail = stderr[-4096:]
            oom = any(
                marker in tail
                for marker in (b"MemoryError", b"std::bad_alloc", b"Cannot allocate memory")
            )
        return {
            "returncode": returncode,
            "stdout": bytes(result["stdout"]),
            "stderr": bytes(stderr),
            "truncated": result["truncated"],
            "timed_out": timed_out,
            "oom_killed": oom,
            "duration_s": duration,
            "cpu_s": (usage.ru_utime + usage.ru_stime) if usage is not None else 0.0,
            "peak_memory_mb": (usage.ru_maxrss / 1024.0) if usage is not None else 0.0,
            "leftover": result["leftover"],
            "starved": bool(starvation and starvation["starved"]),
            "starvation": starvation,
            "fast": fast is not None,
            "warm": via is not None and warm is not None and via is warm.sock,
            "launched": launched,
        }

    def _spawn_fast(self, fast: list[str], job: _Job, warm: _WarmZygote | None = None) -> int:
        """Have the zygote (or ``warm``) fork the job; returns its pid, or 0 when it is gone."""
        sock = warm.sock if warm is not None else self.zygote
        assert sock is not None
        spec_r, spec_w = os.pipe()
        spec = {"fast": fast, **job.spec()}
        data = memoryview(json.dumps(spec).encode("utf-8"))
        # The job's spec goes into the pipe *before* the zygote forks, so the child reads it at
        # once instead of waiting for this process to be scheduled again (one hand-off less).
        # Only the child reads it: the zygote never holds job data.
        os.set_blocking(spec_w, False)
        try:
            data = data[os.write(spec_w, data) :]
        except BlockingIOError:
            pass
        os.set_blocking(spec_w, True)
        if not data:
            os.close(spec_w)
            spec_w = -1
        # With a spare: the cgroups this job joins (the zygote hands the job to its spare
        # only when the spare sits in exactly these) and those the next spare joins.
        message, ahead = b"F", None
        if self.spare_ok:
            try:
                reserve = self.cgroup_reserve
                ahead = reserve.pop() if reserve else self.make_cgroups(job.limits)
            except OSError:
                ahead = None  # no spare this time; the job itself is unaffected
            if ahead is not None:
                now = list(job.limits.get("cgroup_procs") or ())
                after = [os.path.join(p, "cgroup.procs") for p in ahead]
                message += json.dumps({"now": now, "next": after}).encode("utf-8")
        try:
            socket.send_fds(sock, [message], [*job.stdio, spec_r])
            reply = _recv_exact(sock, 4)
        except OSError:
            reply = b""
        os.close(spec_r)
        if len(reply) != 4:
            if spec_w >= 0:
                os.close(spec_w)
            if ahead:
                self.release_job_cgroups(ahead)
            self.release_spare(sock)
            if warm is None:
                self.zygote = None  # fall back to fork+exec from now on
            return 0
        if ahead is not None:
            self.release_spare(sock)  # a stale entry (the spare was not used): gone now
            self.spares[sock] = ahead
        (pid,) = struct.unpack(">i", reply)
        if spec_w >= 0:  # a spec larger than the pipe buffer: the rest now
            try:
                _write_all(spec_w, bytes(data))
            except OSError:
                pass  # the child died early; its status tells the rest
            finally:
                os.close(spec_w)
        return int(pid)

    def release_spare(self, sock: socket.socket) -> None:
        """Forget the spare of the zygote at ``sock``: remove its cgroups (killing it, if it
        is still in them; a zygote forks afresh when its spare is gone)."""
        made = self.spares.pop(sock, None)
        if made:
            self.release_job_cgroups(made)

    def _enter_job(self, job: _Job, base_vm: int = 0) -> None:
        """In the forked child: new session, job stdio only, rlimits, job uid, work dir.

        ``base_vm``: address space a preloaded zygote already maps (see ``_run_preload``);
        ``memory_mb`` counts beyond it, so a job of a heavy runtime gets the memory it asked
        for and not less.
        """
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        for target, fd in enumerate(job.stdio):
            os.dup2(fd, target)
        _close_other_fds()
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        _set_rlimits(self.rlimits(job.limits, job.timeout, base_vm))
        for procs in job.limits.get("cgroup_procs") or ():
            if str(procs) in _JOINED:
                continue  # a spare: joined before the job was handed to it
            with open(str(procs), "w") as handle:  # joins the job's own cgroup
                handle.write(str(os.getpid()))
        if self.seccomp is not None and not self.seccomp.install():
            raise OSError(errno.EPERM, "the job's seccomp filter was refused")
        if self.is_root:
            os.setgroups([])
            os.setgid(self.job_gid)
            os.setuid(self.job_uid)
        os.umask(0o022)
        os.chdir(job.cwd)

    def rlimits(
        self, limits: dict[str, Any], timeout: float, base_vm: int
    ) -> tuple[tuple[int, int], ...]:
        """The job's rlimits as ``(resource, value)`` pairs (soft = hard = value)."""
        memory = (int(limits.get("memory_mb", 512)) << 20) + base_vm
        cpu = limits.get("cpu_s")
        cpu_s = int(float(cpu) + 0.999) if cpu is not None else int(timeout) + 1
        settings = [
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_CPU, max(1, cpu_s)),
            (resource.RLIMIT_FSIZE, int(limits.get("file_bytes", 64 << 20))),
            (resource.RLIMIT_NOFILE, 1024),
        ]
        if self.address_space and not limits.get("cgroup_memory"):
            settings.append((resource.RLIMIT_AS, memory))
        if self.nproc:
            settings.append((resource.RLIMIT_NPROC, int(limits.get("pids", 64))))
        return tuple(settings)

    # .. launcher: non-python jobs by posix_spawn ...........................................

    def _spawn_launched(self, job: _Job) -> int:
        """Have the launcher ``posix_spawn`` the job; its pid, or 0: fork it here instead.

        The launcher (see :class:`_Launcher`) already holds everything a job inherits (the
        rlimits of this limits profile, seccomp, no new privileges, ``oom_score_adj``, no
        groups, umask); it enters the job's cgroups, takes the job uid as its real uid for
        the spawn only and spawns with ``setsid`` and default signals. Anything it cannot do
        exactly as the fork path would (a command that does not exec, a cwd the job uid
        cannot enter, a large spec) comes back as 0 and the fork path runs the job, with
        its own error reporting.
        """
        if not self.launcher_ok:
            return 0
        profile = self.rlimits(job.limits, job.timeout, self.preload_vm)
        for which, value in profile:
            if which == resource.RLIMIT_AS and value < _vm_size() + (64 << 20):
                return 0  # too tight for a copy of this process to run the spawn in
        launcher = self.launcher
        if launcher is not None and launcher.profile != profile:
            self.retire_launcher()
            launcher = None
        if launcher is None:
            launcher = self.launcher = self._start_launcher(profile)
            if launcher is None:
                return 0
        procs = job.limits.get("cgroup_procs") or []
        spec = json.dumps({**job.spec(), "procs": procs}).encode("utf-8")
        if len(spec) > _LAUNCH_SPEC_MAX:
            return 0
        try:
            # A job may have stopped it in the instant it ran as the job's uid; never wait.
            os.kill(launcher.pid, signal.SIGCONT)
            socket.send_fds(launcher.sock, [spec], list(job.stdio))
            ready, _, _ = select.select([launcher.sock], [], [], _LAUNCH_REPLY_S)
            reply = launcher.sock.recv(4) if ready else b""
        except OSError:
            reply = b""
        if len(reply) != 4:
            self.retire_launcher()
            return 0
        return int(struct.unpack(">i", reply)[0])

    def _start_launcher(self, profile: tuple[tuple[int, int], ...]) -> _Launcher | None:
        """Fork a launcher for jobs with these rlimits; None when it does not come up."""
        homes = []
        for parent in self.cgroup_dirs.values():
            home = os.path.join(parent, "launcher")  # a leaf of its own (v2: no inner procs)
            try:
                os.mkdir(home)
            except FileExistsError:
                pass
            except OSError:
                return None
            homes.append(os.path.join(home, "cgroup.procs"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _launcher_main(self, theirs, profile, homes)
            finally:
                os._exit(0)
        theirs.close()
        self.ancestors.add(pid)  # never swept as a job process
        ready, _, _ = select.select([ours], [], [], _LAUNCH_REPLY_S)
        try:
            answer = ours.recv(16) if ready else b""
        except OSError:
            answer = b""
        launcher = _Launcher(pid, ours, profile)
        if answer != b"R":
            self.launcher = launcher
            self.retire_launcher()
            self.launcher_ok = False  # this host does not let it set itself up: fork jobs
            return None
        return launcher

    def retire_launcher(self) -> None:
        """Stop using the launcher (killed, reaped); the next job starts a new one."""
        launcher, self.launcher = self.launcher, None
        if launcher is None:
            return
        launcher.sock.close()
        try:
            os.kill(launcher.pid, signal.SIGKILL)
            os.waitpid(launcher.pid, 0)
        except (OSError, ChildProcessError):
            pass
        self.ancestors.discard(launcher.pid)

    def _child(self, job: _Job) -> None:
        code = 127
        try:
            self._enter_job(job, self.preload_vm)
            code = 126
            os.execvpe(job.argv[0], job.argv, job.env)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                code = 127
            try:
                os.write(2, f"sandbox: cannot run {job.argv[0]!r}: {exc.strerror}\n".encode())
            except OSError:
                pass
        finally:
            os._exit(code)

    # .. python fast path .....................................................................

    def fast_python(self, argv: list[str], env: dict[str, str]) -> list[str] | None:
        """``[mode, target, *args]`` when ``argv`` runs this very interpreter plainly.

        Such jobs run in a fork of the zygote (a clean copy of this interpreter made before any
        job data arrived) instead of a fresh interpreter: no start-up cost. Anything unusual
        (flags, another interpreter, PYTHON* variables that change start-up) execs as usual.
        """
        if self.zygote is None or len(argv) < 2:
            return None
        key = (argv[0], env.get("PATH", ""))
        same = self._is_us.get(key)
        if same is None:
            exe = argv[0]
            if "/" not in exe:
                for folder in key[1].split(os.pathsep):
                    candidate = os.path.join(folder or ".", exe)
                    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                        exe = candidate
                        break
            same = os.path.realpath(exe) == self.python_real
            writable = (self.root, "/tmp", "/var/tmp", "/dev/shm")
            folders = key[1].split(os.pathsep) if "/" not in argv[0] else []
            if all(f.startswith("/") and not f.startswith(writable) for f in folders):
                self._is_us[key] = same  # read-only system folders only: the answer holds
        if not same:
            return None
        if any(k.startswith("PYTHON") and k not in _FAST_ENV for k in env):
            return None
        if argv[1] in ("-c", "-m") and len(argv) >= 3:
            return [argv[1], *argv[2:]]
        if not argv[1].startswith("-"):
            return ["file", *argv[1:]]
        return None

    def start_zygote(self, preload: str = "", preload_timeout: float = 120.0) -> None:
        """Fork the zygote now, while this process holds no job data at all.

        ``preload`` (the runtime's preload source, see :func:`_run_preload`) runs in the
        zygote before it serves; this waits for it, so a job's deadline never pays for it.
        A preload that fails leaves no zygote and sets ``preload_error`` (sent in ``hello``).
        """
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                for fd in {self.rfd, self.wfd}:
                    os.close(fd)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                if preload:
                    problem = _run_preload(preload)
                    # What the preload printed stays the zygote's: unflushed, every job (a
                    # fork) would inherit the buffer and write it into its own stdout.
                    for stream in (sys.stdout, sys.stderr):
                        try:
                            stream.flush()
                        except (OSError, ValueError):
                            pass
                    if problem is None and self.huge_pages:
                        _collapse_huge_pages()
                    self.preload_vm = _vm_size()
                    answer = b"R%d" % self.preload_vm
                    theirs.sendall(answer if problem is None else b"E" + problem.encode()[:4000])
                    if problem is not None:
                        return
                self._zygote_loop(theirs)
            finally:
                os._exit(0)
        theirs.close()
        self.ancestors.add(pid)  # never swept as a job process
        if preload:
            readable, _, _ = select.select([ours], [], [], preload_timeout)
            answer = ours.recv(4096) if readable else b""
            if answer[:1] != b"R":
                detail = answer[1:].decode("utf-8", "replace") or "no answer"
                self.preload_error = f"runtime preload failed: {detail}"
                ours.close()
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                return
            # Jobs that fork+exec the runtime's interpreter (the zygote gone) pay its baseline
            # themselves: they get the same allowance above it as fast-path jobs.
            self.preload_vm = int(answer[1:] or b"0")
        self.zygote = ours
        self.zygote_pid = pid

    def warm_zygote(self, encoded: Any) -> _WarmZygote | None:
        """The warm zygote for a job's ``preload``, started on first use; None to use the zygote.

        ``preload`` (``{"sha": h}`` for a kept file, or ``{"data": .., "keep": h}``) is Python
        source from the host, trusted like a runtime's preload: a domain's constant harness
        (code.tests' judge modules), never a job's file. It runs once, as the runner's user,
        in a fork of the zygote (which never holds job data), and every job that names it is
        then a fork of that process: the job skips loading the harness itself. Nothing else
        changes for the job: it gets its session, rlimits, cgroup, seccomp filter and uid
        exactly as a fork of the zygote does, and a job never runs in a process that ran
        another job. At most :data:`WARM_ZYGOTES` are kept (the oldest goes); one whose
        preload fails is never tried again on this runner, and a job falls back to the zygote
        whenever a warm zygote is missing, refused or gone (same result, slower).

        Raises:
            RequestError: ``preload`` is not such an object, or its bytes do not match ``h``.
        """
        if not isinstance(encoded, dict):
            raise RequestError("bad_request", "preload must be {'sha': h} or {'data':..,'keep': h}")
        digest = str(encoded.get("sha") or encoded.get("keep") or "")
        if self.zygote is None or not digest or digest in self.warm_refused:
            return None
        warm = self.warm.pop(digest, None)
        if warm is not None:
            self.warm[digest] = warm  # most recently used last
            return warm
        if "sha" in encoded:
            data = self.kept.get(digest)
            if data is None:
                return None  # not kept (over the limit): the zygote serves this job
        else:
            data = _request_bytes(encoded.get("data"), "preload")
            if hashlib.sha256(data).hexdigest() != digest:
                raise RequestError("bad_request", "preload does not match its hash")
            if digest not in self.kept and self.kept_bytes + len(data) <= self.keep_limit:
                self.kept[digest] = data
                self.kept_bytes += len(data)
        while len(self.warm) >= WARM_ZYGOTES:
            self.drop_warm(next(iter(self.warm.values())))
        warm = self._start_warm(digest, data)
        # The zygote reaped any warm zygote that died on its own while it forked this one:
        # forget those now, before a job could be given a pid of theirs (which the sweep
        # would then skip as one of ours).
        for known in list(self.warm.values()):
            if _is_zombie(known.pid):  # also true when it is gone
                self.drop_warm(known)
        if warm is None:
            self.warm_refused.add(digest)
        else:
            self.warm[digest] = warm
        return warm

    def _start_warm(self, digest: str, source: bytes) -> _WarmZygote | None:
        """Have the zygote fork a warm zygote that runs ``source``; None when it fails."""
        assert self.zygote is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        source_r, source_w = os.pipe()
        try:
            socket.send_fds(self.zygote, [b"P"], [theirs.fileno(), source_r])
        except OSError:
            self.zygote = None
        finally:
            theirs.close()
            os.close(source_r)
        try:
            if self.zygote is not None:
                _write_all(source_w, source)
        except OSError:
            pass  # the warm zygote died early: it sends no ready line
        finally:
            os.close(source_w)
        reply = _recv_exact(self.zygote, 4) if self.zygote is not None else b""
        if len(reply) != 4:
            self.zygote = None
            ours.close()
            return None
        (pid,) = struct.unpack(">i", reply)
        self.ancestors.add(pid)  # never swept as a job process
        readable, _, _ = select.select([ours], [], [], WARM_START_S)
        answer = ours.recv(64) if readable else b""
        if answer[:1] != b"R":
            ours.close()
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            return None
        return _WarmZygote(ours, pid)

    def drop_warm(self, warm: _WarmZygote) -> None:
        """Stop using ``warm``: its zygote (the parent) reaps it."""
        for digest, known in list(self.warm.items()):
            if known is warm:
                del self.warm[digest]
        self.release_spare(warm.sock)
        warm.sock.close()
        try:
            os.kill(warm.pid, signal.SIGKILL)
        except OSError:
            pass
        self.ancestors.discard(warm.pid)  # a zombie until the zygote reaps it: never reused

    def _fork_warm(self, sock: socket.socket, their_fd: int, source_fd: int) -> None:
        """In the zygote: fork a warm zygote (see :meth:`warm_zygote`) and report its pid."""
        while True:  # warm zygotes that are gone: the zygote is their parent
            try:
                gone, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if gone == 0:
                break
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                theirs = socket.socket(fileno=their_fd)
                chunks = []
                while True:
                    chunk = os.read(source_fd, 1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
                os.close(source_fd)
                problem = _run_preload(b"".join(chunks).decode("utf-8"))
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except (OSError, ValueError):
                        pass
                self.preload_vm = _vm_size()
                answer = b"R%d" % self.preload_vm
                theirs.sendall(answer if problem is None else b"E" + problem.encode()[:60])
                if problem is None:
                    self._zygote_loop(theirs, warm=True)
            finally:
                os._exit(0)
        os.close(their_fd)
        os.close(source_fd)
        sock.sendall(struct.pack(">i", pid))

    def _zygote_loop(self, sock: socket.socket, *, warm: bool = False) -> None:
        """Fork a job per ``F`` message (its three stdio fds and its spec pipe), report its
        pid, wait for it and report its end. The zygote (``warm`` false) also forks warm
        zygotes on ``P`` (see :meth:`warm_zygote`); a warm zygote forks jobs only."""
        # What every python job needs, imported once here instead of in each job.
        import atexit  # noqa: F401
        import runpy  # noqa: F401
        import subprocess  # noqa: F401  (1.6 ms per job that starts a program: code.tests' io)
        import threading  # noqa: F401
        import traceback  # noqa: F401  (5-10 ms per failing job that formats its error)
        import types  # noqa: F401
        import zlib  # noqa: F401  (a job that unpacks a precompiled program, as code.tests')

        # Every object so far (the preload's: bpy, numpy) into the permanent generation: a
        # job's collections then never walk them, and never copy the pages their GC headers
        # sit on (render jobs: ~1.5% less CPU, session 20).
        gc.freeze()
        spare: _Spare | None = None
        while True:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 8)
            if message == b"P" and len(fds) == 2 and not warm:
                if spare is not None:  # reaped here, never by _fork_warm's sweep of the gone
                    spare.drop()
                    spare = None
                self._fork_warm(sock, fds[0], fds[1])
                continue
            if message[:1] != b"F" or len(fds) != 4:
                return
            plan = json.loads(message[1:]) if len(message) > 1 else {}
            pid = 0
            if spare is not None:  # the job goes to the spare when it sits in its cgroups
                pid = spare.hand_over(fds) if spare.procs == plan.get("now") else spare.drop()
                spare = None
            if pid == 0:
                pid = os.fork()
                if pid == 0:
                    sock.close()
                    self._fast_child(*fds)
            for fd in fds:
                os.close(fd)
            sock.sendall(struct.pack(">i", pid))
            if plan.get("next") is not None:  # forked after the job's fds are closed here
                spare = self._fork_spare(sock, [str(p) for p in plan["next"]])
            _, status, usage = os.wait4(pid, 0)
            sock.sendall(
                _ZYGOTE_DONE.pack(status, usage.ru_utime, usage.ru_stime, float(usage.ru_maxrss))
            )

    def _fork_spare(self, sock: socket.socket, procs: list[str]) -> _Spare | None:
        """In a zygote: fork the next job's process now, while the current job runs.

        Joining a cgroup-v1 memory cgroup waits an RCU grace period (9-13 ms of wall time
        per job, measured; twice per render scene) and the fork itself copies the zygote's
        page tables: a spare does both ahead of the job, off its clock. It is a fork of the
        zygote like any job child, made after the current job's fds were closed here, so it
        holds nothing of any job; it joins ``procs`` (cgroups made for the next job, whose
        limits the runner writes before that job starts), says ``R``, and waits for a job's
        four fds (:meth:`_Spare.hand_over`), then runs it exactly as :meth:`_fast_child`.
        It never runs anything else: EOF, a join that fails, or anything unexpected ends
        it, and the zygote forks the job afresh."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            try:
                sock.close()
                ours.close()
                for path in procs:
                    with open(path, "w") as handle:
                        handle.write(str(os.getpid()))
                    _JOINED.add(path)
                theirs.sendall(b"R")
                message, fds, _, _ = socket.recv_fds(theirs, 16, 8)
                theirs.close()
                if message == b"G" and len(fds) == 4:
                    self._fast_child(*fds)  # never returns
            finally:
                os._exit(1)
        theirs.close()
        return _Spare(pid, ours, procs)

    def _fast_child(self, in_r: int, out_w: int, err_w: int, spec_r: int) -> None:
        code = 1
        try:
            chunks = []
            while True:
                chunk = os.read(spec_r, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(spec_r)
            spec = json.loads(b"".join(chunks).decode("utf-8"))
            stdio = (in_r, out_w, err_w)
            job = _Job(
                [], {}, str(spec["cwd"]), dict(spec["limits"]), float(spec["timeout"]), stdio
            )
            self._enter_job(job, self.preload_vm)
            _set_dumpable(1)  # a normal process of the job uid, visible to the sweep
            code = _run_python(list(spec["fast"]), dict(spec["env"]))
        finally:
            os._exit(code)

    def _supervise(
        self,
        pid: int,
        stdin_data: bytes,
        in_w: int,
        out_r: int,
        err_r: int,
        deadline: float,
        cap: int,
        via: socket.socket | None = None,
        window: CpuWindow | None = None,
    ) -> dict[str, Any]:
        """Collect the job's output until it is over; ``via``: the zygote's or launcher's
        socket when that process forked the job (it reports the job's end), else None.
        ``window``: the CPUs' state at the job's start; at the wall deadline, before the
        kill, it decides whether the job was starved (``starvation`` in the result)."""
        via_zygote = via is not None
        sel = selectors.DefaultSelector()
        buffers = {out_r: bytearray(), err_r: bytearray()}
        truncated = False
        timed_out = False
        status: int | None = None
        usage: Any = None
        pending = memoryview(stdin_data)
        for fd in (in_w, out_r, err_r):
            os.set_blocking(fd, False)
        sel.register(out_r, selectors.EVENT_READ)
        sel.register(err_r, selectors.EVENT_READ)
        sel.register(self.wake_r, selectors.EVENT_READ)
        zygote_fd = -1
        if via is not None:
            zygote_fd = via.fileno()
            sel.register(zygote_fd, selectors.EVENT_READ)
        if pending:
            sel.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
            in_w = -1
        open_pipes = 2
        leftover = -1
        drain_until: float | None = None
        starvation: dict[str, Any] | None = None
        while open_pipes or status is None:
            now = time.monotonic()
            if status is None and now >= deadline:
                if window is not None:  # measured while the job is still there to measure
                    starvation = window.verdict(self._job_members(pid))
                    if starvation["starved"] and now < window.cap:
                        deadline = min(window.cap, now + window.step)  # see STARVE_GRACE
                        continue
                timed_out = True
                self._kill_group(pid)
                status, usage = self._reap_fast(via) if via is not None else self._reap(pid)
                leftover = self.sweep(pid)
                drain_until = time.monotonic() + 0.5
                continue
            if drain_until is not None and now >= drain_until:
                break
            limit = (deadline if status is None else (drain_until or now + 0.5)) - now
            for key, _ in sel.select(max(0.0, limit)):
                fd = int(key.fd)
                if fd == zygote_fd:
                    sel.unregister(zygote_fd)
                    zygote_fd = -1
                    if status is None:
                        status, usage = self._reap_fast(via)
                        leftover = self.sweep(pid)
                        drain_until = time.monotonic() + 0.5
                    continue
                if fd == self.wake_r:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                    continue
                if fd == in_w:
                    try:
                        written = os.write(in_w, pending[: 1 << 16])
                        pending = pending[written:]
                    except BlockingIOError:
                        continue
                    except OSError:
                        pending = memoryview(b"")
                    if not pending:
                        sel.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                    continue
                try:
                    chunk = os.read(fd, _READ_CHUNK)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    sel.unregister(fd)
                    open_pipes -= 1
                    continue
                buffer = buffers[fd]
                room = cap - len(buffer)
                if room > 0:
                    buffer += chunk[:room]
                if len(chunk) > room:
                    truncated = True
            if status is None and not via_zygote:
                waited = os.wait4(pid, os.WNOHANG)
                if waited[0] == pid:
                    status, usage = waited[1], waited[2]
                    # The job is over once its main process is: stragglers holding the pipes
                    # open (background children, escaped daemons) are killed, not waited for.
                    leftover = self.sweep(pid)
                    drain_until = time.monotonic() + 0.5
        if leftover < 0:
            leftover = self.sweep(pid)
        sel.close()
        for fd in (in_w, out_r, err_r):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if status is None:
            status, usage = self._reap_fast(via) if via is not None else self._reap(pid)
        return {
            "status": status,
            "usage": usage,
            "stdout": bytes(buffers[out_r]),
            "stderr": bytes(buffers[err_r]),
            "truncated": truncated,
            "timed_out": timed_out,
            "leftover": leftover,
            "starvation": starvation,
        }

    @staticmethod
    def _kill_group(pgid: int) -> None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass

    @staticmethod
    def _reap(pid: int) -> tuple[int, Any]:
        for _ in range(200):
            try:
                waited = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                return (signal.SIGKILL, None)
            if waited[0] == pid:
                return waited[1], waited[2]
            time.sleep(0.01)
        return (signal.SIGKILL, None)

    def _reap_fast(self, via: socket.socket | None) -> tuple[int, Any]:
        """The zygote's (or launcher's) report on the job it forked: (wait status, usage)."""
        if via is not None:
            ready, _, _ = select.select([via], [], [], 5.0)
            data = _recv_exact(via, _ZYGOTE_DONE.size) if ready else b""
            if len(data) == _ZYGOTE_DONE.size:
                status, utime, stime, maxrss = _ZYGOTE_DONE.unpack(data)
                return status, _Usage(utime, stime, maxrss)
            # Out of step with us: never use it again.
            if via is self.zygote:
                self.zygote = None
            elif any(via is w.sock for w in self.warm.values()):
                self.drop_warm(next(w for w in self.warm.values() if via is w.sock))
            elif self.launcher is not None and via is self.launcher.sock:
                self.retire_launcher()
        return signal.SIGKILL, None

    def _ancestors(self) -> set[int]:
        seen = {1, os.getpid()}
        pid = os.getppid()
        while pid > 1 and pid not in seen:
            seen.add(pid)
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    pid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        return seen

    def _job_members(self, pid: int) -> list[int]:
        """The processes of the running job whose main process is ``pid``: its cgroup's
        members, else every job-uid process (root runner or private PID namespace), else
        its session (``setsid`` made ``pid`` the session id). ``pid`` itself always: on a
        starved machine the job's first process may not have run far enough to join its
        cgroup or take the job uid."""
        if self.job_cgroup:
            found = _cg_members(self.job_cgroup[0])
        elif (self.is_root and self.job_uid != 0) or self.private_pids:
            found = self._job_pids()
        else:
            found = []
            for name in os.listdir("/proc"):
                if name.isdigit():
                    fields = _stat_fields(f"/proc/{name}/stat")
                    if len(fields) > 3 and fields[3] == str(pid):
                        found.append(int(name))
        return sorted(set(found) | {pid})

    def _job_pids(self) -> list[int]:
        """Processes that belong to jobs: the job uid (root runner) or anything but us."""
        found: list[int] = []
        me = os.getpid()
        try:
            names = os.listdir("/proc")
        except OSError:
            return found
        for name in names:
            if not name.isdigit():
                continue
            pid = int(name)
            if pid == me or pid in self.ancestors:
                continue
            uid = _real_uid(pid)
            if uid is None:
                continue
            if self.is_root and self.job_uid != 0:
                if uid == self.job_uid:
                    found.append(pid)
            elif self.private_pids and uid == os.getuid():
                found.append(pid)
        return found

    def sweep(self, pgid: int | None) -> int:
        """Kill every process of the job; returns how many survived (a tamper sign).

        During a job that has cgroups of its own (``pgid`` given), their member list is
        the job, every process it started included (none can leave: the cgroup files are
        root's): one read instead of a walk over ``/proc``. At the end of a session
        (``pgid`` None) the full walk by uid runs as well.
        """
        if pgid is not None:
            self._kill_group(pgid)
            if self.job_cgroup:
                path = self.job_cgroup[0]
                survivors = self._kill_until_gone(
                    functools.partial(_cg_members, path),
                    rounds=50,
                    pause=0.002,
                    kill_all=functools.partial(_cg_write, path, "cgroup.kill", "1", optional=True),
                )
                return len(survivors)
        if not (self.is_root and self.job_uid != 0) and not self.private_pids:
            self._reap_children()
            return 0
        # Killed zombies only wait for their reaper (init); they hold nothing.
        survivors = self._kill_until_gone(
            lambda: [pid for pid in self._job_pids() if not _is_zombie(pid)],
            rounds=50,
            pause=0.002,
        )
        return len(survivors)

    def _kill_until_gone(
        self,
        members: Callable[[], list[int]],
        *,
        rounds: int,
        pause: float,
        kill_all: Callable[[], bool] | None = None,
    ) -> list[int]:
        """SIGKILL every pid ``members()`` lists (or ``kill_all()`` them at once, when it
        returns True), reap, and look again, until none is left or ``rounds`` have passed;
        returns the survivors. A job's processes can fork while they are being killed, so
        one pass is never enough: the job cgroup's teardown and the sweep both loop here."""
        left = members()
        for _ in range(rounds):
            if not left:
                break
            if kill_all is None or not kill_all():
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            self._reap_children()
            time.sleep(pause)
            left = members()
        self._reap_children()
        return left

    @staticmethod
    def _reap_children() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    # .. files ..............................................................................

    def resolve(self, relative: str, *, must_exist: bool = False) -> str:
        """A path inside the work dir; every existing component must be a real directory."""
        assert self.workdir is not None
        if relative.startswith("/") or "\x00" in relative:
            raise RequestError("bad_path", f"path must be relative: {relative!r}")
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise RequestError("bad_path", f"path escapes the work dir: {relative!r}")
        path = self.workdir
        for part in parts:
            path = os.path.join(path, part)
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                if must_exist:
                    raise RequestError("not_found", f"no such directory: {relative!r}") from None
                continue
            if stat.S_ISLNK(info.st_mode):
                raise RequestError("bad_path", f"path goes through a symlink: {relative!r}")
        return path

    def _chown_job(self, path: str) -> None:
        if self.is_root:
            os.lchown(path, self.job_uid, self.job_gid)

    def _ensure_dir(self, path: str, readonly: bool) -> None:
        """Make ``path`` a real directory the job cannot remove entries from (root-owned)."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o555 if readonly else 0o1777)
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            self._ensure_dir(path, readonly)
            return
        if self.is_root and info.st_uid != 0:
            # The job made this directory; take it back before trusting it with readonly files.
            os.lchown(path, 0, 0)
            os.chmod(path, 0o1777)

    def write_files(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.workdir is not None
        readonly = bool(request.get("readonly", False))
        files = dict(request.get("files", {}))
        written = 0
        for relative, encoded in files.items():
            target = self.resolve(str(relative))
            parts = [p for p in str(relative).split("/") if p not in ("", ".")]
            if not parts:
                raise RequestError("bad_path", "empty file name")
            path = self.workdir
            for part in parts[:-1]:
                path = os.path.join(path, part)
                self._ensure_dir(path, readonly)
            if os.path.lexists(target):
                if os.path.isdir(target) and not os.path.islink(target):
                    _rmtree(target)
                else:
                    os.unlink(target)
            data = self._file_data(encoded, readonly)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            if readonly:
                os.chmod(target, 0o444)
            else:
                os.chmod(target, 0o644)
                self._chown_job(target)
            written += len(data)
        return {"written": written}

    def _file_data(self, encoded: Any, readonly: bool) -> bytes:
        """A file's bytes: the bytes, ``{"sha": h}`` (kept earlier), or ``{"data": ..,
        "keep": h}`` (keep it for later sessions; read-only files only)."""
        if isinstance(encoded, bytes):
            return encoded
        if not isinstance(encoded, dict):
            raise RequestError("bad_request", "file content must be bytes or an object")
        if "sha" in encoded:
            data = self.kept.get(str(encoded["sha"]))
            if data is None:
                raise RequestError("cache_miss", f"no kept file {encoded['sha']!r}")
            return data
        data = _request_bytes(encoded.get("data"), "file content")
        digest = encoded.get("keep")
        if digest is not None and readonly and str(digest) not in self.kept:
            if hashlib.sha256(data).hexdigest() != digest:
                raise RequestError("bad_request", "kept file does not match its hash")
            if self.kept_bytes + len(data) <= self.keep_limit:
                self.kept[str(digest)] = data
                self.kept_bytes += len(data)
        return data

    def read_file(self, request: dict[str, Any]) -> dict[str, Any]:
        relative = str(request.get("path", ""))
        target = self.resolve(relative)
        max_bytes = int(request.get("max_bytes", 64 << 20))
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise RequestError("not_found", f"no such file: {relative!r}") from None
        except OSError as exc:
            raise RequestError("bad_path", f"cannot open {relative!r}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise RequestError("bad_path", f"not a regular file: {relative!r}")
            if info.st_size > max_bytes:
                raise RequestError("too_large", f"{relative!r} has {info.st_size} bytes")
            chunks: list[bytes] = []
            total = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise RequestError("too_large", f"{relative!r} is over {max_bytes} bytes")
                chunks.append(chunk)
        finally:
            os.close(fd)
        return {"data": b"".join(chunks)}


class _WarmZygote:
    """A zygote with a job's preload run in it (see :meth:`Runner.warm_zygote`)."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid


class _Spare:
    """A zygote's spare job process (see :meth:`Runner._fork_spare`), on the zygote's side."""

    def __init__(self, pid: int, sock: socket.socket, procs: list[str]) -> None:
        self.pid = pid
        self.sock = sock
        self.procs = procs
        """The ``cgroup.procs`` files it joins (the job it may take must have these)."""

    def hand_over(self, fds: list[int]) -> int:
        """Give it a job's four fds; its pid, or 0 when it is gone or not ready in time
        (killed and reaped then: the zygote forks the job afresh)."""
        try:
            ready, _, _ = select.select([self.sock], [], [], _SPARE_READY_S)
            if ready and self.sock.recv(1) == b"R":
                socket.send_fds(self.sock, [b"G"], fds)
                self.sock.close()
                return self.pid
        except OSError:
            pass
        return self.drop()

    def drop(self) -> int:
        """Kill and reap it (a job never went to it); always 0."""
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:  # ChildProcessError included: already reaped
            pass
        return 0


_SPARE_READY_S = 5.0
"""How long a zygote waits for its spare to have joined its cgroups before forking afresh."""
_JOINED: set[str] = set()
"""In a spare: the ``cgroup.procs`` files it joined before its job came (not joined again)."""


@dataclasses.dataclass
class _Job:
    """One command to start: what every start path (zygote, launcher, fork) needs, with the
    child's ends of its stdin/stdout/stderr pipes."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    limits: dict[str, Any]
    timeout: float
    stdio: tuple[int, int, int]

    def spec(self) -> dict[str, Any]:
        """The JSON-able part, sent to the zygote's child or the launcher."""
        return {name: getattr(self, name) for name in _JOB_SPEC}


_JOB_SPEC = ("argv", "env", "cwd", "limits", "timeout")


def _set_rlimits(settings: tuple[tuple[int, int], ...]) -> None:
    """Set each ``(resource, value)`` as soft and hard limit (soft only under a lower hard)."""
    for which, value in settings:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            soft, hard = resource.getrlimit(which)
            if hard == resource.RLIM_INFINITY or value < hard:
                resource.setrlimit(which, (value, hard))


_LAUNCH_SPEC_MAX = 1 << 16
"""Largest job spec sent to the launcher in one datagram (larger: the fork path)."""
_LAUNCH_REPLY_S = 10.0
"""How long the runner waits for the launcher's answer before it gives up on it."""
_LAUNCH_CPU_SHARE = 0.5
"""The launcher retires once its own CPU time reaches this share of its ``RLIMIT_CPU``."""


class _Launcher:
    """The runner's handle on a launcher process: pid, socket, the rlimits it holds."""

    def __init__(self, pid: int, sock: socket.socket, profile: tuple[tuple[int, int], ...]):
        self.pid = pid
        self.sock = sock
        self.profile = profile


def _launcher_attrs() -> tuple[Any, ...]:
    """What a job of the launcher's real uid could change on it and its spawns inherit
    (nice value, CPU affinity, scheduling policy and priority, I/O priority)."""
    ioprio = -1
    nr = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
    if nr is not None:
        try:
            import ctypes

            ioprio = int(ctypes.CDLL(None, use_errno=True).syscall(nr, 1, 0))  # IOPRIO_WHO_PROCESS
        except (OSError, AttributeError):
            pass
    return (
        os.getpriority(os.PRIO_PROCESS, 0),
        frozenset(os.sched_getaffinity(0)),
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
        ioprio,
    )


_SPAWN_SIGDEF = tuple(
    s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)
)


def _launcher_main(
    runner: Runner, sock: socket.socket, profile: tuple[tuple[int, int], ...], homes: list[str]
) -> None:
    """The launcher: a process forked from the runner that starts non-python jobs.

    Why: ``fork`` of the runner copies its page tables, and a Python child touching its
    objects copies pages again before ``exec`` throws them away: ~2-4 ms of CPU per job on a
    2-core host, most of a ``run(["true"])``. ``posix_spawn`` (``vfork`` semantics) copies
    nothing, but can set no rlimits, cgroup, seccomp or uid. So the launcher *is* the job's
    parent state: it holds this profile's rlimits (soft = hard, it cannot raise them
    again, hence one launcher per profile), the seccomp filter with no new privileges,
    ``oom_score_adj`` 1000, no supplementary groups, umask 022 and no ambient capabilities;
    per job it moves into the job's cgroups and, in a fresh thread, sets that thread's
    *real* uid/gid to the job's and spawns with ``POSIX_SPAWN_RESETIDS`` (effective ids :=
    real ids; ``exec`` copies them to the saved ids, so the job holds no root id and no
    capability) and ``setsid``; then it goes back to its own cgroups.

    Only that short-lived thread ever has the job's real uid: ``kill(-1)``, ``kill(ppid)``,
    ``setpriority`` or ``sched_setaffinity`` on the launcher's pid are checked against its
    main thread (uid 0, non-dumpable) and refused, and each spawn's thread is a fresh copy
    of the main one. The runner still sends ``SIGCONT`` before each use, treats a lost
    launcher as the job's own end (the next job gets a new one), and the launcher compares
    its nice value, affinity, scheduling and I/O priority after each job and retires when
    any changed. It reports each job's pid, then its wait status and usage, as the zygote
    does.
    """
    signal.set_wakeup_fd(-1)
    for sig in _SPAWN_SIGDEF:
        if sig != signal.SIGCHLD:
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError, RuntimeError):
                pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    keep = sock.fileno()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.setgroups([])
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")
    for home in homes:
        with open(home, "w") as handle:
            handle.write(str(os.getpid()))
    _set_rlimits(profile)
    cpu_limit = dict(profile).get(resource.RLIMIT_CPU, 1)
    if runner.seccomp is not None and not runner.seccomp.install():
        return
    if _prctl:
        _prctl[0](47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    os.umask(0o022)
    attrs = _launcher_attrs()
    uid, gid = runner.job_uid, runner.job_gid
    sock.sendall(b"R")
    while True:
        message, fds, _, _ = socket.recv_fds(sock, _LAUNCH_SPEC_MAX, 3)
        if not message or len(fds) != 3:
            return
        try:
            spec = json.loads(message.decode("utf-8"))
            pid, healthy = _launch_in_thread(spec, fds, uid, gid, homes)
        except Exception:  # nothing was spawned: the fork path runs the job
            pid, healthy = 0, False
        for fd in fds:
            os.close(fd)
        sock.sendall(struct.pack(">i", pid))
        if pid:
            _, status, usage = os.wait4(pid, 0)
            sock.sendall(
                _ZYGOTE_DONE.pack(status, usage.ru_utime, usage.ru_stime, float(usage.ru_maxrss))
            )
        if not healthy or _launcher_attrs() != attrs:
            return  # a job changed what later jobs would inherit, or we are not back home
        if time.process_time() > cpu_limit * _LAUNCH_CPU_SHARE:
            return  # near our own CPU limit: the runner starts a fresh launcher


def _launch(
    spec: dict[str, Any], fds: list[int], uid: int, gid: int, homes: list[str]
) -> tuple[int, bool]:
    """Spawn one job from the launcher (see :func:`_launcher_main`): (its pid or 0, whether
    the launcher is back to uid 0 in its own cgroups). Raises only before any spawn."""
    argv = [str(a) for a in spec["argv"]]
    env = {str(k): str(v) for k, v in dict(spec["env"]).items()}
    cwd = str(spec["cwd"])
    procs = [str(p) for p in spec["procs"]]
    in_r, out_w, err_w = fds
    actions: list[tuple[int, ...]] = [
        (os.POSIX_SPAWN_DUP2, in_r, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
        *((os.POSIX_SPAWN_CLOSE, fd) for fd in fds),
    ]
    exe = argv[0]
    paths = [exe] if "/" in exe else [os.path.join(d, exe) for d in os.get_exec_path(env)]
    me = str(os.getpid())
    pid = 0
    try:
        for path in procs:
            with open(path, "w") as handle:  # the job starts in its own cgroups
                handle.write(me)
        _thread_ids(_SETRESGID, gid)
        _thread_ids(_SETRESUID, uid)
        if os.access(cwd, os.X_OK):  # as the job (real ids): it must be able to enter it
            os.chdir(cwd)
            for path in paths:
                try:
                    pid = os.posix_spawn(
                        path,
                        argv,
                        env,
                        file_actions=actions,
                        setsid=True,
                        setsigmask=(),
                        setsigdef=_SPAWN_SIGDEF,
                        resetids=True,
                    )
                    break
                except OSError:
                    continue  # not runnable here: the fork path reports it as it always has
    except Exception:
        if pid:
            return pid, False
        raise
    finally:
        healthy = _launcher_home(homes if procs else [], me)
    return pid, healthy


def _launcher_home(homes: list[str], me: str) -> bool:
    """Back to uid 0, ``/`` and the launcher's own cgroups; False when any step failed."""
    ok = True
    steps: list[Callable[[], object]] = [
        lambda: _thread_ids(_SETRESUID, 0),
        lambda: _thread_ids(_SETRESGID, 0),
        lambda: os.chdir("/"),
    ]
    steps += [functools.partial(_cg_write, h.rsplit("/", 1)[0], "cgroup.procs", me) for h in homes]
    for step in steps:
        try:
            step()
        except OSError:
            ok = False
    if os.getresuid() != (0, 0, 0):
        os._exit(1)  # never serve another job with a job's uid
    return ok


_SETRESUID, _SETRESGID = {"x86_64": (117, 119), "aarch64": (147, 149)}.get(
    os.uname().machine, (-1, -1)
)


def _thread_ids(nr: int, ident: int) -> None:
    """``setres[ug]id(ident, 0, 0)`` for the calling *thread* only (the raw system call:
    glibc's wrapper changes every thread). Raises ``OSError`` when refused."""
    import ctypes

    if not _syscall:
        _syscall.append(ctypes.CDLL(None, use_errno=True).syscall)
    if nr < 0 or _syscall[0](nr, ident, 0, 0) != 0:
        raise OSError(ctypes.get_errno() or errno.ENOSYS, "setres*id refused")


_syscall: list[Any] = []


def _launch_in_thread(
    spec: dict[str, Any], fds: list[int], uid: int, gid: int, homes: list[str]
) -> tuple[int, bool]:
    """:func:`_launch` in a fresh thread: only that thread ever holds the job's real uid,
    so ``kill(-1)`` or ``kill(getppid())`` from the job (checked against the launcher's
    main thread, always uid 0) never reaches the launcher, and whatever a job sets on the
    thread (nice, affinity) ends with it; the next spawn's thread copies the main one."""
    import threading

    out: list[Any] = []

    def run() -> None:
        try:
            out.append(_launch(spec, fds, uid, gid, homes))
        except Exception as exc:
            out.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join()
    if isinstance(out[0], Exception):
        raise out[0]
    return tuple(out[0])  # type: ignore[return-value]


_FAST_ENV = ("PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE", "PYTHONPATH")
_ZYGOTE_DONE = struct.Struct(">iddd")
WARM_ZYGOTES = 2
"""Warm zygotes a runner keeps (one per preload; see ``Runner.warm_zygote``)."""
WARM_START_S = 30.0
"""How long a warm zygote's preload may take before the runner gives up on it."""


class _Usage:
    """The part of ``struct rusage`` the zygote reports for a job it forked."""

    def __init__(self, utime: float, stime: float, maxrss: float) -> None:
        self.ru_utime = utime
        self.ru_stime = stime
        self.ru_maxrss = maxrss


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _exit_status(code: object) -> int:
    """What ``python3`` exits with for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 1


def _run_python(fast: list[str], env: dict[str, str]) -> int:
    """Run ``python3 -c/-m/script`` semantics in this (already sandboxed) forked interpreter.

    Runs inside the job child after ``_enter_job`` (own session, rlimits, job uid, work dir):
    exactly where ``execvpe(python3, ...)`` would have started a fresh interpreter.
    """
    import atexit
    import builtins
    import runpy
    import threading
    import types

    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    # What a fresh CPython sets up at start: SIGPIPE and SIGXFSZ ignored (so a closed pipe or
    # an oversized file is an OSError, not a silent death), SIGINT -> KeyboardInterrupt.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mode, target, args = fast[0], fast[1], fast[2:]
    code = 0
    try:
        if mode == "-c":
            sys.argv = ["-c", *args]
            sys.path[0:0] = ["", *extra]
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = builtins
            sys.modules["__main__"] = main
            # The job's own program, in the sandboxed child: what `python3 -c` would run.
            exec(compile(target, "<string>", "exec"), main.__dict__)  # noqa: S102
        elif mode == "-m":
            sys.argv = [target, *args]
            sys.path[0:0] = [os.getcwd(), *extra]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[0:0] = [os.path.dirname(os.path.abspath(target)), *extra]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except Exception:
        kind, value, trace = sys.exc_info()
        if value is not None and trace is not None:
            value.__traceback__ = trace.tb_next  # hide this frame, as python3 shows none
            sys.excepthook(kind or type(value), value, trace.tb_next)  # type: ignore[arg-type]
        code = 1
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        try:
            shutdown()
        except Exception:  # a broken thread at exit: python3 reports and exits too
            pass
    try:
        atexit._run_exitfuncs()
    except Exception:
        code = code or 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    return code


def _vm_size() -> int:
    """This process's mapped address space (``VmSize``), in bytes; 0 when unknown."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _run_preload(source: str) -> str | None:
    """Run a runtime's preload code in the zygote; returns None, or why it failed.

    Some runtimes are only fast when a heavy module is already imported and warmed up (the
    ``blender`` runtime: ``import bpy`` ~0.7 s, Cycles' first render ~0.1 s). The runtime's
    definition names that code (``preload`` in its ``runtime.toml``); the host sends it in
    the runner's config, so it is trusted code, never a job's. It runs once in the zygote,
    before any job data exists, as the runner's user; every fast-path job is then a fork of
    the warmed interpreter. It must leave no threads that a fork would need (CPython and
    Blender's task pools recover in the child) and nothing a job could use to reach the
    runner: jobs still get their own session, rlimits, uid and fds as without a preload.
    """
    import atexit

    teardown: list[Any] = []
    register = atexit.register

    def record(function: Any, *args: Any, **kwargs: Any) -> Any:
        teardown.append(function)
        return register(function, *args, **kwargs)

    atexit.register = record  # type: ignore[assignment]
    try:
        exec(compile(source, "<runtime preload>", "exec"), {"__name__": "__verifiers_preload__"})  # noqa: S102
    except (Exception, SystemExit) as exc:  # reported to the host as a broken runtime
        return f"{type(exc).__name__}: {exc}"
    finally:
        atexit.register = register  # type: ignore[assignment]
    # Exit handlers the preload's imports registered are the runtime's teardown, not a job's
    # (bpy: ``addon_utils.disable_all`` and ``cycles.engine_exit``): every job is a fork that
    # ends in ``os._exit``, so freeing Blender's add-ons and Cycles first only costs time
    # (~17 ms of CPU and ~50 ms of wall per job, two jobs per render scene). Handlers a job
    # registers itself still run at its exit, as in a fresh interpreter.
    for function in teardown:
        atexit.unregister(function)
    return None


_MADV_COLLAPSE = 25
_HUGE_PAGE = 2 << 20


def _collapse_huge_pages() -> int:
    """Back a preloaded zygote's anonymous memory with 2 MiB pages; returns bytes asked for.

    Every job is a fork of the zygote, and a fork copies one page-table entry per 4 KiB page
    of the parent's anonymous memory, which the job's exit then tears down again: for the
    blender zygote (~110 MB anonymous after ``import bpy``) that was ~6 ms of CPU in the
    zygote per fork plus faults in every job, two jobs per render scene. A huge page is one
    entry. ``MADV_COLLAPSE`` (Linux 6.1+) builds them in place, whatever the system's THP
    mode (except ``never`` on a mapping), with the same contents; it costs the zygote at
    most the unused rest of each 2 MiB range it fills (~2 MB for blender).

    Isolation is unchanged: the pages stay copy-on-write between the zygote and every job,
    and a job that writes into a shared huge page gets its own copy of the 4 KiB page it
    wrote (the kernel splits the shared mapping first), never a view of another job's.
    Best effort, once, before any job exists: no ``ctypes``, an older kernel, or a refusal
    leaves the memory as it was and changes only speed.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as handle:
            maps = handle.read().splitlines()
    except (OSError, AttributeError, ImportError):
        return 0
    asked = 0
    for line in maps:
        fields = line.split()
        name = fields[5] if len(fields) > 5 else ""
        if len(fields) < 5 or not fields[1].startswith("rw") or name not in ("", "[heap]"):
            continue  # private anonymous memory only (file pages are not copied at fork)
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start = (low + _HUGE_PAGE - 1) & ~(_HUGE_PAGE - 1)
        end = high & ~(_HUGE_PAGE - 1)
        if end - start >= _HUGE_PAGE and libc.madvise(start, end - start, _MADV_COLLAPSE) == 0:
            asked += end - start
    return asked


def _close_other_fds() -> None:
    """Close every fd above 2. Lists the open ones: ``closerange`` falls back to one
    ``close`` per number where seccomp hides ``close_range`` (Docker), ~65k syscalls."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        os.closerange(3, 65536)
        return
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass


def _real_uid(pid: int) -> int | None:
    """Real uid of ``pid`` from its status file (``/proc/<pid>`` itself shows root as the
    owner of non-dumpable processes, which would hide them from a sweep)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


_SHARED_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_OPEN_FDS = 32
"""Most directory fds ``_rmtree`` holds at once, however deep the tree."""


class _Level:
    """One directory on ``_rmtree``'s path: its fd (or -1 once closed), its name in its
    parent, its inode, and the subdirectories still to remove."""

    __slots__ = ("fd", "ino", "name", "pending")

    def __init__(self, fd: int, name: str, ino: int, pending: list[str]) -> None:
        self.fd = fd
        self.name = name
        self.ino = ino
        self.pending = pending


def _empty_out(fd: int) -> list[str]:
    """Unlink every non-directory entry of the open directory ``fd``; its subdirectories."""
    try:
        os.chmod(fd, 0o700)  # a job may have made it unreadable or unwritable
    except OSError:
        pass
    subdirs: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _rmtree(path: str) -> None:
    """Remove a tree without following symlinks, however deep or wide it is.

    A job decides the shape of what it leaves behind, so this is iterative (a chain deeper
    than the recursion limit must not raise ``RecursionError``), works relative to directory
    fds (paths deeper than ``PATH_MAX`` are fine), holds at most ``_OPEN_FDS`` fds (climbing
    back through ``..``, checked by inode), lists each directory once, and fixes modes the job
    removed. Linear in the number of entries. Raises ``OSError`` when something cannot be
    removed; callers treat that as a tainted runner.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    parent = os.path.dirname(path.rstrip("/")) or "/"
    top_fd = os.open(parent, _OPEN_DIR)
    stack: list[_Level] = []
    try:
        fd = os.open(os.path.basename(path.rstrip("/")), _OPEN_DIR, dir_fd=top_fd)
        stack.append(_Level(fd, os.path.basename(path.rstrip("/")), os.fstat(fd).st_ino, []))
        stack[-1].pending = _empty_out(fd)
        while stack:
            level = stack[-1]
            if level.pending:
                name = level.pending.pop()
                child = os.open(name, _OPEN_DIR, dir_fd=level.fd)
                stack.append(_Level(child, name, os.fstat(child).st_ino, []))
                if len(stack) > _OPEN_FDS:
                    old = stack[-1 - _OPEN_FDS]
                    if old.fd >= 0:
                        os.close(old.fd)
                        old.fd = -1
                stack[-1].pending = _empty_out(child)
                continue
            stack.pop()
            if stack:
                above = stack[-1]
                if above.fd < 0:  # closed to bound the fds: climb back to it
                    above.fd = os.open("..", _OPEN_DIR, dir_fd=level.fd)
                    if os.fstat(above.fd).st_ino != above.ino:
                        raise OSError(errno.ESTALE, "directory moved during removal", path)
                os.close(level.fd)
                os.rmdir(level.name, dir_fd=above.fd)
            else:
                os.close(level.fd)
                os.rmdir(level.name, dir_fd=top_fd)
            level.fd = -1
    finally:
        for level in stack:
            if level.fd >= 0:
                os.close(level.fd)
        os.close(top_fd)


BOOTSTRAP = (
    "import os\n"
    "def r(n):\n"
    " b=b''\n"
    " while len(b)<n:\n"
    "  c=os.read(0,n-len(b))\n"
    "  if not c:raise SystemExit(1)\n"
    "  b+=c\n"
    " return b\n"
    "exec(compile(r(int.from_bytes(r(4),'big')),'runner.py','exec'),{'__name__':'__main__'})\n"
)
"""``python3 -I -c BOOTSTRAP``: reads one frame (this file's source) from stdin and runs it; for
hosts that cannot put a file into the sandbox. It reads exactly the frame, so the config frame
that follows is the runner's to read."""


def _read_config(rfd: int) -> dict[str, Any]:
    """The host's first frame: the runner's config (see the module docstring)."""
    header = _read_exact(rfd, HEADER.size)
    if header is None:
        raise SystemExit("runner: the host closed the channel before sending the config")
    (size,) = HEADER.unpack(header)
    body = _read_exact(rfd, size) if size <= MAX_FRAME else None
    if body is None:
        raise SystemExit("runner: the config frame is truncated or oversized")
    return decode_body(body)


def _pin(cpus: Any) -> None:
    """Run this runner, and so its zygotes and every job they fork, on the host's ``cpus``
    (its home, sandbox/_cpus.py). Before the zygote starts: nothing forked earlier escapes.
    A host that refuses keeps the runner unpinned (``hello`` says which CPUs it has)."""
    if not cpus:
        return
    try:
        os.sched_setaffinity(0, {int(cpu) for cpu in cpus})
    except (OSError, ValueError, TypeError):
        pass


def main(argv: list[str]) -> int:
    """Entry point: ``python3 -I runner.py [--connect SOCKET]``; the config is the first frame."""
    here = globals().get("__file__")
    if here and sys.path and sys.path[0] == os.path.dirname(os.path.abspath(here)):
        del sys.path[0]  # python < 3.11: -I keeps the script's dir; a fast-path job must not
    connect = argv[1] if len(argv) >= 2 and argv[0] == "--connect" else ""
    if connect:
        # The host listens on a unix socket mounted into the container: a direct kernel
        # channel, no engine in the data path. Unlinked by the host once we are connected.
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(connect)
        rfd = wfd = channel.detach()
    else:
        rfd = os.dup(0)
        wfd = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _set_dumpable(0)
    config = _read_config(rfd)
    _pin(config.get("cpus"))
    root = str(config.get("root", "/work"))
    os.makedirs(root, exist_ok=True)
    runner = Runner(config, rfd, wfd)
    if config.get("python_fastpath", True):
        runner.start_zygote(
            str(config.get("preload") or ""), float(config.get("preload_timeout", 120.0))
        )
    return runner.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
