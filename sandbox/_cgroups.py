"""Per-job cgroups for the local backend: memory and pids limited per job, not per process.

Why: ``RLIMIT_AS`` limits each *process*. A job that forks 20 children holds 20 times its
``memory_mb`` (measured: 1,120 MB with ``memory_mb: 128``), and ``RLIMIT_NPROC`` counts the
uid, not the job. A cgroup counts every process of the job together, with the tmpfs and
shared-memory pages it writes, and its OOM counter says exactly when the job was killed for
memory.

How: the host makes one cgroup per runner under its own cgroup (``verifiers-<pid>-<uid>``, in
the v1 ``memory``, ``pids`` and ``cpuacct`` hierarchies or in the v2 unified one when its
controllers are delegated to us) and hands it to the runner (bind-mounted into bubblewrap). The runner makes
one child cgroup per job with the job's limits; the job's first process joins it before it
runs anything and before it drops to the job uid. The runner kills whatever is left in it and
removes it after the job; the host removes the runner's cgroup when the runner is recycled.

Where the host offers no writable cgroup (an unprivileged user without delegation), nothing
here applies and the runner falls back to rlimits per process; ``verifiers sandbox check``
says which holds.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass, field

__all__ = ["JOB_CPU_VIEW", "RunnerCgroup", "cgroup_support", "make_runner_cgroup"]

JOB_CPU_VIEW = "/run/verifiers-cpu"
"""Where a job under bubblewrap sees the CPU account dirs of its runner's job cgroups
(read-only): the code judge applies the starvation rule to its own time limits with it."""
_KINDS = ("memory", "pids")
"""What a v2 host must delegate to us (``cpu.stat``, the CPU account, is in every v2 cgroup)."""
_V1_KINDS = (*_KINDS, "cpuacct")
"""The v1 hierarchies a job gets a cgroup in: ``memory`` required, the others where writable.
``cpuacct`` only counts: ``cpuacct.usage`` holds the CPU of every task that ever ran in the
job's cgroup, dead ones too, which the wall backstop's starvation check needs
(docs/sandbox.md, "Machine load is never the model's score")."""


@dataclass
class RunnerCgroup:
    """The cgroups of one runner: host paths per hierarchy and the version."""

    version: int
    dirs: dict[str, str] = field(default_factory=dict)
    """Hierarchy name (``memory``/``pids`` for v1, ``unified`` for v2) -> host path."""

    def runner_config(self, mount: str | None) -> dict[str, object]:
        """The runner's ``cgroup`` config; ``mount``: where the dirs appear inside bwrap."""
        dirs = {k: (f"{mount}/{k}" if mount else path) for k, path in self.dirs.items()}
        config: dict[str, object] = {"version": self.version, "dirs": dirs}
        account = self._account_kind()
        if account:  # where jobs see the CPU account dirs (the runner's own mount is private)
            config["cpu_view"] = JOB_CPU_VIEW if mount else self.dirs[account]
        return config

    def bwrap_binds(self, mount: str) -> list[str]:
        """bubblewrap arguments that show the runner its cgroups at ``mount``, and jobs the
        CPU account of theirs, read-only, at :data:`JOB_CPU_VIEW`."""
        argv: list[str] = []
        for kind, path in self.dirs.items():
            argv += ["--bind", path, f"{mount}/{kind}"]
        account = self._account_kind()
        if account:
            argv += ["--ro-bind", self.dirs[account], JOB_CPU_VIEW]
        return argv

    def _account_kind(self) -> str:
        """The hierarchy whose job cgroups hold a CPU account (``""``: none)."""
        return "unified" if self.version == 2 else ("cpuacct" if "cpuacct" in self.dirs else "")

    def remove(self) -> None:
        """Kill anything left in the runner's cgroups and remove them (children first)."""
        for path in self.dirs.values():
            _remove_tree(path)


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller (``""`` key: the v2 path)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) != 3:
                    continue
                for controller in parts[1].split(",") if parts[1] else [""]:
                    found[controller] = parts[2]
    except OSError:
        pass
    return found


def _mounts() -> dict[str, str]:
    """Mount point per v1 controller (``""``: the v2 unified mount)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                fields, extra = left.split(), right.split()
                if len(fields) < 5 or len(extra) < 3:
                    continue
                root, point = fields[3], fields[4]
                if root != "/":
                    continue  # a bind of a sub-cgroup: paths in /proc/self/cgroup won't match
                if extra[0] == "cgroup2":
                    found.setdefault("", point)
                elif extra[0] == "cgroup":
                    for option in extra[2].split(","):
                        if option in _V1_KINDS:
                            found.setdefault(option, point)
    except OSError:
        pass
    return found


def _v1_parents() -> dict[str, str]:
    own, mounts = _own_cgroups(), _mounts()
    parents: dict[str, str] = {}
    for kind in _V1_KINDS:
        if kind in own and kind in mounts:
            path = os.path.join(mounts[kind], own[kind].lstrip("/"))
            if os.path.isdir(path) and os.access(path, os.W_OK):
                parents[kind] = path
    return parents


def _v2_parent() -> str:
    own, mounts = _own_cgroups(), _mounts()
    if "" not in own or "" not in mounts or len([k for k in own if k]) > 0:
        return ""  # not a pure v2 host (a hybrid host's unified tree has no controllers)
    path = os.path.join(mounts[""], own[""].lstrip("/"))
    try:
        with open(os.path.join(path, "cgroup.subtree_control")) as handle:
            enabled = set(handle.read().split())
    except OSError:
        return ""
    if not set(_KINDS) <= enabled or not os.access(path, os.W_OK):
        return ""  # memory/pids not delegated to our children: nothing we may use
    return path


@functools.cache
def cgroup_support() -> tuple[int, tuple[str, ...]]:
    """(version, controllers) the local backend can limit per job here; (0, ()) for none."""
    probe = make_runner_cgroup("probe")
    if probe is None:
        return 0, ()
    try:
        return probe.version, tuple(sorted(probe.dirs))
    finally:
        probe.remove()


def make_runner_cgroup(tag: str) -> RunnerCgroup | None:
    """Make ``verifiers-<pid>-<tag>`` under our own cgroup(s); None where we cannot."""
    # A random part too: a name must never be shared with a live runner's cgroup (another
    # provider in this process with the same tag), since removing one kills its members.
    name = f"verifiers-{os.getpid()}-{tag}-{secrets.token_hex(4)}"
    v2 = _v2_parent()
    if v2:
        path = os.path.join(v2, name)
        try:
            os.mkdir(path)
            with open(os.path.join(path, "cgroup.subtree_control"), "w") as handle:
                handle.write("+memory +pids")
        except OSError:
            _remove_tree(path)
            return None
        return RunnerCgroup(2, {"unified": path})
    made: dict[str, str] = {}
    for kind, parent in _v1_parents().items():
        path = os.path.join(parent, name)
        try:
            os.mkdir(path)
        except FileExistsError:
            continue  # never join a cgroup someone else made
        except OSError:
            continue
        made[kind] = path
    if "memory" not in made:
        for path in made.values():
            _remove_tree(path)
        return None
    return RunnerCgroup(1, made)


def _remove_tree(path: str) -> None:
    """Remove a cgroup and its children, killing their members first (best effort: an empty
    cgroup left behind costs nothing and is not reused)."""
    try:
        children = [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for child in children:
        _remove_tree(child)
    for _ in range(100):
        try:
            with open(os.path.join(path, "cgroup.procs")) as handle:
                members = [int(line) for line in handle if line.strip()]
        except (OSError, ValueError):
            members = []
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
    try:
        os.rmdir(path)
    except OSError:
        pass
