"""Local backend: the runner in a host subprocess, inside bubblewrap or unshare namespaces.

The embedded default when no Docker engine is reachable. Isolation, strongest first:

* ``bwrap``: new pid/net/ipc/uts namespaces (no network at all), the session's *runtime root
  filesystem* (``sandbox/images/<name>/runtime.toml``, built by ``verifiers sandbox build``;
  the Docker image is ``docker import`` of the same folder) read-only as ``/``, private
  ``/tmp`` and ``/work`` tmpfs, ``--die-with-parent``. Jobs see the runtime's interpreter and
  pinned packages, the same files as in Docker, and nothing of the host: not its venv, not its
  ``/usr``. A runtime that is not built is ``SandboxUnavailable`` naming the build command,
  raised when the session is asked for, before any model code runs. When the host runs as root the runner keeps only the capabilities it
  needs to drop jobs to an unprivileged uid; otherwise a user namespace is added.
* ``unshare``: new pid/net/ipc/uts/mount namespaces but the host filesystem stays visible
  (jobs run as an unprivileged uid when the host is root).
* ``none``: rlimits only, with one loud warning line.

``unshare`` and ``none`` cannot give a job its runtime's root, so they run runtime sessions
only when ``SandboxSettings.local_python`` names a host interpreter explicitly (an escape hatch
for hosts without bubblewrap, documented as not parity-safe); otherwise the session is
``SandboxUnavailable`` with the fix (install bubblewrap).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from verifiers.errors import SandboxUnavailable
from verifiers.settings import env as setting

from ._base import Limits, SandboxProvider
from ._cgroups import RunnerCgroup, make_runner_cgroup
from ._client import RunnerHandle, RunnerPool, RunnerSandbox, StreamChannel, merge_limits
from ._client import pooled_session as _pooled_session
from ._images import find_images, get_image
from ._prune import hold_rootfs
from ._runtimes import JOB_ENV, Runtime, load_runtime, ready_rootfs, runtime_for
from ._settings import SandboxSettings

__all__ = ["LocalProvider", "detect_isolation", "runner_source"]

log = logging.getLogger("verifiers.sandbox")

Isolation = Literal["bwrap", "unshare", "none"]
_RUNNER_CAPS = ("SETUID", "SETGID", "CHOWN", "KILL", "DAC_OVERRIDE", "FOWNER")
_WORK_ROOT = "/sandbox"
_RUNTIME_WORK_ROOT = "/work"  # as in the Docker image: a job sees the same paths
_SCRATCH_MB = 64
"""Size of the runner's private ``/tmp`` and ``/dev/shm`` (as Docker's ``/tmp`` and shm)."""
_CGROUP_MOUNT = "/run/verifiers/cgroup"
_warned = False
_SLOTS = itertools.count(1)


RUNNER_IN_SANDBOX = "/run/verifiers/runner.py"
"""Where bubblewrap binds the runner's source, read-only (the command line shows this path)."""


def runner_path() -> Path:
    """The runner's source file on the host (this package's ``_runner.py``)."""
    return Path(__file__).with_name("_runner.py")


@functools.cache
def runner_source() -> str:
    """The runner's source text (for :data:`~._runner.BOOTSTRAP` starts and copies)."""
    return runner_path().read_text(encoding="utf-8")


def _runner_bind() -> list[str]:
    """bubblewrap arguments that put the runner's source at :data:`RUNNER_IN_SANDBOX`,
    read-only: a job (even one that took over the runner's uid) cannot change what a later
    runner starts from, and ``ps`` shows a path instead of 70 KB of source."""
    return ["--ro-bind", str(runner_path()), RUNNER_IN_SANDBOX]


def _system_python() -> str:
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def _env_prefix(settings: SandboxSettings) -> tuple[Path, list[Path]]:
    """The job interpreter's ``bin`` dir and every directory it needs to run."""
    python = Path(settings.local_python or sys.executable)
    bin_dir = python.parent
    roots = {Path(sys.prefix), Path(sys.base_prefix)}
    if settings.local_python is not None:
        roots = {python.resolve().parent.parent, python.parent.parent}
    return bin_dir, sorted(roots)


def _bwrap_namespaces() -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    if os.geteuid() != 0:
        argv.append("--unshare-user")
    return argv


def _bwrap_caps() -> list[str]:
    argv: list[str] = []
    if os.geteuid() == 0:
        argv += ["--cap-drop", "ALL"]
        for cap in _RUNNER_CAPS:
            argv += ["--cap-add", f"CAP_{cap}"]
    return argv


def _rootfs_bwrap_argv(settings: SandboxSettings, root: Path, work_root: str) -> list[str]:
    """bubblewrap with the runtime's root filesystem, read-only, as ``/`` (nothing of the host),
    and the same size-capped scratch as the host-directories mode."""
    argv = [*_bwrap_namespaces(), "--ro-bind", str(root), "/", "--proc", "/proc", "--dev", "/dev"]
    # /run as a small root-owned tmpfs: the read-only root cannot take the mount points the
    # per-runner cgroup binds need (jobs, another uid, cannot write there).
    argv += ["--perms", "0755", "--size", str(1 << 20), "--tmpfs", "/run"]
    argv += [*_bwrap_scratch(settings, work_root), "--chdir", "/"]
    return [*argv, *_bwrap_caps()]


def _bwrap_argv(settings: SandboxSettings, work_root: str) -> list[str]:
    """bubblewrap over the host's system directories (probe and ``local_python`` mode)."""
    argv = _bwrap_namespaces()
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    _, roots = _env_prefix(settings)
    made: set[str] = set()
    for root in roots:
        text = str(root)
        if any(text == p or text.startswith(p + "/") for p in ("/usr", "/etc")):
            continue
        # bwrap creates missing parents as 0700 root dirs; jobs (another uid) must traverse.
        for parent in reversed(Path(text).parents):
            name = str(parent)
            if name != "/" and name not in made:
                made.add(name)
                argv += ["--perms", "0755", "--dir", name]
        argv += ["--ro-bind", text, text]
    argv += ["--proc", "/proc", "--dev", "/dev", *_bwrap_scratch(settings, work_root)]
    argv += ["--chdir", "/"]
    return [*argv, *_bwrap_caps()]


def _bwrap_scratch(settings: SandboxSettings, work_root: str) -> list[str]:
    """The runner's writable places, each a size-capped tmpfs of its own (an uncapped one
    lets one job fill the host's memory; Docker caps its own the same way), and a POSIX message queue mount of its own IPC
    namespace (so the runner can list and remove the queues a job leaves)."""
    work = settings.work_mb << 20
    scratch = _SCRATCH_MB << 20
    return [  # /tmp and /dev/shm as in a container: world-writable, sticky
        *("--perms", "1777", "--size", str(scratch), "--tmpfs", "/tmp"),
        *("--perms", "1777", "--size", str(scratch), "--tmpfs", "/dev/shm"),
        *("--mqueue", "/dev/mqueue"),
        *("--size", str(work), "--tmpfs", work_root),
    ]


def _unshare_argv() -> list[str]:
    unshare = shutil.which("unshare") or "unshare"
    argv = [unshare, "--fork", "--pid", "--mount-proc", "--net", "--ipc", "--uts", "--mount"]
    if os.geteuid() != 0:
        argv += ["--user", "--map-root-user"]
    return argv


def _probe(argv: list[str]) -> bool:
    try:
        done = subprocess.run(
            [*argv, _system_python(), "-I", "-S", "-c", "print('ok')"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


@functools.cache
def _probe_cached(kind: Isolation) -> bool:
    if kind == "bwrap":
        return shutil.which("bwrap") is not None and _probe(
            _bwrap_argv(SandboxSettings(), "/tmp/verifiers-probe")
        )
    if kind == "unshare":
        return shutil.which("unshare") is not None and _probe(_unshare_argv())
    return True


def detect_isolation(preferred: str = "auto") -> Isolation:
    """The strongest local isolation that works here (``bwrap`` > ``unshare`` > ``none``).

    Raises:
        SandboxUnavailable: a specific mechanism was requested and does not work.
    """
    if preferred in ("bwrap", "unshare"):
        if not _probe_cached(preferred):  # type: ignore[arg-type]
            raise SandboxUnavailable(
                f"local sandbox isolation {preferred!r} does not work on this machine",
                hint="apt-get install bubblewrap, or use local_isolation='auto'",
                retryable=False,
            )
        return preferred  # type: ignore[return-value]
    if preferred == "none":
        return "none"
    for kind in ("bwrap", "unshare"):
        if _probe_cached(kind):  # type: ignore[arg-type]
            return kind  # type: ignore[return-value]
    return "none"


class _ProcessChannel(StreamChannel):
    """The runner subprocess's stdout/stdin."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin)
        self.process = process


class _LocalRunner(RunnerHandle):
    def __init__(
        self, channel: _ProcessChannel, key: Hashable, cgroup: RunnerCgroup | None = None
    ) -> None:
        super().__init__(channel, key)
        self.process = channel.process
        self.cgroup = cgroup

    async def kill(self) -> None:
        self.broken = self.broken or "killed"
        if self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
        self.channel.close()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            log.warning("local sandbox runner %d did not exit after SIGKILL", self.process.pid)
        if self.cgroup is not None:
            cgroup, self.cgroup = self.cgroup, None
            await asyncio.get_running_loop().run_in_executor(None, cgroup.remove)


class LocalProvider(SandboxProvider):
    """Runs sessions in warm local runners (see the module docstring for the isolation)."""

    kind = "local"

    @classmethod
    def probe(cls, settings: SandboxSettings) -> tuple[bool, str]:
        """The isolation that works here and which runtimes are built."""
        from ._runtimes import MARKER, rootfs_path

        try:
            isolation = detect_isolation(settings.local_isolation)
        except SandboxUnavailable as exc:
            return False, str(exc)
        built = []
        for name, image in sorted(find_images(settings).items()):
            runtime = load_runtime(image.path)
            if runtime is not None and (rootfs_path(runtime, settings) / MARKER).is_file():
                built.append(name)
        if isolation != "bwrap" and settings.local_python is None:
            return False, f"isolation {isolation}: runtimes need bubblewrap"
        listing = ", ".join(built) or "none (run `verifiers sandbox build`)"
        return bool(built), f"isolation: {isolation}; runtimes built: {listing}"

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings()
        self.isolation: Isolation = detect_isolation(self.settings.local_isolation)
        if self.isolation == "none":
            _warn_once()
        self._pool = RunnerPool(self._start, self.settings)
        self._next_slot = 0
        self._roots: dict[str, tuple[Runtime, Path]] = {}
        self._holds: list[int] = []
        """Shared flocks on the root filesystems in use (see ``_prune``)."""
        self._cgroups: dict[int, RunnerCgroup] = {}
        self._last_uid = 0

    def _job_uid(self) -> int:
        # A uid per runner keeps RLIMIT_NPROC and the process sweep per runner; the pid term
        # keeps two providers on one host apart.
        # The slot counter is per process, not per provider: two providers in one process (a
        # CLI run and an adapter's scorer, two engines) must never hand two live runners the
        # same uid, whose per-runner cgroup (named by it) the first to close would remove,
        # killing the other's job mid-run (an infra fault scored as the model's fail).
        self._next_slot = next(_SLOTS)
        return 200_000 + (os.getpid() % 1000) * 100 + self._next_slot % 100

    def _runtime_root(self, image: str) -> tuple[Runtime, Path] | None:
        """The runtime and its built root for ``image`` (None in ``local_python`` mode).

        Raises:
            SandboxUnavailable: no such runtime, it is not built, or bubblewrap is missing.
        """
        if self.settings.local_python is not None:
            return None
        found = self._roots.get(image)
        if found is not None:
            return found
        runtime = load_runtime(get_image(image, self.settings).path)
        if runtime is None:
            raise SandboxUnavailable(
                f"sandbox image {image!r} has no runtime.toml, so the local backend cannot "
                "run it (it is a Docker-only image)",
                hint=f"use --sandbox docker, or define sandbox/images/{image}/runtime.toml",
                retryable=False,
            )
        if self.isolation != "bwrap":
            raise SandboxUnavailable(
                f"the local backend runs runtime {image!r} in its root filesystem, which needs "
                f"bubblewrap (isolation here: {self.isolation})",
                hint="apt-get install bubblewrap, or use --sandbox docker",
                retryable=False,
            )
        root = ready_rootfs(runtime, self.settings)
        # Held until close(): `verifiers sandbox prune` never removes a root in use.
        self._holds.append(hold_rootfs(root, lambda: ready_rootfs(runtime, self.settings)))
        self._roots[image] = (runtime, root)
        return runtime, root

    def _command(self, key: Hashable) -> tuple[list[str], dict[str, Any]]:
        """The runner's command line and its config (sent as the first frame)."""
        image = str(key[0]) if isinstance(key, tuple) else "python"
        found = self._runtime_root(image)
        if found is not None:
            return self._runtime_command(*found)
        # The local_python escape hatch: host directories and a host interpreter.
        preload = _preload_for(image, self.settings)
        settings = self.settings
        runner_python = _system_python()
        bin_dir, _ = _env_prefix(settings)
        uid = self._job_uid()
        self._last_uid = uid
        private = self.isolation in ("bwrap", "unshare")
        # bwrap gives each runner its own tmpfs; otherwise each gets its own host folder.
        work_root = _WORK_ROOT if self.isolation == "bwrap" else f"{_host_work_root()}/{uid}"
        config = {
            "root": work_root,
            "job_uid": uid,
            "job_gid": uid,
            "private_pids": private,
            "address_space": True,
            "nproc": True,
            "python_fastpath": self.settings.python_fastpath,
            "path": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "env": dict(JOB_ENV),
        }
        if self.isolation == "unshare" and os.geteuid() != 0:
            config["job_uid"] = 0  # only uid 0 is mapped in the user namespace
            config["job_gid"] = 0
        if preload:
            config["preload"] = preload
            config["preload_timeout"] = self.settings.start_timeout_s
        binds = self._job_isolation(config, uid)
        if self.isolation == "bwrap":
            runner = [runner_python, "-I", RUNNER_IN_SANDBOX]
            return [*_bwrap_argv(settings, work_root), *_runner_bind(), *binds, *runner], config
        # unshare / none: the host's filesystem is the job's, so the package's own file (owned
        # by whoever installed it; jobs run under another uid when the host is root).
        runner = [runner_python, "-I", str(runner_path())]
        if self.isolation == "unshare":
            return [*_unshare_argv(), *runner], config
        return runner, config

    def _runtime_command(self, runtime: Runtime, root: Path) -> tuple[list[str], dict[str, Any]]:
        uid = self._job_uid()
        self._last_uid = uid
        config: dict[str, Any] = {
            "root": _RUNTIME_WORK_ROOT,
            "job_uid": uid,
            "job_gid": uid,
            "private_pids": True,
            "address_space": True,
            "nproc": True,
            "python_fastpath": self.settings.python_fastpath,
            "path": runtime.path_env,
            "env": runtime.job_env(),
        }
        preload = runtime.preload_source()
        if preload:  # a warm zygote that ran the runtime's preload (blender: bpy)
            config["preload"] = preload
            config["preload_timeout"] = self.settings.start_timeout_s
        binds = self._job_isolation(config, uid)  # the same per-job isolation as below
        runner = [runtime.interpreter, "-I", RUNNER_IN_SANDBOX]
        bwrap = _rootfs_bwrap_argv(self.settings, root, _RUNTIME_WORK_ROOT)
        return [*bwrap, *_runner_bind(), *binds, *runner], config

    def _job_isolation(self, config: dict[str, Any], uid: int) -> list[str]:
        """What keeps one job from changing what the next job of the runner gets: private IPC
        and scratch where the namespaces give them (the runner scrubs and checks them after
        each job), and a cgroup of its own per job where the host has one for us (memory and
        pids counted over all of the job's processes). Returns extra bubblewrap arguments;
        the runner's cgroup is kept in ``self._cgroups[uid]`` for removal with the runner."""
        private = self.isolation in ("bwrap", "unshare")
        config["private_ipc"] = private
        config["private_scratch"] = self.isolation == "bwrap"
        config["mqueue"] = "/dev/mqueue" if self.isolation == "bwrap" else ""
        cgroup = make_runner_cgroup(str(uid)) if os.geteuid() == 0 else None
        if cgroup is None:
            return []
        self._cgroups[uid] = cgroup
        inside = _CGROUP_MOUNT if self.isolation == "bwrap" else None
        config["cgroup"] = cgroup.runner_config(inside)
        return cgroup.bwrap_binds(_CGROUP_MOUNT) if inside else []

    async def _start(self, key: Hashable, home: tuple[int, ...] = ()) -> RunnerHandle:
        argv, config = self._command(key)
        if home:
            config["cpus"] = list(home)  # the runner pins itself (see sandbox/_cpus.py)
        cgroup = self._cgroups.pop(self._last_uid, None)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
                env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                limit=1 << 20,
            )
        except OSError as exc:
            if cgroup is not None:
                cgroup.remove()
            raise SandboxUnavailable(f"cannot start the local sandbox runner: {exc}") from None
        worker = _LocalRunner(_ProcessChannel(process), key, cgroup)
        what = f"local sandbox runner did not start ({self.isolation})"
        await worker.start(self.settings.start_timeout_s, config, what)
        return worker

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Any]:
        """A fresh work dir in a warm local runner of runtime ``image``.

        Raises:
            SandboxUnavailable: the runtime is unknown, not built or cannot run here (the hint
                names the fix); raised here, before any job runs.
        """
        merged = merge_limits(self.settings.limits, limits)
        self._runtime_root(image)
        return self._session(image, merged)

    @asynccontextmanager
    async def _session(self, image: str, limits: Limits) -> AsyncIterator[RunnerSandbox]:
        key = (image, limits.memory_mb, limits.pids)
        async with _pooled_session(self._pool, key, limits, self.settings) as sandbox:
            yield sandbox

    async def warm(self, image: str = "python", count: int = 1, **limits: Any) -> None:
        """Start ``count`` runners ahead of the first session (they stay warm)."""
        merged = merge_limits(self.settings.limits, limits)
        await self._pool.warm((image, merged.memory_mb, merged.pids), count)

    def counts(self) -> dict[str, int]:
        """Idle and busy runners."""
        return self._pool.counts()

    async def close(self) -> None:
        """Kill every runner (and remove the host work folders of unshare/rlimit runners)."""
        await self._pool.close()
        if self.isolation != "bwrap":
            shutil.rmtree(_host_work_root(), ignore_errors=True)
        holds, self._holds = self._holds, []
        self._roots.clear()
        for fd in holds:
            os.close(fd)


def _preload_for(image: str, settings: SandboxSettings) -> str:
    """The preload source of ``image``'s runtime ('' without one).

    Runtimes without a ``runtime.toml`` (and names with no image folder, which the local
    backend has always accepted) start the default runner.

    Raises:
        SandboxUnavailable: the runtime's definition is malformed.
    """
    definition = find_images(settings).get(image)
    runtime = runtime_for(definition.path) if definition is not None else None
    return runtime.preload_source() if runtime is not None else ""


def _host_work_root() -> str:
    base = setting("VERIFIERS_SANDBOX_WORKDIR") or "/tmp"
    path = os.path.join(base, f"verifiers-sandbox-{os.getpid()}")
    os.makedirs(path, mode=0o755, exist_ok=True)
    return path


def _warn_once() -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(
            "verifiers.sandbox: NO ISOLATION - neither bubblewrap nor unshare works here; "
            "untrusted code runs with rlimits only (install bubblewrap or Docker)"
        )
