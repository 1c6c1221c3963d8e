"""Warm Blender workers on the host side: start, talk to, time out, recycle.

A worker is one Blender Python process running ``_worker.py`` inside an isolation boundary:

* ``docker``: a long-lived ``docker run -i`` container of the Blender image, hardened like
  the sandbox pool (no network, read-only root, tmpfs ``/tmp``, non-root user, all
  capabilities dropped, ``no-new-privileges``, pids/memory/CPU limits, labelled for reaping).
* ``local``: the bpy venv's Python inside bubblewrap (new user/pid/net/ipc/uts namespaces,
  uid 65534 without capabilities, only ``/usr``, the venv and the Python install visible and
  read-only, a private tmpfs ``/tmp``, no network, dies with its parent).

Why not the sandbox runner's fork-per-job model: that runner is a stdlib-only interpreter, so
every job would pay ``import bpy`` (~0.7 s) again. Here the warm process itself is the fork
server: it imports ``bpy`` once and forks the model's script off a ready Blender (see
``_worker.py``), which keeps the same per-job guarantees (own process group, rlimits, no
protocol fds, killed at its deadline) at ~15 ms a job.

The worker script is streamed to the process at start (``python -c <bootstrap>``), so the
Docker image only needs Blender and never goes stale against this library.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verifiers.errors import InfraError, SandboxUnavailable

__all__ = [
    "BOOTSTRAP",
    "BlenderPool",
    "PoolSettings",
    "WorkerCrashed",
    "WorkerHung",
    "default_python",
    "docker_argv",
    "local_argv",
    "reap_containers",
]

log = logging.getLogger("verifiers.render")

BOOTSTRAP = (
    "import sys;n=int(sys.stdin.buffer.readline());s=sys.stdin.buffer.read(n);"
    "exec(compile(s,'verifiers_blender_worker.py','exec'),{'__name__':'__main__'})"
)
WORKER_SOURCE = Path(__file__).with_name("_worker.py")
DEFAULT_IMAGE = "verifiers-sandbox/blender:latest"
IMAGE_PYTHON = "/opt/bpy-venv/bin/python"
LABEL = "verifiers.role=blender-worker"
_STREAM_LIMIT = 256 * 1024 * 1024


def default_python() -> Path:
    """The bpy venv's Python: ``$VERIFIERS_BLENDER_PYTHON`` or ``~/.cache/verifiers/bpy-venv``."""
    env = os.environ.get("VERIFIERS_BLENDER_PYTHON")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "verifiers" / "bpy-venv" / "bin" / "python"


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


@dataclass(frozen=True)
class PoolSettings:
    """How Blender workers are started. Every field has an environment variable default."""

    backend: Literal["auto", "docker", "local"] = field(
        default_factory=lambda: os.environ.get("VERIFIERS_BLENDER_BACKEND", "auto")  # type: ignore[arg-type,return-value]
    )
    """``docker`` (the Blender image), ``local`` (bpy venv in bubblewrap), or ``auto``: docker
    when the engine answers and the image exists, else local."""
    python: Path = field(default_factory=default_python)
    """The bpy venv's Python for the local backend."""
    image: str = field(
        default_factory=lambda: os.environ.get("VERIFIERS_BLENDER_IMAGE", DEFAULT_IMAGE)
    )
    """Docker image with ``/opt/bpy-venv`` (built from ``sandbox/images/blender``)."""
    workers: int = field(
        default_factory=lambda: _env_int("VERIFIERS_BLENDER_WORKERS", min(2, os.cpu_count() or 1))
    )
    """Warm worker processes (jobs run in parallel up to this many)."""
    max_jobs: int = 200
    """Recycle a worker after this many jobs (memory fragmentation, leaked datablocks)."""
    startup_timeout_s: float = 120.0
    """Limit for starting a worker (container start, ``import bpy``, a warm-up render)."""
    worker_memory_mb: int = 4096
    """Memory limit of a whole worker (Docker cgroup; the script's own limit is the spec's)."""
    cpus: float = 1.0
    """CPU quota per Docker worker."""
    allow_unsandboxed: bool = field(
        default_factory=lambda: os.environ.get("VERIFIERS_BLENDER_ALLOW_UNSANDBOXED") == "1"
    )
    """Permit the local backend without bubblewrap (rlimits and a uid drop only)."""


class WorkerCrashed(InfraError):
    """A worker process died. ``phase`` says where: ``startup``, ``script`` or ``render``."""

    def __init__(self, message: str, *, phase: str, stderr: str = "") -> None:
        super().__init__(message)
        self.phase = phase
        self.stderr = stderr


class WorkerHung(InfraError):
    """A worker did not answer in time and was killed; ``phase`` as in WorkerCrashed."""

    def __init__(self, message: str, *, phase: str) -> None:
        super().__init__(message)
        self.phase = phase


# -- launch commands ---------------------------------------------------------------------------


def _bwrap_works(bwrap: str) -> bool:
    try:
        proc = subprocess.run(
            [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def local_argv(python: Path, *, sandboxed: bool = True) -> tuple[list[str], dict[str, str]]:
    """argv and environment that start a local worker, inside bubblewrap when ``sandboxed``.

    Raises:
        SandboxUnavailable: the Python is missing, or bubblewrap is wanted and unusable.
    """
    if not python.exists():
        raise SandboxUnavailable(
            f"no Python with bpy at {python}",
            hint="run .ci/setup.d/30-blender.sh, or set VERIFIERS_BLENDER_PYTHON to a "
            "python3.11 venv with bpy==5.0.1 'numpy<2'",
        )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }
    if not sandboxed:
        return [str(python), "-c", BOOTSTRAP], env
    bwrap = shutil.which("bwrap")
    if bwrap is None or not _bwrap_works(bwrap):
        raise SandboxUnavailable(
            "bubblewrap is not usable for the local Blender backend",
            hint="apt-get install bubblewrap, use the Docker backend, or set "
            "VERIFIERS_BLENDER_ALLOW_UNSANDBOXED=1 to run with rlimits only",
        )
    venv = python.parent.parent
    real = Path(os.path.realpath(python))
    prefix = real.parent.parent
    argv = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for etc in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "alternatives", "localtime"):
        argv += ["--ro-bind-try", f"/etc/{etc}", f"/etc/{etc}"]
    for path in dict.fromkeys((str(venv), str(prefix))):
        argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp"]
    argv += ["--clearenv"]
    for key, value in {**env, "VERIFIERS_BLENDER_SWEEP": "1"}.items():
        argv += ["--setenv", key, value]
    argv += ["--", str(python), "-c", BOOTSTRAP]
    return argv, {}


def docker_argv(settings: PoolSettings, name: str) -> list[str]:
    """argv of a hardened ``docker run -i`` worker container."""
    memory = f"{settings.worker_memory_mb}m"
    return [
        "docker",
        "run",
        "-i",
        "--rm",
        "--init",
        "--name",
        name,
        "--label",
        LABEL,
        "--label",
        f"verifiers.owner={os.getpid()}",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,nosuid,nodev,size=1g",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--pids-limit",
        "512",
        "--memory",
        memory,
        "--memory-swap",
        memory,
        "--cpus",
        str(settings.cpus),
        "--user",
        "65534:65534",
        "--env",
        "VERIFIERS_BLENDER_SWEEP=1",
        "--env",
        "HOME=/tmp",
        "--workdir",
        "/tmp",
        settings.image,
        IMAGE_PYTHON,
        "-c",
        BOOTSTRAP,
    ]


def docker_image_present(image: str) -> bool:
    """Whether the Docker engine answers and has ``image``."""
    if shutil.which("docker") is None:
        return False
    try:
        proc = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def resolve_backend(settings: PoolSettings) -> Literal["docker", "local"]:
    """Pick ``docker`` or ``local`` for ``auto``."""
    if settings.backend == "docker":
        return "docker"
    if settings.backend == "local":
        return "local"
    if docker_image_present(settings.image):
        return "docker"
    return "local"


# -- one worker -----------------------------------------------------------------------------


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process, container: str | None) -> None:
        self.proc = proc
        self.container = container
        self.jobs = 0
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self.info: dict[str, Any] = {}
        self._drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        if stream is None:
            return
        while True:
            try:
                line = await stream.readline()
            except (ValueError, OSError):  # a line longer than the limit; keep draining
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr_tail.append(text)

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def stderr_text(self) -> str:
        return "\n".join(self.stderr_tail)

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("worker sent a non-object")
        return message

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        if self.container is not None:
            subprocess.Popen(
                ["docker", "rm", "-f", self.container],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.container = None
        self._drain.cancel()

    async def close(self) -> None:
        """Ask the worker to exit (EOF on its stdin), kill it if it lingers."""
        if self.proc.stdin is not None and self.proc.returncode is None:
            with contextlib.suppress(OSError, RuntimeError):
                self.proc.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5.0)
        self.kill()


# -- the pool -------------------------------------------------------------------------------


class BlenderPool:
    """Up to ``settings.workers`` warm Blender workers, shared by concurrent jobs.

    Bound to the event loop it was first used on (asyncio subprocesses are).
    """

    def __init__(self, settings: PoolSettings | None = None) -> None:
        self.settings = settings or PoolSettings()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._slots = asyncio.Semaphore(max(1, self.settings.workers))
        self._backend: Literal["docker", "local"] | None = None
        self.started = 0
        self.crashes = 0

    @property
    def backend(self) -> str:
        """The backend in use (resolved on first start)."""
        if self._backend is None:
            self._backend = resolve_backend(self.settings)
        return self._backend

    async def _start(self) -> _Worker:
        container: str | None = None
        env: dict[str, str] | None
        if self.backend == "docker":
            if self.started == 0:  # containers left behind by host processes that died
                await asyncio.to_thread(reap_containers)
            container = f"verifiers-blender-{uuid.uuid4().hex[:12]}"
            argv, env = docker_argv(self.settings, container), None
        else:
            sandboxed = not self.settings.allow_unsandboxed
            argv, env = local_argv(self.settings.python, sandboxed=sandboxed)
            if not sandboxed:
                log.warning(
                    "render.blender: running model scripts WITHOUT a sandbox (rlimits and "
                    "uid 65534 only): VERIFIERS_BLENDER_ALLOW_UNSANDBOXED=1"
                )
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                limit=_STREAM_LIMIT,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxUnavailable(f"cannot start a Blender worker: {exc}") from None
        worker = _Worker(proc, container)
        self._all.add(worker)
        self.started += 1
        source = WORKER_SOURCE.read_bytes()
        try:
            assert proc.stdin is not None
            proc.stdin.write(str(len(source)).encode() + b"\n" + source)
            await proc.stdin.drain()
            ready = await asyncio.wait_for(worker.receive(), self.settings.startup_timeout_s)
        except (TimeoutError, OSError, ValueError) as exc:
            await self._discard(worker)
            raise WorkerCrashed(
                f"Blender worker did not start: {type(exc).__name__} {exc}",
                phase="startup",
                stderr=worker.stderr_text(),
            ) from None
        if ready is None or not ready.get("ready"):
            await asyncio.sleep(0.05)  # let the stderr drain catch the reason
            await self._discard(worker)
            raise WorkerCrashed(
                f"Blender worker exited during startup (rc={proc.returncode})",
                phase="startup",
                stderr=worker.stderr_text(),
            )
        worker.info = ready
        return worker

    async def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._all.discard(worker)
        with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
            await asyncio.wait_for(worker.proc.wait(), 5.0)

    async def run(self, job: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        """Run one job on a warm worker; returns the worker's result message.

        ``result["recycled"]`` is True when the worker was retired after this job.

        Raises:
            WorkerCrashed: the worker died (``phase`` says when); it has been replaced.
            WorkerHung: no answer within ``timeout``; the worker was killed.
            SandboxUnavailable: no worker could be started at all.
        """
        async with self._slots:
            worker = self._idle.pop() if self._idle else await self._start()
            phase = "script"
            done = False
            message: dict[str, Any] = {}
            try:
                await worker.send(job)
                loop = asyncio.get_running_loop()
                deadline = loop.time() + timeout
                while True:
                    left = deadline - loop.time()
                    if left <= 0:
                        raise WorkerHung(
                            f"Blender worker gave no answer within {timeout:.0f}s", phase=phase
                        )
                    try:
                        reply = await asyncio.wait_for(worker.receive(), left)
                    except TimeoutError:
                        continue
                    if reply is None:
                        await asyncio.sleep(0.05)
                        self.crashes += 1
                        raise WorkerCrashed(
                            f"Blender worker died (rc={worker.proc.returncode}) during {phase}",
                            phase=phase,
                            stderr=worker.stderr_text(),
                        )
                    if reply.get("phase"):
                        phase = str(reply["phase"])
                        continue
                    if reply.get("result"):
                        message = reply
                        done = True
                        break
            except (OSError, ValueError) as exc:
                raise WorkerCrashed(
                    f"lost the Blender worker's pipe: {exc}",
                    phase=phase,
                    stderr=worker.stderr_text(),
                ) from None
            finally:
                if not done:  # crashed, hung, or the caller was cancelled mid-job
                    await self._discard(worker)
            worker.jobs += 1
            crashed_child = message.get("phase_a", {}).get("how") == "signal"
            if worker.jobs >= self.settings.max_jobs or crashed_child or not worker.alive:
                message["recycled"] = True
                await self._discard(worker)
            else:
                self._idle.append(worker)
            message["worker"] = {
                "backend": self.backend,
                "jobs": worker.jobs,
                "blender": worker.info.get("blender"),
            }
            return message

    async def aclose(self) -> None:
        """Stop every worker."""
        workers = list(self._all)
        self._idle.clear()
        self._all.clear()
        await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)

    def kill_all(self) -> None:
        """Synchronous last resort (the owning loop is gone)."""
        for worker in list(self._all):
            worker.kill()
        self._idle.clear()
        self._all.clear()


def reap_containers() -> int:
    """Remove worker containers left by dead host processes (``verifiers.role`` label)."""
    if shutil.which("docker") is None:
        return 0
    try:
        ids = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label={LABEL}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return 0
    removed = 0
    for cid in ids:
        owner = subprocess.run(
            ["docker", "inspect", "--format", '{{index .Config.Labels "verifiers.owner"}}', cid],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
        if owner.isdigit() and _pid_alive(int(owner)):
            continue
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60, check=False)
        removed += 1
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
