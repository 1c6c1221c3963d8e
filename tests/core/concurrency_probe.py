"""How many calls are in flight at once, for tests of the engine's limits (``concurrency_probe``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
