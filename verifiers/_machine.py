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

from .settings import env

__all__ = ["MachineSlots", "default_lock_dir"]

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
