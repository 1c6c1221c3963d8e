"""Home CPUs: which of the host's CPUs each runner's jobs run on (``SandboxSettings.cpu_pinning``).

Why pin at all: a job is a chain of wake-ups (host -> runner -> zygote -> fork -> job -> exit
-> runner -> host). Unpinned, the kernel scatters that chain over the cores: every hop to an
idle core is a cross-CPU wake-up (on a VM, an interrupt to a halted vCPU), and each fork of
the zygote copies its pages into a core whose caches hold the other runner's zygote. With each
runner's tree on a CPU of its own, one runner's jobs keep one core's caches and wake-ups stay
local (docs/benchmarks.md, session 20: render scenes/s +9% on the 2-vCPU machine).

It is also parity: a Docker runner's container has a quota of ``SandboxSettings.cpus`` CPUs;
pinned, a local runner's jobs get the same ``ceil(cpus)`` CPUs of compute, where unpinned they
could use every core of the host (a multi-threaded build finished in time locally and timed
out in Docker).

Homes are counted **per machine**, not per process: under DeepSpeed or torchrun every rank
opens a provider of its own, and eight ranks counting alone would all put their first runner
on CPU 0. Each home is a held ``flock`` on a slot file ``cpu<N>-<k>.lock`` in a per-user
directory under :func:`~verifiers._machine.default_lock_dir` (the kernel drops the lock when
its holder dies, so a crashed rank never leaks a CPU); a process counts the locked slots of
each CPU to find the least taken. Where that directory cannot be used, homes are counted in
this process only.

The starvation rule (``CpuWindow`` in ``_runner.py``) reads the runner's own affinity, so a
pinned job is judged starved by what else ran on *its* CPUs.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from verifiers._machine import default_lock_dir

__all__ = ["CpuHomes"]

_MAX_SLOTS = 4096
"""Slot files per CPU looked at, at most (runners holding that CPU at once, machine-wide)."""


def _allowed() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return []


class CpuHomes:
    """Hands out home CPU sets to runners: each new runner gets the ``width`` CPUs that the
    fewest live runners on this machine hold (lowest index first), so ``pool_size`` runners on
    as many CPUs get one each, and more runners than CPUs share them round-robin.

    ``enabled=False`` (or a host with one usable CPU) hands out ``()``: no pinning."""

    def __init__(
        self,
        cpus: float,
        enabled: bool,
        allowed: Iterable[int] | None = None,
        lock_dir: Path | None = None,
    ) -> None:
        self.allowed = sorted(allowed) if allowed is not None else _allowed()
        self.width = min(len(self.allowed), max(1, math.ceil(cpus)))
        self.enabled = enabled and len(self.allowed) > 1
        self.directory: Path | None = None
        if self.enabled:
            directory = (lock_dir or default_lock_dir()) / f"verifiers-cpu-homes-{os.getuid()}"
            try:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.directory = directory
            except OSError:
                pass  # counted in this process only
        self._local: Counter[int] = Counter()
        """Homes held by this process, per CPU (all there is without a directory)."""
        self._slots: list[tuple[tuple[int, ...], list[int]]] = []
        """(home, the slot files' descriptors holding it), for :meth:`give`."""

    def take(self) -> tuple[int, ...]:
        """A home for a runner about to start (give it back with :meth:`give`)."""
        if not self.enabled:
            return ()
        fds: list[int] = []
        try:
            with self._exclusive():
                held = self.holders()
                ranked = sorted(self.allowed, key=lambda cpu: (held[cpu], cpu))
                home = tuple(sorted(ranked[: self.width]))
                if self.directory is not None:
                    fds = [self._hold(cpu) for cpu in home]
        except OSError:  # the directory went away or is full: count here only
            for fd in fds:
                os.close(fd)
            fds = []
            ranked = sorted(self.allowed, key=lambda cpu: (self._local[cpu], cpu))
            home = tuple(sorted(ranked[: self.width]))
        self._local.update(home)
        self._slots.append((home, fds))
        return home

    def give(self, home: tuple[int, ...]) -> None:
        """A runner with this home has left the pool (killed, recycled, failed to start)."""
        for index, (held, fds) in enumerate(self._slots):
            if held == home:
                del self._slots[index]
                for fd in fds:
                    os.close(fd)  # drops its flock
                self._local.subtract(home)
                self._local += Counter()  # drop zero counts
                return

    def holders(self) -> Counter[int]:
        """Live runners per CPU: machine-wide from the slot files, else this process's."""
        if self.directory is None:
            return Counter(self._local)
        counts: Counter[int] = Counter()
        for cpu in self.allowed:
            for index in range(_MAX_SLOTS):
                path = self.directory / f"cpu{cpu}-{index}.lock"
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except FileNotFoundError:
                    break
                except OSError:
                    counts[cpu] += 1  # not ours to read: count it as taken
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    counts[cpu] += 1
                finally:
                    os.close(fd)  # a lock taken just to look is dropped here
        return counts

    def _hold(self, cpu: int) -> int:
        """Lock the first free slot file of ``cpu``; the descriptor holds it."""
        assert self.directory is not None
        for index in range(_MAX_SLOTS):
            path = self.directory / f"cpu{cpu}-{index}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
        raise OSError(f"more than {_MAX_SLOTS} runners hold CPU {cpu}")

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One take at a time machine-wide (count, then lock), held for microseconds."""
        if self.directory is None:
            yield
            return
        fd = os.open(self.directory / "take.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
