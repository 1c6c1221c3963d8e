"""A per-machine limit on items in verification, shared by every process on the host.

Under accelerate, DeepSpeed or torchrun every rank calls its reward function on its own
slice of the batch, at the same moment. A per-process ``concurrency`` of 8 on a node with 8
GPUs is 64 sandboxes at once, enough to thrash the CPU and run candidates past their
deadlines (which then score as timeouts, i.e. ``error``). The limit here is counted per
*machine*: ``N`` slot files under a shared directory, each held with ``flock`` while one
item is being verified. ``flock`` locks belong to an open file description, so two lanes in
one process exclude each other just as two processes do, and the kernel drops a lock when
its holder dies (even after ``kill -9``): a crashed rank never leaks a slot.

The directory is ``$VERIFIERS_LOCK_DIR`` or ``/dev/shm`` (memory-backed, per machine) or the
system temp dir; the slot set is named by ``key`` so that independent jobs on one host can
keep separate budgets. Every process sharing a key must use the same ``slots``.

``machine_concurrency="auto"`` (the adapters' default, :func:`machine_slots_for`) turns the
limit on only where this process may share the machine with others of its job: several
ranks as the launchers report them, or a Ray worker process (veRL's reward workers and
OpenRLHF's actors are Ray actors, which no launcher variable describes, and several of them
land on one node).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import random
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

from .settings import env

__all__ = [
    "MachineConcurrency",
    "MachineSlots",
    "default_lock_dir",
    "in_ray_worker",
    "local_ranks",
    "machine_slots_for",
]

MachineConcurrency = int | None | Literal["auto"]
"""``"auto"``: ``$VERIFIERS_MACHINE_CONCURRENCY`` if set (0 = off), else, when this process
may share the machine with others of its job, the engine's ``concurrency`` machine-wide, else
off. "May share" is decided from the node, not from launcher variables alone: several ranks
(``LOCAL_WORLD_SIZE``, ``LOCAL_SIZE`` or the MPI equivalents > 1), or a Ray worker process
(``RAY_RAYLET_PID``). An int: that many items machine-wide. ``None`` or ``0``: no machine-wide
limit (per-process only)."""

_LOCAL_SIZE_VARS = (
    "LOCAL_WORLD_SIZE",  # torchrun, accelerate
    "LOCAL_SIZE",  # the DeepSpeed launcher
    "OMPI_COMM_WORLD_LOCAL_SIZE",  # Open MPI
    "MPI_LOCALNRANKS",  # MPICH
)

_POLL_START_S = 0.001
_POLL_MAX_S = 0.05


def default_lock_dir() -> Path:
    """``$VERIFIERS_LOCK_DIR``, else ``/dev/shm`` when writable, else the temp dir."""
    configured = env("VERIFIERS_LOCK_DIR")
    if configured:
        return Path(configured)
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


def local_ranks() -> int:
    """How many ranks of this job run on this machine, as launchers report it (1 if unknown)."""
    for name in _LOCAL_SIZE_VARS:
        raw = os.environ.get(name, "").strip()
        if raw.isdigit():
            return int(raw)
    return 1


def in_ray_worker() -> bool:
    """Whether this process is a Ray worker (an actor or task), from the raylet Ray names."""
    return os.environ.get("RAY_RAYLET_PID", "").strip().isdigit()


def machine_slots_for(
    machine_concurrency: MachineConcurrency, concurrency: int, key: str
) -> MachineSlots | None:
    """The machine-wide limiter ``machine_concurrency`` asks for (see :data:`MachineConcurrency`).

    Args:
        machine_concurrency: ``"auto"``, a number of slots, or ``None``/``0`` for none.
        concurrency: The engine's own ``concurrency``: what ``"auto"`` uses machine-wide.
        key: Names the slot set (see :class:`MachineSlots`).

    Raises:
        ValueError: ``$VERIFIERS_MACHINE_CONCURRENCY`` is not a whole number.
    """
    value: int | None
    if machine_concurrency == "auto":
        configured = (env("VERIFIERS_MACHINE_CONCURRENCY") or "").strip()
        if configured:
            try:
                value = int(configured)
            except ValueError:
                raise ValueError(
                    f"VERIFIERS_MACHINE_CONCURRENCY={configured!r}: expected a whole number of "
                    "machine-wide slots (0 turns the limit off)"
                ) from None
        elif local_ranks() > 1 or in_ray_worker():
            value = concurrency
        else:
            value = None
    else:
        value = machine_concurrency
    if not value:
        return None
    return MachineSlots(value, key=key)


class MachineSlots:
    """A counting semaphore across processes of one machine, built on ``flock``.

    Args:
        slots: How many holders at once, machine-wide.
        key: Names the slot set; processes with the same key share the budget.
        lock_dir: Where the slot files live (default :func:`default_lock_dir`).

    Raises:
        ValueError: ``slots`` < 1 or ``key`` is not a plain name.
    """

    def __init__(self, slots: int, *, key: str = "default", lock_dir: Path | None = None) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        if not key or not key.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"key must be a plain name ([A-Za-z0-9._-]), got {key!r}")
        self.slots = slots
        self.key = key
        base = lock_dir or default_lock_dir()
        self.directory = base / f"verifiers-slots-{os.getuid()}-{key}"
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._held = 0

    def _open(self, index: int) -> int:
        return os.open(self.directory / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    def try_acquire(self) -> int | None:
        """Take a free slot without waiting; the returned fd releases it (``release``)."""
        start = random.randrange(self.slots)
        for step in range(self.slots):
            index = (start + step) % self.slots
            fd = self._open(index)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._held += 1
            return fd
        return None

    def release(self, fd: int) -> None:
        """Give a slot back (closing the fd drops the ``flock``)."""
        self._held -= 1
        os.close(fd)

    async def acquire(self) -> int:
        """Wait for a free slot, polling with a capped exponential backoff."""
        delay = _POLL_START_S
        while True:
            fd = self.try_acquire()
            if fd is not None:
                return fd
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, _POLL_MAX_S)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """``async with slots.slot():`` hold one machine-wide slot for the block."""
        fd = await self.acquire()
        try:
            yield
        finally:
            self.release(fd)

    @property
    def held(self) -> int:
        """Slots this object holds right now."""
        return self._held
