"""What the kernel lets this host's sandboxes use: user, network and PID namespaces, cgroup
delegation, seccomp. ``verifiers sandbox check`` prints one row per feature.

Each probe *tries* the feature in a throwaway child (``unshare(2)`` through libc, a cgroup
made and removed) rather than reading a sysctl, because the answer depends on more than one
switch (``user.max_user_namespaces``, Debian's ``kernel.unprivileged_userns_clone``, Ubuntu's
AppArmor ``apparmor_restrict_unprivileged_userns``, a container's seccomp profile, whether
the caller is root). The sysctls are read only to say *why* a probe failed.

What each feature buys (docs/sandbox.md, "What this host gives"):

* user namespaces: bubblewrap as a normal user (and ``unshare`` without root); without
  them and without root, the local backend has no filesystem isolation at all;
* network namespaces: no network for jobs on the local backend;
* PID namespaces: the runner sees only its own jobs and can kill every one of them;
* cgroup delegation: memory and pids limited per job over all its processes, not per
  process (``RLIMIT_AS``) or per uid (``RLIMIT_NPROC``), and the job's CPU counted with its
  dead tasks (v1 ``cpuacct``, v2 ``cpu.stat``), which the starvation check needs;
* seccomp: the runner's filter refuses kernel keyrings (and POSIX mqueues where it cannot
  scrub them) to jobs.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

__all__ = ["HostFeature", "host_features"]

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWPID = 0x20000000


@dataclass(frozen=True)
class HostFeature:
    """One kernel feature: whether it works for this process, and what that means."""

    name: str
    works: bool
    detail: str


def _try_unshare(flags: int, as_uid: int | None = None) -> tuple[bool, str]:
    """``unshare(flags)`` in a forked child (never in this process), optionally after
    dropping to ``as_uid``: (worked, errno text)."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork, never in the child
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report errno through the pipe, never return
        code = 0
        try:
            if as_uid is not None:
                os.setgroups([])
                os.setgid(as_uid)
                os.setuid(as_uid)
            if libc.unshare(flags) != 0:
                code = ctypes.get_errno() or 1
        except Exception:  # no libc symbol: report as not working
            code = 255
        finally:
            os.write(write_end, code.to_bytes(2, "big"))
            os._exit(0)
    os.close(write_end)
    try:
        data = os.read(read_end, 2)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    code = int.from_bytes(data, "big") if len(data) == 2 else 255
    if code == 0:
        return True, ""
    return False, os.strerror(code) if code != 255 else "unshare(2) not available"


def _sysctl(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _userns_why() -> str:
    reasons = []
    if _sysctl("/proc/sys/user/max_user_namespaces") == "0":
        reasons.append("user.max_user_namespaces = 0")
    if _sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        reasons.append("kernel.unprivileged_userns_clone = 0")
    if _sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        reasons.append("kernel.apparmor_restrict_unprivileged_userns = 1")
    return "; ".join(reasons) or "refused (a container's seccomp profile?)"


def _seccomp() -> HostFeature:
    status = ""
    try:
        with open("/proc/self/status") as handle:
            status = handle.read()
    except OSError:
        pass
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "Seccomp" not in fields:
        return HostFeature("seccomp", False, "kernel without seccomp: keyrings stay open to jobs")
    mode = fields["Seccomp"].strip()
    already = " (this process is already filtered: a container)" if mode != "0" else ""
    return HostFeature(
        "seccomp", True, f"filters available{already}; the runner's own report says if it held"
    )


def host_features() -> list[HostFeature]:
    """Probe each feature (a few ms; forks a child per namespace kind)."""
    root = os.geteuid() == 0
    features: list[HostFeature] = []
    works, err = _try_unshare(_CLONE_NEWUSER)
    if root:  # root always may; what matters is whether a normal user (bwrap without root) may
        user_ok, user_err = _try_unshare(_CLONE_NEWUSER, as_uid=65534)
        if user_ok:
            detail = "work, also for unprivileged users (bubblewrap runs without root)"
        else:
            detail = (
                f"root only: unprivileged users are refused ({user_err}: {_userns_why()}); "
                "run the local backend as root, or Docker"
            )
    elif works:
        detail = "work as this user: bubblewrap runs without root"
    else:
        detail = (
            f"refused ({err}: {_userns_why()}): without root, bubblewrap cannot start; the "
            "local backend has only unshare (needs root) or rlimits. Run as root, use Docker, "
            "or allow them (sysctl above)"
        )
    features.append(HostFeature("user namespaces", works, detail))
    # Network and PID namespaces need CAP_SYS_ADMIN: as a normal user, inside a user namespace.
    base = 0 if root else (_CLONE_NEWUSER if works else 0)
    for name, flag, gives in (
        ("network namespaces", _CLONE_NEWNET, "jobs get no network (only a down loopback)"),
        ("PID namespaces", _CLONE_NEWPID, "the runner sees and kills only its own jobs"),
    ):
        ok, err = _try_unshare(base | flag)
        features.append(HostFeature(name, ok, gives if ok else f"refused ({err})"))
    from ._cgroups import cgroup_support

    version, controllers = cgroup_support()
    if version:
        features.append(
            HostFeature(
                "cgroup delegation",
                True,
                f"cgroup v{version}, {', '.join(controllers)} per job (all its processes)"
                + ("" if version == 2 or "cpuacct" in controllers else "; no CPU account"),
            )
        )
    else:
        why = "not root" if not root else "no writable memory cgroup for this process"
        features.append(
            HostFeature(
                "cgroup delegation",
                False,
                f"{why}: memory by RLIMIT_AS per process, processes by RLIMIT_NPROC per uid",
            )
        )
    features.append(_seccomp())
    return features
