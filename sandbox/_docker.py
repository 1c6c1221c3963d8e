"""Docker backend: a warm pool of hardened containers, each running the runner as its job server.

A container is created with the runner as its command and attached *before* it starts; the
runner then reads request frames from the container's stdin and writes replies to its stdout
over that one attach socket. A job therefore costs a fork inside a running container.

Hardening (every container): ``network_mode=none``, read-only root filesystem, tmpfs ``/work``
(size-capped) and ``/tmp``, ``cap_drop=ALL`` plus only the capabilities the runner needs to
hand files to the job uid and drop to it (SETUID, SETGID, CHOWN, FOWNER, DAC_OVERRIDE, KILL),
``no-new-privileges``, a pids limit, memory limit = memory+swap limit, a CPU quota, ``init``,
no log driver (output never lands on the host disk), private IPC. Jobs run as uid 10001 with no
capabilities at all.

Lifecycle: every container carries labels naming its owner (host, pid, process start time) and
where that PID means something (the kernel's boot id and the owner's PID-namespace inode: a
bare PID means nothing in another PID namespace sharing the engine). Containers whose owner is provably dead are removed when a
provider starts and by ``verifiers sandbox prune``; a provider removes its own at ``close()`` and at interpreter exit.
Containers are also created with ``StdinOnce`` + ``auto_remove``: when the owner dies, even
by ``kill -9``, the kernel closes the attach socket, the runner sees EOF and exits, and the
engine removes the container.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from verifiers.errors import MissingDependency, SandboxUnavailable

from ._base import Limits, SandboxProvider
from ._client import (
    Channel,
    RunnerHandle,
    RunnerPool,
    RunnerSandbox,
    StreamChannel,
    merge_limits,
)
from ._client import pooled_session as _pooled_session
from ._images import LABEL, get_image, image_tag
from ._local import runner_source
from ._runner import BOOTSTRAP
from ._runtimes import BASE_PATH, JOB_ENV, Runtime, runtime_for
from ._settings import SandboxSettings

__all__ = [
    "DockerProvider",
    "engine_and_image_ready",
    "owner_label",
    "owner_namespace",
    "prune_containers",
]

log = logging.getLogger("verifiers.sandbox")

OWNER_LABEL = f"{LABEL}.owner"
NAMESPACE_LABEL = f"{LABEL}.owner-namespace"
RUNNER_CAPS = ["SETUID", "SETGID", "CHOWN", "FOWNER", "DAC_OVERRIDE", "KILL"]
JOB_UID = 10001
_ENGINE_THREADS = 4
_EVIDENCE_S = 3.0
"""How long to wait for a lost runner's container to report its ``die`` (its ``oom`` event,
if any, comes with it)."""
T = TypeVar("T")
_DOCKER_HINT = "start dockerd (or set DOCKER_HOST), or use --sandbox local"


def _import_docker() -> Any:
    return MissingDependency.require("docker", "sandbox")


def _process_start(pid: int) -> str:
    """Kernel start time of ``pid`` (field 22 of /proc/pid/stat): tells pid reuse apart."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    """Inode of our PID namespace: a PID means something only inside the namespace it is in."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def owner_label(pid: int | None = None) -> str:
    """``host:pid:starttime`` of the owning process (the format every version reads)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_process_start(pid)}"


def owner_namespace() -> str:
    """``boot_id:pidns_inode``: where the owner's PID can be looked up.

    A scorer in a container, a pod or an ``unshare --pid`` namespace that shares the engine
    sees other PIDs (or none) at the same numbers and must never judge their owner dead. A
    label of its own (not more fields in the owner label), so that older versions sharing
    the engine still parse the owner label as before and do not judge *us* dead.
    """
    return f"{_boot_id()}:{_pid_namespace()}"


def _owner_alive(owner: str, namespace: str) -> bool:
    """False only when the owner is provably dead: same kernel boot, same PID namespace as
    us, and no process with its PID and start time. Anything we cannot judge (another host,
    another boot, another PID namespace, a container of an older version without the
    namespace label) counts as alive: such a container still goes away on its own, because
    its runner exits when its owner's end of the channel closes (``StdinOnce`` attach or the
    runner's socket) and the engine then removes it (``auto_remove``)."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not namespace or namespace != owner_namespace():
        return True
    if ":" not in namespace or namespace.startswith(":") or namespace.endswith(":"):
        return True  # we could not read our own boot id or namespace: judge nothing
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    return _process_start(pid) == start and start != ""


def connect(settings: SandboxSettings, timeout: float = 60.0, pool: int = 10) -> Any:
    """A docker client that has answered a ping.

    Raises:
        SandboxUnavailable: no engine answers (the hint says how to fix it).
        MissingDependency: the docker SDK is not installed.
    """
    docker = _import_docker()
    try:
        _unix_socket_answers(settings, timeout)
        # The SDK also keeps one pool per distinct URL (each container id makes new ones), up
        # to 25 (its num_pools argument is ignored for unix sockets): a bounded cache.
        kwargs: dict[str, Any] = {"timeout": int(timeout), "max_pool_size": pool}
        if settings.docker_url:
            client = docker.DockerClient(base_url=settings.docker_url, **kwargs)
        else:
            client = docker.DockerClient(**docker.utils.kwargs_from_env(), **kwargs)
        client.ping()
    except Exception as exc:  # the SDK raises many unrelated types for "not reachable"
        where = (
            settings.docker_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        )
        raise SandboxUnavailable(
            f"Docker engine not reachable at {where}: {type(exc).__name__}",
            hint=_DOCKER_HINT,
            retryable=False,
        ) from None
    return client


def _unix_socket_answers(settings: SandboxSettings, timeout: float) -> None:
    """Connect to the engine's unix socket (when the URL is one) and hang up; raises
    ``OSError`` when nothing listens. The SDK's own connect leaks its socket when the
    connection fails (an unclosed-socket ``ResourceWarning`` per try), so the "no engine"
    case is decided here, with a socket that is always closed."""
    url = settings.docker_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not url.startswith(("unix://", "http+unix://")):
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        probe.connect(url.split("://", 1)[1])


def engine_and_image_ready(settings: SandboxSettings, image: str = "python") -> bool:
    """True when an engine answers and ``image`` is built with its current inputs."""
    try:
        docker = _import_docker()
        client = connect(settings, timeout=5)
    except (SandboxUnavailable, MissingDependency):
        return False
    try:
        client.images.get(image_tag(get_image(image, settings), settings))
        return True
    except (docker.errors.ImageNotFound, SandboxUnavailable):
        return False
    except Exception:  # any engine error means "not ready"
        return False
    finally:
        client.close()


def prune_containers(client: Any, *, everything: bool = False, owner: str | None = None) -> int:
    """Remove labelled sandbox containers: those whose owner is dead (default), those of
    ``owner``, or ``everything``. Returns how many were removed."""
    docker = _import_docker()
    removed = 0
    # Filter on the owner label: containers started from our images inherit the images'
    # own labels, and such containers (other tools', benchmarks') are not ours to remove.
    for container in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
        labels = container.get("Labels") or {}
        who = labels.get(OWNER_LABEL, "")
        if everything or (owner is not None and who == owner):
            doomed = True
        else:
            doomed = owner is None and not _owner_alive(who, labels.get(NAMESPACE_LABEL, ""))
        if not doomed:
            continue
        try:
            client.api.remove_container(container["Id"], force=True)
            removed += 1
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                log.debug("could not remove sandbox container %s: %s", container["Id"][:12], exc)
    return removed


_DEFAULT_PYTHON = "/usr/bin/python3"
_SOCKET = "/run/verifiers/runner.sock"
"""The runner of an image without ``runtime.toml`` (a Dockerfile-only image)."""


def _job_path(runtime: Runtime | None) -> str:
    """Jobs' ``PATH``: a runtime with its own interpreter puts its folder first."""
    python = runtime.interpreter if runtime is not None else _DEFAULT_PYTHON
    if python == _DEFAULT_PYTHON:
        return BASE_PATH
    return f"{os.path.dirname(python)}:{BASE_PATH}"


class _AttachChannel(StreamChannel):
    """The container's stdin/stdout over a hijacked attach connection (stdout multiplexed:
    only reading differs from a plain stream)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self._buffer = bytearray()

    async def read_exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            header = await self._reader.readexactly(8)
            stream, length = header[0], struct.unpack(">I", header[4:])[0]
            payload = await self._reader.readexactly(length)
            if stream == 1:
                self._buffer += payload
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


class _DockerRunner(RunnerHandle):
    def __init__(
        self, channel: Channel, key: Hashable, provider: DockerProvider, cid: str, since: float
    ):
        super().__init__(channel, key)
        self.provider = provider
        self.cid = cid
        self.since = since
        """Engine time (epoch seconds) just before the container was created."""

    @property
    def name(self) -> str:
        return f"container {self.cid[:12]}"

    async def loss_cause(self) -> str | None:
        """The engine's ``oom`` event for this container: its memory cgroup (the jobs' and
        the runner's memory together) ran out and the kernel killed the runner. The engine
        keeps events after an ``auto_remove`` container is gone. No answer, no evidence."""
        try:
            return await asyncio.wait_for(
                self.provider._blocking(self.provider._oom_evidence, self.cid, self.since),
                _EVIDENCE_S + 5,
            )
        except Exception as exc:  # engine gone or slow: no evidence that the job did it
            log.debug("no loss evidence for %s: %s", self.name, exc)
            return None

    async def kill(self) -> None:
        self.broken = self.broken or "killed"
        self.channel.close()
        await self.provider._blocking(self.provider._remove, self.cid)


_atexit_lock = threading.Lock()
_live_providers: set[DockerProvider] = set()
_atexit_registered = False


def _cleanup_at_exit() -> None:
    for provider in list(_live_providers):
        provider._remove_all_sync()


class DockerProvider(SandboxProvider):
    """Sessions in warm, hardened containers (see the module docstring).

    Raises (at construction):
        SandboxUnavailable: no engine answers.
        MissingDependency: the docker SDK is not installed.
    """

    @classmethod
    def probe(cls, settings: SandboxSettings) -> tuple[bool, str]:
        """Whether an engine answers and the ``python`` image is built."""
        if engine_and_image_ready(settings):
            return True, "engine reachable, python image built"
        return False, "no engine, or the python image is not built (`verifiers sandbox build`)"

    kind = "docker"

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        global _atexit_registered
        self.settings = settings or SandboxSettings()
        # Engine calls block: a few dedicated threads, each with its own pooled connection,
        # so the number of threads and sockets stays fixed however many workers churn.
        self._client = connect(self.settings, pool=_ENGINE_THREADS)
        self._executor = ThreadPoolExecutor(_ENGINE_THREADS, thread_name_prefix="sandbox-docker")
        self._docker = _import_docker()
        self.owner = owner_label()
        self._tags: dict[str, str] = {}
        self._runtimes: dict[str, tuple[Runtime | None, str]] = {}
        """Built tag -> its runtime (how its runner starts) and the runtime's preload source."""
        self._pool = RunnerPool(self._start, self.settings)
        self._containers: set[str] = set()
        self._closed = False
        prune_containers(self._client)
        with _atexit_lock:
            _live_providers.add(self)
            if not _atexit_registered:
                atexit.register(_cleanup_at_exit)
                _atexit_registered = True

    def _blocking(self, function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        return asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # -- images ------------------------------------------------------------------------------

    def image_tag(self, image: str) -> str:
        """The built tag for ``image``.

        Raises:
            SandboxUnavailable: the image is not built with its current inputs.
        """
        tag = self._tags.get(image)
        if tag is not None:
            return tag
        definition = get_image(image, self.settings)
        tag = image_tag(definition, self.settings)
        runtime = runtime_for(definition.path)
        self._runtimes[tag] = (runtime, runtime.preload_source() if runtime is not None else "")
        try:
            self._client.images.get(tag)
        except self._docker.errors.ImageNotFound:
            raise SandboxUnavailable(
                f"sandbox image {image!r} is not built ({tag})",
                hint=f"run `verifiers sandbox build {image}`",
                retryable=False,
            ) from None
        self._tags[image] = tag
        return tag

    # -- containers --------------------------------------------------------------------------

    def _use_socket(self) -> bool:
        mode = self.settings.docker_channel
        if mode != "auto":
            return mode == "socket"
        url = str(self._client.api.base_url)
        return url.startswith("http+docker://localhost") or url.startswith("http+unix://")

    def _create(
        self, tag: str, limits: Limits, socket_dir: str | None
    ) -> tuple[str, socket.socket | None, dict[str, Any]]:
        """Create and start one container; with ``socket_dir`` the runner connects to a unix
        socket there, else its stdin/stdout are attached (returned socket). Also returns the
        runner's config, which the handshake sends as the first frame."""
        api = self._client.api
        runtime, preload = self._runtimes.get(tag, (None, ""))
        overhead = self.settings.runner_overhead_mb + (runtime.overhead_mb if runtime else 0)
        memory = f"{limits.memory_mb + overhead}m"
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={
                "/work": f"rw,exec,nosuid,nodev,size={self.settings.work_mb}m,mode=0755",
                "/tmp": "rw,nosuid,nodev,size=64m,mode=1777",
            },
            cap_drop=["ALL"],
            cap_add=RUNNER_CAPS,
            security_opt=["no-new-privileges"],
            pids_limit=limits.pids + 16,
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(self.settings.cpus * 1e9),
            init=True,
            auto_remove=True,
            ipc_mode="private",
            log_config=self._docker.types.LogConfig(type="none"),
            binds={socket_dir: {"bind": "/run/verifiers", "mode": "rw"}} if socket_dir else None,
        )
        config: dict[str, Any] = {
            "root": "/work",
            "job_uid": JOB_UID,
            "job_gid": JOB_UID,
            "private_pids": True,
            "address_space": False,  # the cgroup limits memory; RLIMIT_AS breaks numpy/BLAS
            "nproc": False,  # uids are shared across containers: pids cgroup instead
            # The container's own CPU account (v1 cpuacct, v2 cpu.stat, read-only in it): an
            # upper bound of the job's CPU, dead tasks included, one job running at a time.
            "cpu_account": ["/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu.stat"],
            # The container's IPC namespace, /tmp, /dev/shm and /dev/mqueue are its own: every
            # object a job makes there is removed after it (see the runner's ``end``).
            "private_ipc": True,
            "private_scratch": True,
            "mqueue": "/dev/mqueue",
            "python_fastpath": self.settings.python_fastpath,
            # The runtime's interpreter first, as on the local backend: `python` is its python.
            "path": _job_path(runtime),
            # the same job env as the local backend
            "env": {**JOB_ENV, **(dict(runtime.env) if runtime else {})},
        }
        if preload:
            config["preload"] = preload
            config["preload_timeout"] = self.settings.start_timeout_s
        python = runtime.interpreter if runtime else _DEFAULT_PYTHON
        if socket_dir:
            # The runner's source as a host-written file in the socket dir (root's, 0700: a
            # job cannot even look in; a fresh dir per container), so the command line is a
            # path and the config travels as the first frame (see the runner's docstring).
            script = os.path.join(socket_dir, "runner.py")
            with open(script, "w", encoding="utf-8") as handle:
                handle.write(runner_source())
            os.chmod(script, 0o444)
            command = [python, "-I", "/run/verifiers/runner.py", "--connect", _SOCKET]
        else:  # a remote engine: no host file can reach it, the source comes on stdin
            command = [python, "-I", "-c", BOOTSTRAP]
        container = api.create_container(
            image=tag,
            command=command,
            user="0:0",
            stdin_open=socket_dir is None,
            tty=False,
            detach=False,
            network_disabled=True,
            hostname="sandbox",
            working_dir="/work",
            environment={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            labels={LABEL: "runner", OWNER_LABEL: self.owner, NAMESPACE_LABEL: owner_namespace()},
            host_config=host_config,
        )
        cid = str(container["Id"])
        self._containers.add(cid)
        if socket_dir:
            try:
                api.start(cid)
            except Exception:
                self._remove(cid)
                raise
            return cid, None, config
        try:
            raw = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 0, "stream": 1})
            inner = getattr(raw, "_sock", raw)
            # Own an independent fd: the SDK's response objects may close theirs when collected.
            sock = socket.socket(fileno=os.dup(inner.fileno()))
            try:
                raw.close()
                if inner is not raw:
                    inner.close()
            except OSError:
                pass
            api.start(cid)
        except Exception:
            self._remove(cid)
            raise
        return cid, sock, config

    async def _start(self, key: Hashable, home: tuple[int, ...] = ()) -> RunnerHandle:
        assert isinstance(key, tuple) and len(key) == 3
        tag, memory_mb, pids = str(key[0]), int(key[1]), int(key[2])
        limits = self.settings.limits.model_copy(update={"memory_mb": memory_mb, "pids": pids})
        listener: socket.socket | None = None
        socket_dir: str | None = None
        since = time.time() - 300  # events are filtered by container id; margin for clock skew
        if self._use_socket():
            socket_dir = tempfile.mkdtemp(prefix="verifiers-sandbox-")  # 0700, root only
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(os.path.join(socket_dir, "runner.sock"))
            listener.listen(1)
            listener.setblocking(False)
        try:
            try:
                cid, sock, config = await asyncio.wait_for(
                    self._blocking(self._create, tag, limits, socket_dir),
                    self.settings.start_timeout_s,
                )
            except TimeoutError:
                raise SandboxUnavailable("starting a sandbox container timed out") from None
            except self._docker.errors.DockerException as exc:
                raise SandboxUnavailable(
                    f"cannot start a sandbox container: {exc}", hint=_DOCKER_HINT
                ) from None
            if listener is not None:
                loop = asyncio.get_running_loop()
                try:
                    sock, _ = await asyncio.wait_for(
                        loop.sock_accept(listener), self.settings.start_timeout_s
                    )
                except TimeoutError:
                    await self._blocking(self._remove, cid)
                    raise SandboxUnavailable(
                        f"sandbox container {cid[:12]} never connected its runner"
                    ) from None
        finally:
            if listener is not None and socket_dir is not None:
                listener.close()
                shutil.rmtree(socket_dir, ignore_errors=True)  # the connection stays up
        assert sock is not None
        reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
        channel: Channel = (
            StreamChannel(reader, writer)
            if listener is not None
            else _AttachChannel(reader, writer)
        )
        if home:
            config["cpus"] = list(home)  # the runner pins itself (see sandbox/_cpus.py)
        worker = _DockerRunner(channel, key, self, cid, since)
        bootstrap = runner_source() if listener is None else None
        what = f"sandbox container {cid[:12]} did not start its runner"
        await worker.start(self.settings.start_timeout_s, config, what, bootstrap)
        return worker

    def _oom_evidence(self, cid: str, since: float) -> str | None:
        """Whether the engine recorded an OOM kill in container ``cid`` (see
        ``_DockerRunner.loss_cause``). The ``oom`` event may trail the broken connection:
        this waits up to ``_EVIDENCE_S`` for the container's end (``die``/``destroy``) and
        looks once more shortly after it. Containers are recycled after any OOM, so one in
        this container's history belongs to the current session."""
        deadline = time.time() + _EVIDENCE_S
        ended_at: float | None = None
        while True:
            now = time.time()
            stream = self._client.api.events(
                since=since, until=now, filters={"container": cid}, decode=True
            )
            try:
                actions = {str(e.get("Action") or e.get("status") or "") for e in stream}
            finally:
                stream.close()
            if "oom" in actions:
                return "its container ran out of memory (the job's memory took the runner down)"
            if ended_at is None and actions & {"die", "destroy"}:
                ended_at = now
            if now >= deadline or (ended_at is not None and now - ended_at >= 0.3):
                return None
            time.sleep(0.1)

    def _remove(self, cid: str) -> None:
        try:
            self._client.api.remove_container(cid, force=True)
        except self._docker.errors.NotFound:
            pass
        except self._docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                log.warning("could not remove sandbox container %s: %s", cid[:12], exc)
        self._containers.discard(cid)

    def _remove_all_sync(self) -> None:
        for cid in list(self._containers):
            self._remove(cid)
        try:
            prune_containers(self._client, owner=self.owner)
        except Exception as exc:  # at interpreter exit the engine may be gone: nothing to do
            log.debug("sandbox cleanup at exit failed: %s", exc)

    # -- provider API ------------------------------------------------------------------------

    def session(self, image: str = "python", **limits: Any) -> AbstractAsyncContextManager[Any]:
        """A fresh work dir in a warm container of ``image``.

        Raises (on entry):
            SandboxUnavailable: the image is not built, or no container could start.
        """
        merged = merge_limits(self.settings.limits, limits)
        return self._session(image, merged)

    @asynccontextmanager
    async def _session(self, image: str, limits: Limits) -> AsyncIterator[RunnerSandbox]:
        key = (self.image_tag(image), limits.memory_mb, limits.pids)
        async with _pooled_session(self._pool, key, limits, self.settings) as sandbox:
            yield sandbox

    async def warm(self, image: str = "python", count: int = 1, **limits: Any) -> None:
        """Start ``count`` containers ahead of the first session."""
        merged = merge_limits(self.settings.limits, limits)
        await self._pool.warm((self.image_tag(image), merged.memory_mb, merged.pids), count)

    def counts(self) -> dict[str, int]:
        """Idle and busy containers."""
        return self._pool.counts()

    def container_ids(self) -> set[str]:
        """Ids of the containers this provider currently owns."""
        return set(self._containers)

    async def close(self) -> None:
        """Remove every container of this provider."""
        if self._closed:
            return
        self._closed = True
        await self._pool.close()
        await self._blocking(self._remove_all_sync)
        self._executor.shutdown(wait=False)
        with _atexit_lock:
            _live_providers.discard(self)
        self._client.close()
