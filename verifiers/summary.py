"""Running statistics over a stream of results, in bounded memory.

Used by ``verifiers score`` (the table at the end, ``--summary-json``) and by
``verifiers report``. Latencies and rewards are kept as reservoir samples (exact up to
``sample`` values, a uniform sample beyond), so summaries of huge files stay small.
"""

from __future__ import annotations

import math
import random
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .types import Result

__all__ = ["Reservoir", "Summary", "VerifierStats"]

FIRST_ERRORS = 5
"""How many error results a summary keeps verbatim."""

UNKNOWN = "(none)"
"""Label of results without a verifier (``bad_input`` lines rejected before dispatch)."""


class Reservoir:
    """A uniform sample of at most ``size`` floats (Algorithm R, deterministic seed)."""

    def __init__(self, size: int = 200_000) -> None:
        self.size = size
        self.seen = 0
        self.values = array("d")
        self._rng = random.Random(0)

    def add(self, value: float) -> None:
        """Offer one value to the sample."""
        self.seen += 1
        if len(self.values) < self.size:
            self.values.append(value)
            return
        slot = self._rng.randrange(self.seen)
        if slot < self.size:
            self.values[slot] = value

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile of the sample; ``None`` when empty."""
        if not self.values:
            return None
        ordered = sorted(self.values)
        rank = max(1, math.ceil(q * len(ordered)))
        return ordered[rank - 1]


@dataclass
class VerifierStats:
    """Per-verifier counts and reward sum: the one counter of results.

    :class:`Summary` keeps one per verifier (and ``verifiers report``'s page extends it with
    latencies and components), so a status, an error kind, a cache hit and a reward are
    counted by one rule everywhere.
    """

    statuses: Counter[str] = field(default_factory=Counter)
    reward_sum: float = 0.0
    rewarded: int = 0
    rewards: Reservoir = field(default_factory=lambda: Reservoir(50_000))
    error_kinds: Counter[str] = field(default_factory=Counter)
    cached: int = 0

    @property
    def count(self) -> int:
        """Results counted."""
        return sum(self.statuses.values())

    @property
    def mean_reward(self) -> float | None:
        """Mean over the results that have a reward (``None`` when none has)."""
        return self.reward_sum / self.rewarded if self.rewarded else None

    def add(self, result: Result, *, sample_reward: bool = True) -> None:
        """Count one result; ``sample_reward=False`` keeps the sum but not the sample."""
        self.statuses[result.status] += 1
        if result.error is not None:
            self.error_kinds[result.error.kind] += 1
        if result.cached:
            self.cached += 1
        if result.reward is not None and math.isfinite(result.reward):
            self.reward_sum += result.reward
            self.rewarded += 1
            if sample_reward:
                self.rewards.add(result.reward)


@dataclass
class Summary(VerifierStats):
    """Aggregates results as they stream by.

    The counts over all of them (its own :class:`VerifierStats` fields), one
    :class:`VerifierStats` per verifier, latencies and the first errors.
    """

    verifiers: dict[str, VerifierStats] = field(default_factory=dict)
    latency: Reservoir = field(default_factory=Reservoir)
    sample_rewards: bool = True
    """Keep a reward sample per verifier (for histograms); ``score`` only needs the means."""
    first_errors: list[dict[str, Any]] = field(default_factory=list)
    """The first :data:`FIRST_ERRORS` error results: line, id, kind, message (shown by
    ``score`` so a user sees *why* lines errored without opening the output)."""

    def add(self, result: Result, *, sample_reward: bool = False) -> None:
        """Count one result (the overall reward is summed, never sampled)."""
        super().add(result, sample_reward=False)
        if result.error is not None:
            if len(self.first_errors) < FIRST_ERRORS:
                self.first_errors.append(
                    {
                        "line": result.error.line,
                        "id": result.id,
                        "kind": result.error.kind,
                        "message": result.error.message[:500],
                    }
                )
        name = result.verifier or UNKNOWN
        stats = self.verifiers.get(name)
        if stats is None:
            stats = self.verifiers[name] = VerifierStats()
        stats.add(result, sample_reward=self.sample_rewards)
        if result.error is None or result.error.kind != "bad_input":
            self.latency.add(result.duration_s)

    def to_json(self, *, wall_s: float | None = None, **extra: Any) -> dict[str, Any]:
        """A machine-readable summary (the ``--summary-json`` document)."""
        count = self.count
        doc: dict[str, Any] = {
            "results": count,
            "status": {s: self.statuses.get(s, 0) for s in ("pass", "fail", "error", "skipped")},
            "error_kinds": dict(sorted(self.error_kinds.items())),
            "cached": self.cached,
            "verifiers": {
                name: {
                    "count": stats.count,
                    "status": dict(sorted(stats.statuses.items())),
                    "mean_reward": stats.mean_reward,
                }
                for name, stats in sorted(self.verifiers.items())
            },
            "latency_s": {"p50": self.latency.quantile(0.5), "p95": self.latency.quantile(0.95)},
            "first_errors": list(self.first_errors),
        }
        if wall_s is not None:
            doc["wall_s"] = wall_s
            doc["throughput_per_s"] = count / wall_s if wall_s > 0 else None
        doc.update(extra)
        return doc
