"""Does a computation's answer depend on every figure it cites?

``consistency`` asks whether the formula (or FinQA program) over the quoted figures gives the
stated answer. A model under RL learns to satisfy that without computing anything from the
figures: cite a printed cell and then discard it (``s*0 + 24``), make it vanish below the
answer's precision (``s/100/100/100/100/100/100 + 24``), hide it behind a kink
(``max(o/2, 24)``), cancel it against a second citation of the same cell (``a - b + 24`` with
``a`` and ``b`` both quoting ``1,496.5``), or write the answer as a constant of a FinQA program
(``add(const_24.41, const_0)``).

The test here is the definition itself: a figure is *live* when changing it changes the
result by more than a tenth of the tolerance the stated answer is checked with; an effect too
small to alter the stated answer does not count.

- **Per cell, not per quotation.** Inputs are grouped by the document cell they were found
  at (the caller says which), and a group is changed as one: that is what "changing the
  figure" means, so ``a - b`` over two quotations of one cell is no dependence, while two
  *different* cells that happen to print the same value (an honest zero change) are
  changed independently.
- **Locally first** (x1.1 and x0.9: a kink hides a figure from perturbations on one side
  only, so both sides are tried).
- **Then in the neighbourhood of the data**, for a figure that is locally dead: it is live
  when, after another live figure is changed by 10%, changing it moves the result. So
  ``(a - b) / c`` with ``a == b`` in the data (an honest zero change: ``c`` has no effect at
  exactly that point) keeps ``c``, while a term that vanishes (``s * 0``, ``s / 1e12``,
  ``round(s / 1e4)``) or loses a kink by a wide margin (``max(o / 2, b)``) stays dead.
- **Padding.** Figures of *different* cells that print the same value and cancel
  (``c + a - b`` with ``a == b``) each move the result alone, but kept equal (scaled or
  shifted together) they never do while another figure does: they are dead together. An
  honest zero change (result 0) and a ratio of equal figures with nothing else live
  (``a / b`` = 1) are not padding; ``30 + (a - b)`` (only constants beside the pair) is a
  known gap of the same shape as that ratio.
- **Selections.** The caller may name figures that are bare candidates of a ``min``/``max``
  (``max(a, b)``): such a figure is used by being compared, so it is live when some figure
  is. A selection's result is one of its figures, so the caller's restatement check
  (consistency's ``_restates``) still applies to it, over the *locally* live groups.

A perturbation that makes the computation fail (a division by zero) is no evidence either
way. The caller hands over a function from replaced input values to the result, so nothing
here knows about syntax. Cost: two evaluations per group; the neighbourhood step runs only for
groups that are locally dead (rare in honest answers), for at most ``MAX_PAIRS`` pairs, and
stops at the first group that stays dead.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._formula import FormulaError

__all__ = ["FACTORS", "Dependence", "dependence"]

K = TypeVar("K", bound=Hashable)

FACTORS = (1.1, 0.9)
"""Multipliers applied to a figure (a zero figure is shifted by the inputs' scale instead)."""

SHARE = 0.1
"""A change by 10% must move the result by at least this share of the answer's tolerance."""

MAX_PAIRS = 64
"""Most (dead group, live group) pairs tried in the neighbourhood step (bounded work: each
pair costs six evaluations, and this runs on the inline path, which has no deadline)."""


@dataclass(frozen=True)
class Dependence(Generic[K]):
    """What the result depends on.

    Attributes:
        dead: Keys of the first group found that never moves the result (empty when every
            group is live), in input order.
        local: Groups (lists of keys) that move the result under a 10% change of their own.
    """

    dead: list[K]
    local: list[list[K]]


def dependence(
    compute: Callable[[Mapping[K, float]], float | bool],
    inputs: Mapping[K, float],
    result: float | bool,
    slack: float,
    *,
    cell: Callable[[K], Hashable] | None = None,
    candidates: Collection[K] = (),
) -> Dependence[K]:
    """Which inputs the result depends on (see the module docstring).

    Args:
        compute: The computation with some inputs replaced (a mapping of replacements).
        inputs: Every figure the computation reads, by key, with its value.
        result: The computation's value at ``inputs``.
        slack: The tolerance the stated answer is compared with (absolute, result units).
        cell: The document cell of an input (inputs of one cell change together); default:
            each input is its own cell.
        candidates: Inputs that are bare arguments of a ``min``/``max``.
    """
    groups: dict[Hashable, list[K]] = {}
    for key in inputs:
        groups.setdefault(cell(key) if cell is not None else key, []).append(key)
    scale = max((abs(v) for v in inputs.values()), default=1.0) or 1.0
    members = list(groups.values())
    local = [g for g in members if _moves(compute, inputs, g, {}, scale, result, slack)]
    padding = _zero_difference(compute, inputs, members, local, scale, result, slack)
    if padding:
        return Dependence([k for k in inputs if k in padding], local)
    dead_groups = [g for g in members if g not in local]
    pairs = 0
    for group in dead_groups:
        if local and any(k in candidates for k in group):
            continue
        rescued = False
        for other in local:
            if pairs >= MAX_PAIRS:
                break
            pairs += 1
            if _moves_near(compute, inputs, group, other, scale, slack):
                rescued = True
                break
        if not rescued:
            # One dead figure decides the verdict: stop here (bounded work on the inline
            # path, whatever the number of figures).
            dead = set(group)
            return Dependence([k for k in inputs if k in dead], local)
    return Dependence([], local)


def _zero_difference(
    compute: Callable[[Mapping[K, float]], float | bool],
    inputs: Mapping[K, float],
    members: list[list[K]],
    local: list[list[K]],
    scale: float,
    result: float | bool,
    slack: float,
) -> set[K]:
    """Figures of *different* cells that print the same value and cancel (``c + a - b`` with
    ``a == b``): kept equal (scaled or shifted together) they never move the result, while
    another figure does, so the result comes from elsewhere and they are padding. Not padding:
    a result that is their cancellation itself (an honest zero change ``(a - b) / c``, or a
    ratio ``a / b`` of 1 with nothing else live)."""
    if isinstance(result, bool) or abs(result) <= slack:
        return set()
    by_value: dict[float, list[list[K]]] = {}
    for group in members:
        by_value.setdefault(abs(inputs[group[0]]), []).append(group)
    for value, same in by_value.items():
        if len(same) < 2 or value == 0:
            continue
        joint = [k for g in same for k in g]
        if not any(g not in same for g in local):
            continue
        shifted = {k: inputs[k] + (0.1 * value if inputs[k] > 0 else -0.1 * value) for k in joint}
        try:
            moved_shift = abs(compute(shifted) - result) > SHARE * slack  # type: ignore[operator]
        except FormulaError:
            moved_shift = True  # no evidence: keep them
        if not moved_shift and not _moves(compute, inputs, joint, {}, scale, result, slack):
            return set(joint)
    return set()


def _changed(
    inputs: Mapping[K, float], group: list[K], factor: float, scale: float
) -> dict[K, float]:
    return {k: inputs[k] * factor if inputs[k] != 0 else scale * (factor - 1.0) for k in group}


def _moves(
    compute: Callable[[Mapping[K, float]], float | bool],
    inputs: Mapping[K, float],
    group: list[K],
    base: Mapping[K, float],
    scale: float,
    result: float | bool,
    slack: float,
) -> bool:
    for factor in FACTORS:
        try:
            moved = compute({**base, **_changed(inputs, group, factor, scale)})
        except FormulaError:
            continue  # e.g. a division that breaks at this value only: no evidence
        if isinstance(moved, bool) or isinstance(result, bool):
            if moved != result:
                return True
            continue
        if abs(moved - result) > SHARE * slack:
            return True
    return False


def _moves_near(
    compute: Callable[[Mapping[K, float]], float | bool],
    inputs: Mapping[K, float],
    group: list[K],
    other: list[K],
    scale: float,
    slack: float,
) -> bool:
    for factor in FACTORS:
        base = _changed(inputs, other, factor, scale)
        try:
            there = compute(base)
        except FormulaError:
            continue
        if _moves(compute, inputs, group, base, scale, there, slack):
            return True
    return False
