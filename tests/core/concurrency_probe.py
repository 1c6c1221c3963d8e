"""How many calls are in flight at once, for tests of the engine's limits (``concurrency_probe``).

:class:`Delay` (``test.delay``) is the verifier those tests score: it sleeps ``spec.delay``
seconds while its :class:`Probe` counts it in flight, then gives ``spec.reward``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from verifiers import Result, Spec, Trajectory, Verifier, VerifierContext, register


class Probe:
    """``with probe.held():`` around the work; ``peak`` is the most held at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget the peak (between the runs of one test)."""
        self.peak = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Count one call in flight for the duration of the block."""
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1


class DelaySpec(Spec):
    delay: float = 0.0
    reward: float = 1.0


@register("test.delay")
class Delay(Verifier[DelaySpec]):
    """Sleeps ``spec.delay`` counted by ``Delay.probe``; its verdict is ``spec.reward``."""

    Spec = DelaySpec
    cacheable = False
    probe = Probe()

    async def verify(self, trajectory: Trajectory, spec: DelaySpec, ctx: VerifierContext) -> Result:
        with self.probe.held():
            await asyncio.sleep(spec.delay)
        return Result.scored(spec.reward, feedback=f"delay {spec.delay}")
