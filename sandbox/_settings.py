"""Typed settings shared by every sandbox backend."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._base import Limits

__all__ = ["SandboxSettings"]


class SandboxSettings(BaseModel):
    """How a provider runs jobs. Every field has a documented default; pass only what differs.

    Container-level limits (``memory_mb``, ``pids``) come from the session's :class:`Limits`;
    the pool keeps one set of warm workers per (image, memory, pids) profile.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    limits: Limits = Limits()
    """Default limits of a session; ``provider.session(image, **overrides)`` changes fields."""
    pool_size: int = Field(default=4, gt=0)
    """Most workers (containers or local runners) per profile running at once; sessions past
    this wait for a free one."""
    jobs_per_worker: int = Field(default=200, gt=0)
    """A worker is recycled after this many sessions (and at once after a timeout, an OOM or
    any tamper sign)."""
    replenish: bool = True
    """Start a replacement in the background when a worker is recycled, so the next session
    finds a warm one."""
    start_timeout_s: float = Field(default=60.0, gt=0)
    """How long starting one worker may take before ``SandboxUnavailable``."""
    host_grace_s: float = Field(default=3.0, gt=0)
    """Extra seconds the host waits past a job's timeout before it kills the whole worker."""
    cpu_pinning: bool = True
    """Each runner's jobs run on ``ceil(cpus)`` of the host's CPUs, the ones the fewest other
    runners hold when it starts (sandbox/_cpus.py says why: local wake-ups and warm caches,
    and a local job gets the compute a Docker container's quota gives it). ``False``: the
    kernel places jobs on any CPU (a local job may then use every core)."""
    python_fastpath: bool = True
    """Jobs that run the runner's own interpreter plainly (``python3 -c CODE``, ``python3 -m
    MOD``, ``python3 FILE``, no flags, no start-up-changing ``PYTHON*`` variables) start as a
    fork of a clean, warm copy of it instead of a new interpreter: no start-up cost. Same
    sandbox, limits and uid; ``sys.flags`` shows ``-I``. ``False`` always fork+execs."""
    # -- docker ------------------------------------------------------------------------------
    docker_url: str | None = None
    """Docker engine URL; ``None`` means ``DOCKER_HOST`` or the default socket."""
    docker_channel: Literal["auto", "socket", "attach"] = "auto"
    """How the host talks to a container's runner: ``socket`` (a unix socket bind-mounted into
    the container: direct, no engine in the data path), ``attach`` (the container's stdin and
    stdout through the engine's attach API: works with a remote engine). ``auto``: socket for
    a local engine (unix socket URL), attach otherwise."""
    cpus: float = Field(default=1.0, gt=0)
    """CPU quota of each container (``nano_cpus``); with ``cpu_pinning``, also how many CPUs
    (rounded up) each runner's jobs run on, on both backends."""
    work_mb: int = Field(default=256, gt=0)
    """Size cap of the tmpfs that holds the work directories in a container."""
    runner_overhead_mb: int = Field(default=64, ge=16)
    """Memory added to the job's ``memory_mb`` for the runner in the container's cgroup."""
    image_prefix: str = "verifiers-sandbox"
    """Repository prefix of built images: ``<prefix>/<name>:<input hash>``."""
    image_dirs: tuple[Path, ...] = ()
    """Extra folders holding ``<name>/runtime.toml`` (or Dockerfile) definitions (searched first)."""
    # -- local -------------------------------------------------------------------------------
    local_isolation: Literal["auto", "bwrap", "unshare", "none"] = "auto"
    """``auto`` uses bubblewrap when it works, else ``unshare`` namespaces, else rlimits only
    (with one loud warning)."""
    local_python: Path | None = None
    """Escape hatch, not parity-safe: run local jobs with this *host* interpreter and the
    host's system directories instead of the session's runtime root filesystem (the default,
    ``None``, which gives jobs the same files as the Docker image and never the host's venv).
    For hosts without bubblewrap; rewards may then differ from Docker's."""
