"""The engine behind every adapter: :class:`verifiers.SyncEngine` with the adapters' default.

Trainers call reward functions from plain threads (TRL's main thread, veRL's executor
threads, OpenRLHF's ``asyncio.to_thread``) and from their own event loops; the core's
:class:`~verifiers.SyncEngine` serves exactly that (one long-lived engine on a private loop
thread, warm sandboxes kept between batches). The adapters use it through its public
methods only (``score``, ``score_async``, ``submit``, ``run``). The one thing a
:class:`Scorer` adds is its default: ``machine_concurrency="auto"``, since a trainer's
ranks (or Ray workers) on one node must share one sandbox budget, not each take their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from verifiers._machine import MachineConcurrency, MachineSlots
from verifiers._sync import SyncEngine
from verifiers.engine import EngineSettings

__all__ = ["MachineConcurrency", "Scorer", "ScorerOwner"]


class Scorer(SyncEngine):
    """A :class:`~verifiers.SyncEngine` whose machine-wide limit is ``"auto"`` by default.

    Args:
        settings: Engine settings (default: ``EngineSettings.from_env()``).
        base_dir: Where relative artifact paths resolve (default: the working directory).
        machine_concurrency: Machine-wide limit on items in verification across all processes
            (ranks) of this host; see :data:`MachineConcurrency`.
        machine_key: Names the machine-wide budget; ranks of one job share a key.

    Close it with :meth:`close` (or use it as a context manager); an ``atexit`` hook closes
    it too, so worker processes and sandboxes never outlive the trainer.
    """

    def __init__(
        self,
        settings: EngineSettings | None = None,
        *,
        base_dir: Path | str | None = None,
        machine_concurrency: MachineConcurrency = "auto",
        machine_key: str = "default",
    ) -> None:
        super().__init__(
            settings,
            base_dir=base_dir,
            machine_concurrency=machine_concurrency,
            machine_key=machine_key,
        )

    @property
    def slots(self) -> MachineSlots | None:
        """The machine-wide limiter in use (``None``: per-process limit only)."""
        return self.machine_slots


class ScorerOwner:
    """Mixin for an adapter that uses a given :class:`Scorer` or makes its own.

    ``close()`` (and leaving a ``with`` block) closes the scorer only when this object made it:
    a scorer passed in is shared, and its owner closes it.
    """

    scorer: Scorer
    _owns_scorer: bool

    def _use_scorer(
        self,
        scorer: Scorer | None,
        settings: EngineSettings | None,
        *,
        base_dir: Path | str | None = None,
        machine_concurrency: MachineConcurrency = "auto",
        machine_key: str = "default",
    ) -> None:
        """Use ``scorer``, or make one from the rest (then owned: ``close`` closes it)."""
        self._owns_scorer = scorer is None
        self.scorer = scorer or Scorer(
            settings,
            base_dir=base_dir,
            machine_concurrency=machine_concurrency,
            machine_key=machine_key,
        )

    def close(self) -> None:
        """Close the engine (worker processes, sandboxes) if this object made it."""
        if self._owns_scorer:
            self.scorer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
