"""``answer.numeric``: a number compared with absolute/relative tolerance."""

from __future__ import annotations

import math
import re
from typing import ClassVar, Literal

from pydantic import Field

from ..errors import BadInput
from ..protocol import InlineVerifier
from ..registry import register
from ..text import completion_text, visible_text
from ..types import Result, Trajectory
from ._common import AnswerSpec, quote
from ._expression import EXPRESSION, MARKED, QUALIFIED, number_problem
from ._locate import (
    answer_phrase,
    answer_tag,
    boxed_spans,
    boxes_side_by_side,
    end_of_turn,
    final_answer_after,
    last_line,
    strip_thinking,
    tags_side_by_side,
)
from ._numbers import (
    Number,
    find_number_spans,
    normalize_numeric_text,
    one_reading,
    parse_number,
)

__all__ = ["NumericAnswer", "NumericSpec", "extract_number"]

NAME = "answer.numeric"

NumericExtract = Literal[
    "auto",
    "boxed",
    "answer_tag",
    "answer_phrase",
    "last_number",
    "first_number",
    "last_line",
    "full",
]


class NumericSpec(AnswerSpec):
    """Settings of ``answer.numeric``. Every field has a default: ``task.spec`` may be omitted."""

    extract: NumericExtract = "auto"
    """Which number is the answer. ``auto``: the number in the last ``<answer>`` tag, else in
    the last ``\\boxed{}``, else after the last "answer is"/"Answer:", else the last number in
    the text. ``last_number``/``first_number``: of the whole text; ``boxed``, ``answer_tag``,
    ``answer_phrase``, ``last_line``: the first number in that place only; ``full``: the whole
    completion must be one number. In every mode the number read must stand alone: one
    operand of an expression (``\\sqrt{2}``, ``4\\pi``, ``1 000``), a qualified number
    (``not 2``, ``2?``) or two answers side by side are the model's ``fail``."""
    rel_tol: float = Field(default=1e-4, ge=0.0)
    """Relative tolerance, as a fraction of the reference (``0.01`` = 1%)."""
    abs_tol: float = Field(default=0.0, ge=0.0)
    """Absolute tolerance; a match needs ``|got - ref| <= max(abs_tol, rel_tol * |ref|)``.
    Default 0: the tolerance is relative to the reference's magnitude, so ``0`` never passes
    a tiny reference (9.109e-31) and a reference of 0 needs exactly 0. Set it when the
    task's quantity has a natural absolute precision."""
    percent: Literal["either", "fraction", "number"] = "either"
    """How ``12.5%`` reads: ``fraction`` = 0.125, ``number`` = 12.5; ``either``: written the
    same way on both sides they compare as written (``0.125%`` is not ``12.5%``), and a
    ``%`` on one side only is read as whichever of x and x/100 is nearer the other side (so
    ``12.5%`` matches a reference of ``0.125`` or of ``12.5``). One reading per reference."""
    scale_words: Literal["either", "apply", "ignore"] = "either"
    """How ``1.2 million`` reads: ``apply`` = 1,200,000, ``ignore`` = 1.2; ``either``: the
    same word on both sides compares as written, a word on one side only is applied or not,
    whichever is nearer. A percent with a scale word (``4.2% thousand``) is not a number."""


AMBIGUOUS = "several_numbers"
"""``extract_number``'s source when the answer region offers several candidate numbers."""

_REFUSED = {
    EXPRESSION: "the answer must be a single number, not an expression (a root, a constant, "
    "an operator, a factorial, juxtaposed digit groups such as '1 000', a mixed number, a hex "
    "literal): write its value as one number",
    QUALIFIED: "the answer qualifies its number ('not', 'at least', 'maybe', '?', 'or more'): "
    "state one number as the answer",
    MARKED: "a digit of the answer carries a combining mark (such as a strike-through "
    "overlay): write the number plainly",
}
"""Feedback for the ``extract_number`` sources that refuse the number found (see
:func:`._expression.number_problem`)."""

_RELATION = re.compile(r"=|≈|≃|\\approx|\\simeq")
"""The value of "2 + 3 = 5", "x \\approx 5" is after the last relation."""

_OVERRIDES = ("\u202d", "\u202e")
"""Left-to-right and right-to-left override: they make ``\u202e32`` show as 23. Which
number a reader sees is not the one the text holds, so no number is read from such text."""

_ALTERNATIVES = re.compile(
    r",|;|&|\bor\b|\band\b|\band/or\b|\b(?:maybe|perhaps|possibly|probably)\b|\\lor|\\vee|\\pm|±|\\mp|\\neq|≠|\bto\b|\d\s*[-–—]\s*\d",
    re.IGNORECASE,
)


def extract_number(text: str, how: NumericExtract) -> tuple[Number | None, str]:
    """The answer number in ``text`` and where it was found (see :class:`NumericSpec`).

    Read from the same places as every answer verifier (:mod:`._locate`): the turn ends at
    a chat-template token, and in ``auto`` a "final answer" after the last box is the
    answer. A number that is one operand of an expression (``\\sqrt{2}``, ``4\\pi``,
    ``1 000``), or that the text qualifies (``not 2``, ``2?``), is no answer: the number is
    then None and the source says why (:func:`._expression.number_problem`)."""
    text = end_of_turn(text)
    if how == "full":
        return parse_number(text), "full"
    if how in ("last_number", "first_number"):
        return _pick(text, last=how == "last_number", source=how)
    order = ("answer_tag", "boxed", "answer_phrase", "last_number") if how == "auto" else (how,)
    for place in order:
        region: str | None
        if place == "answer_tag":
            region = answer_tag(text)
            if _differ(tags_side_by_side(text)):
                return None, AMBIGUOUS
        elif place == "boxed":
            spans = boxed_spans(text)
            region = spans[-1][2] if spans else None
            later = final_answer_after(text, spans[-1][1]) if spans and how == "auto" else None
            if later is not None:
                region, place = later, "answer_phrase"
            elif _differ(boxes_side_by_side(text, spans)):
                return None, AMBIGUOUS
        elif place == "answer_phrase":
            region = answer_phrase(text)
        elif place == "last_line":
            region = last_line(text)
        else:
            return _pick(text, last=True, source=place)
        if region is None:
            continue
        relations = list(_RELATION.finditer(region))
        if relations:
            # "2 + 3 = 5", "x = 5", "x \approx 5": the value is after the last relation.
            region = region[relations[-1].end() :]
        whole = parse_number(region)
        if whole is not None:
            return whole, place
        normalized = normalize_numeric_text(region)
        numbers = find_number_spans(normalized)
        if len(numbers) > 1 and _ALTERNATIVES.search(region):
            # "42 or 41", "\boxed{42, 41, 43}", "42 \pm 100", "42-43": hedging over several
            # candidates must not collect the credit of the one that happens to be right.
            return None, AMBIGUOUS
        if numbers:
            number, start, end = numbers[0]
            problem = number_problem(normalized, start, end)
            return (None, problem) if problem else (number, place)
    return None, how


def _differ(run: list[str]) -> bool:
    """Whether answers offered side by side (``\\boxed{2} or \\boxed{3}``, ``<answer>``
    tags; see :func:`._locate.boxes_side_by_side`) differ: a hedge. The same number twice is
    one answer."""
    if not run:
        return False
    keys = set()
    for box in run:
        number = parse_number(box)
        if number is None:
            return True
        keys.add((number.value, number.percent, number.scale))
    return len(keys) > 1


def _pick(text: str, *, last: bool, source: str) -> tuple[Number | None, str]:
    """The last (or first) number of ``text``, unless it is one operand of an expression."""
    normalized = normalize_numeric_text(text)
    numbers = find_number_spans(normalized)
    if not numbers:
        return None, source
    number, start, end = numbers[-1] if last else numbers[0]
    problem = number_problem(normalized, start, end)
    return (None, problem) if problem else (number, source)


def _reference_numbers(reference: object) -> list[Number]:
    items = reference if isinstance(reference, list) else [reference]
    out: list[Number] = []
    for item in items:
        if isinstance(item, bool):
            raise BadInput(f"{NAME}: task.reference must be a number, got a boolean")
        if isinstance(item, int | float):
            if not math.isfinite(item):
                raise BadInput(f"{NAME}: task.reference must be finite, got {item!r}")
            out.append(Number(value=float(item), text=repr(item)))
        elif isinstance(item, str):
            number = parse_number(item)
            if number is None:
                raise BadInput(f"{NAME}: task.reference {quote(item)} is not a number")
            if number.contradictory:
                raise BadInput(
                    f"{NAME}: task.reference {quote(item)} has both a percent and a scale word"
                )
            out.append(number)
        else:
            raise BadInput(
                f"{NAME}: task.reference must be a number, a numeric string, or a list of them; "
                f"got {type(item).__name__}"
            )
    if not out:
        raise BadInput(f"{NAME}: task.reference is an empty list")
    return out


def _fmt(value: float) -> str:
    return f"{value:.10g}"


@register(NAME)
class NumericAnswer(InlineVerifier[NumericSpec]):
    """Numeric answers with tolerance, percent, thousands separators, currency, fractions.

    ``task.reference`` is a number, a numeric string (``"12.5%"``, ``"$1,234"``, ``"3/4"``), or
    a list of acceptable values.
    """

    Spec = NumericSpec
    version: ClassVar[str] = "1"
    reference_required: ClassVar[bool] = True

    def check(self, trajectory: Trajectory, spec: NumericSpec) -> Result:
        if trajectory.task.reference is None:
            raise BadInput(f"{NAME} needs task.reference (the expected number)")
        references = _reference_numbers(trajectory.task.reference)
        text = completion_text(trajectory)
        if any(mark in text for mark in _OVERRIDES):
            return Result.failed(
                "the answer holds a bidi override character (U+202D/U+202E), which shows its "
                "digits in another order than they are written: write the number plainly",
                details={"extract": spec.extract, "source": "bidi_override"},
            )
        if len(text) > spec.max_answer_chars * 20:
            text = text[-spec.max_answer_chars * 20 :]  # bounds the inline work (linear)
        text = visible_text(text)
        if spec.strip_thinking:
            text = strip_thinking(text)
        if len(text) > spec.max_answer_chars * 10:
            # Keep the tail: the answer is at the end of a long chain of thought.
            text = text[-spec.max_answer_chars * 10 :]
        got, source = extract_number(text, spec.extract)
        if got is None and source == AMBIGUOUS:
            return Result.failed(
                "the answer offers several numbers: give exactly one final answer",
                details={"extract": spec.extract, "source": source},
            )
        if got is None and source in _REFUSED:
            return Result.failed(
                _REFUSED[source], details={"extract": spec.extract, "source": source}
            )
        if got is None:
            return Result.failed(
                "could not find a number in the answer: end with 'The answer is <number>' "
                "or put it in \\boxed{}",
                details={"extract": spec.extract},
            )
        details: dict[str, object] = {"answer": got.text, "source": source, "value": got.value}
        if got.contradictory:
            return Result.failed(
                f"{got.text!r} is a percent with a scale word: give one number",
                details=details,
            )
        best: tuple[float, float, float] | None = None  # (abs err, got, ref)
        for reference in references:
            value, ref_value = one_reading(got, reference, spec.percent, spec.scale_words)
            err = abs(value - ref_value)
            if err <= max(spec.abs_tol, spec.rel_tol * abs(ref_value)):
                details["matched"] = ref_value
                return Result.scored(1.0, feedback="correct", details=details)
            if best is None or err < best[0]:
                best = (err, value, ref_value)
        assert best is not None
        err, value, ref_value = best
        details["abs_err"] = err
        if not spec.reveal_reference:
            return Result.failed(f"wrong answer: got {got.text} (from {source})", details=details)
        if ref_value:
            rel = f" (rel err {100 * err / abs(ref_value):.3g}%)"
        else:
            rel = f" (abs err {err:.3g})"
        shown = got.text if _fmt(value) == _fmt(got.value) else f"{got.text} = {_fmt(value)}"
        return Result.failed(
            f"expected {_fmt(ref_value)}, got {shown}{rel} (from {source})", details=details
        )
