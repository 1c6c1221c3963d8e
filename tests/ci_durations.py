"""Where CI's test time goes, by test file (imported by ``tests/conftest.py``).

pytest's ``--durations`` lists the slowest *phases* of single tests; a corpus scored once per
module shows there as one huge first-row setup and hundreds of fast rows. The total per file
(every phase of every test in it: setup, call, teardown) is what says which file to make
cheaper, so under ``CI=true`` the run ends with that table as well (``.ci/run`` keeps the log).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

FILES_SHOWN = 40
"""How many files the CI table lists (the slowest first); the total covers them all."""


class FileDurations:
    """Seconds per test file, summed over every reported phase."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, set[str]] = defaultdict(set)

    def add(self, nodeid: str, duration: float) -> None:
        """One phase's report: ``nodeid`` is pytest's (``path::name[param]``)."""
        path = nodeid.split("::", 1)[0]
        self.seconds[path] += duration
        self.tests[path].add(nodeid)

    def lines(self, shown: int = FILES_SHOWN) -> list[str]:
        """The table: the ``shown`` slowest files, then the total over every file."""
        total = sum(self.seconds.values())
        ranked = sorted(self.seconds.items(), key=lambda item: (-item[1], item[0]))
        out = [f"{'seconds':>9} {'share':>6} {'tests':>6}  file"]
        for path, seconds in ranked[:shown]:
            share = seconds / total if total else 0.0
            out.append(f"{seconds:9.1f} {share:6.1%} {len(self.tests[path]):6d}  {path}")
        hidden = len(ranked) - min(shown, len(ranked))
        if hidden:
            rest = sum(seconds for _, seconds in ranked[shown:])
            out.append(f"{rest:9.1f} {'':6} {'':6}  ({hidden} more files)")
        tests = sum(len(ids) for ids in self.tests.values())
        out.append(f"{total:9.1f} {'':6} {tests:6d}  total ({len(ranked)} files)")
        return out


def summed(reports: Iterable[tuple[str, float]]) -> FileDurations:
    """A table from ``(nodeid, duration)`` pairs (what the conftest hook collects)."""
    table = FileDurations()
    for nodeid, duration in reports:
        table.add(nodeid, duration)
    return table
