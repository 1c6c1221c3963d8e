"""Drive the Godot fork server through a batch of checks, inside one sandbox job.

Runs *inside* the job (stdlib only, the runtime's ``python3``): ``python3 _forkdrive.py``
in a work dir that holds ``_batch.json`` (the server's files, and the checks: files, the
harness's job, tokens). It reads and deletes it (a child can read what is left in the work
dir), makes the project ``p/`` (``project.godot``, ``_harness.gd``, ``_vfork.gdnlib``) and
starts the engine once as the fork server (the harness with ``GODOT_FORK_OUT`` set: its
``_serve``, the engine initialised, no model file anywhere), and for each check, one at a time:

1. empties ``p/`` but the server's files, ``/tmp`` and ``/dev/shm``; writes the check's files
   (read-only), ``_job.json`` and ``_token``;
2. asks the server for a child (a job number on its stdin); the child jails itself before it
   reads a model file and runs the harness exactly as a fresh engine would;
3. waits for the child's end under the sandbox runner's deadline rule (``timeout_s`` of its
   CPU, or of wall time while it ran at least a quarter of a CPU: a timeout; a child that
   got less at the wall deadline is ``unsure``, re-run by the host in a fresh engine whose
   runner tells a sleeper from a starved job), and kills every process the check left
   behind: this process is the job's child subreaper, so a
   grandchild that outlived its parent (a second engine the model started, in its own session)
   is re-parented here and killed before the next check's files exist; a check that could
   not start by its ``start_by`` (seconds after this driver started) is skipped, and the
   host runs it in a fresh engine;
4. collects what the host would read: the exit status, stdout/stderr (capped), the reports
   and the two states.

The results go to ``_results.json`` (outside ``p/``: a child may write only in ``p/``,
``/tmp`` and ``/dev/shm``). A check's child cannot reach this process or the server: its
Landlock domain scopes signals to itself, ``/proc`` is unreadable, ``ptrace`` fails, and it
holds no fd of either (``vf_enter``). Protocol variables (``GODOT_FORK_*``) are this file's
own, not settings.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

sys.dont_write_bytecode = True  # no __pycache__ beside the driver (a flag would cost the
# runner's python fast path)

# the job cgroup's OOM-kill counter: the sandbox runner's own function, shipped beside this
# file by the host (``_forkbatch.py``: ``rule_source`` cuts it from sandbox/_runner.py), so
# there is one definition of it (only in the job: the type checker cannot see it)
from _forkrules import _oom_kills  # type: ignore[import-not-found]  # noqa: E402

_SERVER_FILES = {"project.godot", "_harness.gd", "_vfork.gdnlib"}
_LEFT = ("_report_a.json", "_report_b.json", "_state0.tscn", "_state1.tscn")
_MAX_LEFT = 32 << 20
_MAX_OUTPUT = 1 << 20
_PR_SET_CHILD_SUBREAPER = 36
_WATCH_S = 0.005
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    """A process's CPU seconds (user + system, all its threads); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


def _memory(pid: int) -> int:
    """A process's private memory (anonymous and shared-memory pages), in bytes."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(("RssAnon:", "RssShmem:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return total


def _shared() -> int:
    """Bytes used in ``/tmp`` and ``/dev/shm`` (tmpfs in the sandbox)."""
    used = 0
    for folder in ("/tmp", "/dev/shm"):
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        used += (st.f_blocks - st.f_bfree) * st.f_frsize
    return used


def _wipe(folder: str, keep: set[str]) -> None:
    for name in os.listdir(folder):
        if name in keep:
            continue
        path = os.path.join(folder, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                for top, dirs, _ in os.walk(path):
                    for d in dirs:
                        os.chmod(os.path.join(top, d), 0o700)
                os.chmod(path, 0o700)
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            pass


def _read(path: str, cap: int) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(cap).decode("utf-8", "replace")
    except OSError:
        return None


def _children(exclude: set[int]) -> list[int]:
    me = str(os.getpid())
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in exclude:
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.append(int(name))
    return found


def _reap_leftovers(server: int) -> int:
    """Kill every process left under this one but the server; how many there were."""
    killed = 0
    for _ in range(200):
        left = _children({server})
        if not left:
            return killed
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    return killed


class _Server:
    def __init__(self, work: str, out: str, fps: int, memory_mb: int) -> None:
        env = dict(os.environ, GODOT_FORK_OUT=out, GODOT_FORK_MEMORY_MB=str(memory_mb))
        self.proc = subprocess.Popen(
            [
                "godot3-server",
                "--path",
                work,
                "--fixed-fps",
                str(fps),
                "-s",
                "res://_harness.gd",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.buffer = b""
        line: str | None = ""
        while line is not None and not line.startswith("forkserver:"):  # the engine's banner
            line = self.line(60.0)
        if line is None or not line.startswith("forkserver: ready"):
            raise RuntimeError(f"the fork server did not start: {line!r}")

    def line(self, timeout: float) -> str | None:
        """The server's next line; None at its end or after ``timeout`` seconds."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace").strip()

    def run(self, number: int, timeout: float, memory: int, share: float) -> tuple[int, int, str]:
        """(exit status, CPU microseconds, how) of check ``number``'s child; ``how`` is
        ``""``, ``"timeout"``, ``"oom"`` or ``"unsure"``.

        The deadline is the sandbox runner's (``CpuWindow``): ``timeout`` seconds of the
        child's CPU are the model's timeout; at ``timeout`` seconds of wall time a child
        that ran at least ``share`` of a CPU is the model's timeout too (the runner never
        calls such a job starved); one that ran less is ``unsure`` (it slept, or the machine
        starved it: only the runner's own evidence tells which), and the host re-runs that
        check in a fresh engine, whose runner decides. Out of memory: its private memory
        plus what appeared in ``/tmp`` and ``/dev/shm`` (tmpfs: charged to the job's memory
        like a fresh engine's) grew past ``memory`` bytes since the fork (watched every few
        ms; the child's address-space limit, set in ``vf_enter``, stops what grows faster),
        or the job cgroup's OOM killer killed a process meanwhile."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"%d\n" % number)
        self.proc.stdin.flush()
        started = (self.line(30.0) or "").split()
        if started[:2] != ["forkserver:", "child"] or int(started[3]) <= 0:
            raise RuntimeError(f"the fork server did not fork: {started!r}")
        child = int(started[3])
        began = time.monotonic()
        kills = _oom_kills()
        base = _memory(child) + _shared()
        how = ""
        done = None
        while done is None:
            done = self.line(_WATCH_S)
            if done is not None:
                break
            if _memory(child) + _shared() - base > memory:
                how = "oom"  # what the job's memory cgroup does to a fresh engine
                break
            cpu = _cpu(child)
            if cpu >= timeout:
                how = "timeout"
                break
            wall = time.monotonic() - began
            if wall >= timeout:
                how = "timeout" if cpu >= share * wall else "unsure"
                break
        if done is None:
            os.kill(child, signal.SIGKILL)
            done = self.line(30.0)
        fields = (done or "").split()
        if fields[:2] != ["forkserver:", "done"]:
            raise RuntimeError(f"the fork server lost check {number}: {done!r}")
        if not how and kills >= 0 and _oom_kills() > kills:
            how = "oom"
        return int(fields[3]), int(fields[4]), how


def main() -> int:
    if os.environ.get("GODOT_FORK_SANDBOX") != "1":
        sys.stderr.write("forkdrive: runs only inside a sandbox job (GODOT_FORK_SANDBOX=1)\n")
        return 2
    begun = time.monotonic()  # start_by counts from here: the host's count began earlier
    root = os.getcwd()
    work, out = os.path.join(root, "p"), os.path.join(root, "o")
    with open("_batch.json", encoding="utf-8") as handle:
        batch = json.loads(handle.read())
    os.unlink("_batch.json")  # the tokens of later checks live in this process only
    os.makedirs(out, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    for name, text in batch["server"].items():
        with open(os.path.join(work, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    results: list[dict[str, Any]] = []
    # /tmp and /dev/shm are the job's own in the sandbox; even so only what appeared after
    # the server started is removed (never run this on a shared host's /tmp)
    shared = {f: set(os.listdir(f)) for f in ("/tmp", "/dev/shm") if os.path.isdir(f)}
    # the child's address-space limit is only the backstop of the watch (a fresh engine's
    # memory is its job's cgroup): a limit it reaches first makes allocations fail, and
    # Godot goes on after a failed allocation (a string bomb would then pass)
    server_started = time.monotonic()
    server = _Server(work, out, int(batch["fps"]), 4 * int(batch["memory_mb"]))
    server_s = time.monotonic() - server_started
    share = float(batch["starve_cpu_share"])
    for number, check in enumerate(batch["checks"]):
        if time.monotonic() - begun > float(check["start_by"]):
            # waited too long behind the checks before it: the host runs it in a fresh
            # engine, so a slow neighbour never eats its deadline
            results.append({"skipped": True})
            continue
        prepared = time.monotonic()
        _wipe(work, _SERVER_FILES)
        for folder, before in shared.items():
            _wipe(folder, before)
        for name, text in check["files"].items():
            path = os.path.join(work, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(path, 0o444)
        with open(os.path.join(work, "_job.json"), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(check["job"]))
        with open(os.path.join(work, "_token"), "w", encoding="utf-8") as handle:
            handle.write(check["token"] + "\n")
        started = time.monotonic()
        status, cpu_us, how = server.run(
            number, float(check["timeout_s"]), int(check["memory_mb"]) << 20, share
        )
        seconds = time.monotonic() - started
        collected = time.monotonic()
        leftovers = _reap_leftovers(server.proc.pid)
        result: dict[str, Any] = {
            "status": status,
            "cpu_us": cpu_us,
            "timed_out": how == "timeout",
            "oom": how == "oom",
            "skipped": how == "unsure",
            "seconds": seconds,
            "leftovers": leftovers,
        }
        for stream in ("out", "err"):
            path = os.path.join(out, f"{number}.{stream}")
            result["std" + stream] = _read(path, _MAX_OUTPUT) or ""
            over = os.path.exists(path) and os.path.getsize(path) > _MAX_OUTPUT
            result["truncated"] = result.get("truncated", False) or over
            if os.path.exists(path):
                os.unlink(path)
        for name in _LEFT:
            result[name] = _read(os.path.join(work, name), _MAX_LEFT)
        # where the driver's time goes (the benchmark's profile): preparing the project,
        # the child, and collecting what it left
        result["phases_s"] = [started - prepared, seconds, time.monotonic() - collected]
        results.append(result)
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    server.proc.wait(30)
    with open("_results.json", "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"server_s": server_s, "checks": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
