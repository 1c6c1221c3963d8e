"""Does a computation's answer depend on every figure it cites?

``consistency`` asks whether the formula (or FinQA program) over the quoted figures gives the
stated answer. A model under RL learns to satisfy that without computing anything from the
figures: cite a printed cell and then discard it (``s*0 + 24``), make it vanish below the
answer's precision (``s/100/100/100/100/100/100 + 24``), hide it behind a kink
(``max(o/2, 24)``), cancel it against a second citation of the same cell (``a - b + 24`` with
``a`` and ``b`` both quoting ``1,496.5``), or write the answer as a constant of a FinQA program
(``add(const_24.41, const_0)``). One nudge of each operand catches only the first.

The test here is the definition itself: a figure is *live* when changing it changes the
result by more than the tolerance the stated answer is checked with. So an effect too small
to alter the stated answer does not count. Each figure is changed several times,
independently and by large factors (x2, x0.5, x-1, x10, x-10: a kink hides a figure only from
perturbations that stay on one side of it, a vanishing term from all of them). Figures with
the same value are changed *together*, so a figure cancelled against a second quotation of
itself is dead as well. A perturbation that makes the computation fail (a division by zero)
is no evidence either way; a figure with no perturbation that moves the result is dead.

The same test serves formulas and programs: the caller hands over a function from replaced
input values to the result, so nothing here knows about syntax.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

from ._formula import FormulaError

__all__ = ["FACTORS", "dead_inputs"]

K = TypeVar("K", bound=Hashable)

FACTORS = (1.1, 0.9)
"""Multipliers applied to a figure (a zero figure is shifted by the inputs' scale instead)."""

SHARE = 0.1
"""A change by 10% must move the result by at least this share of the answer's tolerance."""


def dead_inputs(
    compute: Callable[[Mapping[K, float]], float | bool],
    inputs: Mapping[K, float],
    result: float | bool,
    slack: float,
) -> list[K]:
    """The inputs whose change never moves ``result`` by more than ``slack``.

    Args:
        compute: The computation with some inputs replaced (a mapping of replacements).
        inputs: Every figure the computation reads, by key, with its value.
        result: The computation's value at ``inputs``.
        slack: The tolerance the stated answer is compared with (absolute, result units).

    Returns:
        Keys of dead inputs, in the order of ``inputs``.
    """
    scale = max((abs(v) for v in inputs.values()), default=1.0) or 1.0
    return [
        key
        for key, value in inputs.items()
        if not _moves(compute, key, value, scale, result, slack)
    ]


def _moves(
    compute: Callable[[Mapping[K, float]], float | bool],
    key: K,
    value: float,
    scale: float,
    result: float | bool,
    slack: float,
) -> bool:
    for factor in FACTORS:
        changed = value * factor if value != 0 else scale * (factor - 1.0)
        try:
            moved = compute({key: changed})
        except FormulaError:
            continue  # e.g. a division that breaks at this value only: no evidence
        if isinstance(moved, bool) or isinstance(result, bool):
            if moved != result:
                return True
            continue
        if abs(moved - result) > SHARE * slack:
            return True
    return False
