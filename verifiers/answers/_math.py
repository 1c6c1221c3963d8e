"""``answer.math``: symbolic equivalence of expressions and LaTeX answers through sympy.

The model's answer is parsed by :mod:`verifiers.answers._latex` and
:mod:`verifiers.answers._mathparse` (``ast`` whitelist, bounded sizes; never ``eval``,
``sympify``, ``parse_expr`` or ``latex2sympy``) and compared in a worker process
(``ctx.run_in_worker``), because sympy's simplification has no time bound of its own: the
worker is killed when the spec's ``timeout_s`` passes.
"""

from __future__ import annotations

import functools
import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from ..context import VerifierContext
from ..errors import BadInput, ResourceExhausted, VerifierTimeout
from ..protocol import Verifier
from ..registry import register
from ..text import completion_text
from ..types import Result, Trajectory
from ._common import AnswerSpec, quote, references_as_text
from ._exact import normalize_text
from ._latex import fold_scripts
from ._locate import (
    Extract,
    answer_phrase,
    answer_tag,
    end_of_turn,
    extract_answer,
    strip_thinking,
    tags_side_by_side,
)
from ._mathboxes import boxed_group, last_math_segment

__all__ = ["MathAnswer", "MathSpec", "equivalent"]

NAME = "answer.math"
WORKER_TARGET = "verifiers.answers._math:equivalent"
WARM_TARGET = "verifiers.answers._math:warm"


class MathSpec(AnswerSpec):
    """Settings of ``answer.math``. Every field has a default: ``task.spec`` may be omitted."""

    extract: Extract = "auto"
    """Where the answer is read from: ``auto`` (``<answer>`` tag, then the last
    ``\\boxed{}``, then "The answer is ...", then the last line), ``boxed``, ``answer_tag``,
    ``answer_phrase``, ``last_line`` or ``full``."""
    rel_tol: float = Field(default=1e-9, ge=0.0)
    """Relative tolerance between exact values (numbers, and expressions at test points),
    relative to the reference's magnitude. Small by default: ``answer.math`` judges exact
    answers; use ``answer.numeric`` for measured or rounded quantities."""
    abs_tol: float = Field(default=0.0, ge=0.0)
    """Absolute floor under every tolerance. 0 by default, so ``0`` never passes a tiny
    reference such as ``9.109e-31``; set it only when the task's scale is known."""
    decimal_rel_tol: float = Field(default=1e-6, ge=0.0)
    """A decimal answer for an exact non-integer reference (``0.333333`` for ``\\frac13``)
    passes when it is this close relatively *and* both round to the same ``decimal_places``
    decimals (Math-Verify's reading: six places). Set it to 0 to demand exact values. An
    integer reference always needs an exact answer (``3.0000001`` is not ``3``)."""
    decimal_places: int = Field(default=6, ge=0, le=15)
    """See ``decimal_rel_tol``: ``0.3333336`` rounds to ``0.333334`` and fails ``\\frac13``."""
    percent: Literal["either", "strict"] = "either"
    """``either``: a reference ``28\\%`` accepts ``28\\%``, ``28`` and ``0.28`` (and ``28\\%``
    answers a reference ``0.28`` or ``28``); an answer written with ``%`` must give the
    percent value. ``strict``: the percent sign is dropped and only ``28`` matches."""
    units: Literal["ignore", "refuse"] = "ignore"
    """``ignore``: unit text after a value is dropped (``125 \\text{ miles}``, ``6 cm^2``).
    ``refuse``: an answer with a unit fails, for tasks that ask for a bare number."""
    named_equations: bool = True
    """A naming equation stands for its value: ``x = 5`` answers ``5`` and
    ``(p,q)=(3,2)`` answers ``(3,2)``, as Math-Verify reads them. Off: an equation only
    matches an equation (``x = 2`` never matches ``y = 2`` either way)."""
    inequality_for_interval: bool = False
    """An inequality answer matches a set/interval reference (``x > 2`` for
    ``(2, \\infty)``). Off by default, as Math-Verify: a reference in interval notation asks
    for interval notation. An interval answering an inequality reference always compares."""
    sets_match_tuples: bool = True
    """A set and a tuple with the same elements match (``\\{1,2\\}`` vs ``(1,2)``), as in
    Math-Verify; off: braces and parentheses must agree."""
    decimal_comma: bool = True
    """A bare ``1,5`` / ``0,111`` answering (or being) a single-value reference reads as the
    decimal ``1.5`` (European notation, as Math-Verify reads it); never with three digits
    after the comma (``1,500`` is fifteen hundred) or a zero fraction (``2,0``). ``3{,}5`` is
    always ``3.5``. Off: a comma between digits is a list separator or thousands separator."""
    multiple_boxed: Literal["group", "last"] = "group"
    """``group``: the boxes that close the answer together are one answer in parts
    (``\\boxed{2} and \\boxed{3}`` is the list ``2, 3``; a hedge therefore fails a single
    reference). ``last``: only the last ``\\boxed{}`` is read."""
    timeout_s: float = Field(default=5.0, gt=0.0)
    """Time allowed for one comparison in the worker. An answer sympy cannot compare in time
    is a model failure (too complex), unless the item's own deadline ran out (then error)."""
    max_answer_chars: int = 1_000
    """A longer extracted answer fails without parsing."""


_WORDS = re.compile(r"^[A-Za-z][A-Za-z '\-]*$")
_DECIMAL_COMMA = re.compile(r"^\s*(\$?)\s*(-?\d{1,15}),(\d{1,15})\s*(\\?%)?\s*\1\s*$")


def decimal_comma(text: str) -> str | None:
    """The European decimal reading of a bare ``1,5`` / ``0,111`` / ``-2,75``, or None.

    A comma between digits is a list separator or a thousands separator in MATH-style data;
    it is a decimal comma only where that is unambiguous: the whole answer is one number with
    one comma, no space after it, and not three digits after it (``1,000`` is a thousand)
    unless the whole part is 0 (``0,111``). A zero fraction (``2,0``) stays a list: as a
    decimal it would add nothing, as two values it is a hedge. The caller uses this reading
    only against a single-value reference (``1,5`` still answers the list ``1, 5``)."""
    match = _DECIMAL_COMMA.match(text)
    if match is None:
        return None
    whole, frac = match.group(2), match.group(3)
    if frac.strip("0") == "" or (len(frac) == 3 and whole.lstrip("-") != "0"):
        return None
    return f"{whole}.{frac}{match.group(4) or ''}"


_LIST_KINDS = ("list", "tuple", "set")
_ATTACHED_UNIT = re.compile(
    r"^\s*(\$?)\s*(-?\d[\d,]*(?:\.\d+)?)\s*(?:m|cm|mm|km|kg|g|mg|s|ms|h|min|L|mL|ml|ft|in|yd|mi|lb|oz)"
    r"(?:\^\s*\{?\s*[23]\s*\}?|[²³])?\s*\1\s*\.?\s*$"
)


def attached_unit(text: str) -> str | None:
    """``1,000.99m²``, ``12cm``, ``3.5kg``: the number without a unit written against it
    (a bare number only: ``25 - 5m`` is an expression in m).

    A unit after a space is dropped by the parser (``units: ignore``); one written against
    the number reads as a product with a variable (``5m`` is 5 times m), so this reading is
    used only against a reference without symbols, where a product with ``m`` could never
    be meant. None when the text ends in no such unit."""
    match = _ATTACHED_UNIT.match(text[-200:])
    return None if match is None else match.group(2)


def _symbol_free(parsed: Any) -> bool:
    value = parsed[1].value
    return bool(getattr(value, "free_symbols", {1})) is False


def _tolerance(payload: dict[str, Any]) -> Any:
    from ._mathparse import Tolerance

    return Tolerance(
        rel=float(payload["rel_tol"]),
        abs=float(payload.get("abs_tol", 0.0)),
        decimal_rel=float(payload.get("decimal_rel_tol", 1e-6)),
        decimal_places=int(payload.get("decimal_places", 6)),
        percent=payload.get("percent", "either") == "either",
        named=bool(payload.get("named_equations", True)),
        sets_tuples=bool(payload.get("sets_match_tuples", True)),
        relation_for_set=bool(payload.get("inequality_for_interval", False)),
    )


@functools.lru_cache(maxsize=4096)
def _parse_reference(reference: str) -> Any:
    """References repeat across a GRPO group: each is parsed once per worker (the parse is
    a pure function of the text; the comparison never mutates it).

    References are task data, so two readings apply to them that are never tried on a
    model's answer: a reference that is a whole worked solution ("... Final Answer: The
    final answer is $28\\%$. I hope it is correct.") stands for the answer it states, and a
    chain of equations whose middle does not parse (``1 = \\zzz = x = 0``) for its last
    side."""
    from ._latex import MathParseError
    from ._mathparse import parse_answer

    try:
        return parse_answer(reference, units=True)
    except MathParseError as exc:
        failure = exc
    tries: list[str] = []
    stated = answer_phrase(reference) if len(reference) > 80 else None
    if stated:
        tries += [stated, *last_math_segment(stated, stated)]
    inner = reference.strip().strip("$").strip()
    if "=" in inner and "\\boxed" not in inner and len(inner) <= 200:
        tries.append(inner.rsplit("=", 1)[1])
    for text in tries:
        try:
            return parse_answer(text, units=True)
        except MathParseError:
            continue
    raise failure


def equivalent(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point: compare one answer with references. JSON in, JSON out.

    Payload: ``candidate`` (str), ``references`` (list of str), ``rel_tol``, and optionally
    the other :class:`MathSpec` comparison fields. Returns ``{"equal", "reason", "method",
    "candidate", "matched", "bad_reference"}``. ``bad_reference`` is set (and nothing else
    is meaningful) when a reference that looks like math does not parse: that is the task's
    fault, not the model's. Nothing the candidate holds raises out of here: a parse or
    arithmetic failure on the model's text is that model's "not equal".
    """
    from ._latex import MathParseError
    from ._mathparse import _SYMPY_REFUSALS, equal_pieces, parse_answer, show

    tol = _tolerance(payload)
    units = payload.get("units", "ignore") == "ignore"
    references: list[str] = list(payload["references"])
    parsed_refs: list[tuple[str, Any]] = []
    for reference in references:
        try:
            parsed_refs.append((reference, _parse_reference(reference)))
        except MathParseError as exc:
            if _WORDS.match(reference.strip()):
                continue  # a word answer ("no solution"): compared as text by the caller
            return {"bad_reference": f"reference {quote(reference)} does not parse: {exc}"}
    out: dict[str, Any] = {"equal": False, "reason": "", "method": "", "matched": None}
    got = None
    prose = None
    got_text = prose_text = str(payload["candidate"])
    for index, text in enumerate([str(payload["candidate"]), *payload.get("fallbacks", [])]):
        try:
            got, got_text = parse_answer(text, units=units, boxes=False), text
            if got[0] == "text" and index + 1 < 1 + len(payload.get("fallbacks", [])):
                # A sentence read as words ("The maximum number ... is 19"): the value it
                # states (a fallback) is the answer; the words are the last resort.
                if prose is None:
                    prose, prose_text = got, text
                got = None
                continue
            break
        except MathParseError as exc:
            if index == 0:
                out["reason"] = f"could not parse the answer as math: {exc}"
        except _SYMPY_REFUSALS as exc:  # belt and braces: the parser should have said why
            if index == 0:
                out["reason"] = f"could not parse the answer as math ({type(exc).__name__})"
    if got is None:
        got, got_text = prose, prose_text
    if got is None:
        out["unparsable"] = True
        return out
    out["candidate"] = show(got)
    from sympy.core.sympify import SympifyError
    from sympy.polys.polyerrors import BasePolynomialError

    # What sympy raises on exotic but well-formed answers: they are "not equal". Anything
    # else (an AssertionError, a bug) escapes and the item is an error, never a silent 0.
    sympy_refusals = (*_SYMPY_REFUSALS, SympifyError, BasePolynomialError)
    reasons: list[str] = []
    commas = bool(payload.get("decimal_comma", True))
    got_decimal = decimal_comma(got_text) if commas else None
    got_bare = attached_unit(got_text) if units else None
    for reference, want in parsed_refs:
        # One reading per side, chosen by the other side's shape (see decimal_comma and
        # attached_unit): never two readings of one answer against one reference.
        ref_decimal = decimal_comma(reference) if commas else None
        try:
            if got[0] in _LIST_KINDS and want[0] == "expr" and got_decimal is not None:
                got_read = parse_answer(got_decimal, units=units, boxes=False)
            elif got_bare is not None and want[0] == "expr" and _symbol_free(want):
                got_read = parse_answer(got_bare, units=units, boxes=False)
            else:
                got_read = got
            if want[0] in _LIST_KINDS and got_read[0] == "expr" and ref_decimal is not None:
                want = _parse_reference(ref_decimal)
        except MathParseError:
            got_read = got
        try:
            ok, why = equal_pieces(got_read, want, tol)
        except sympy_refusals as exc:
            ok, why = False, f"could not compare ({type(exc).__name__})"
        if ok:
            out.update(equal=True, method=why, matched=reference)
            return out
        reasons.append(why)
    out["reason"] = reasons[0] if reasons else "not equal"
    out["references"] = [show(want) for _, want in parsed_refs]
    return out


def warm(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point: import sympy and the parser, compare nothing."""
    from . import _mathparse

    return {"ok": bool(_mathparse.MAX_NODES)}


async def _compare(
    ctx: VerifierContext, payload: dict[str, Any], timeout_s: float
) -> tuple[dict[str, Any] | None, Exception | None]:
    """Run :func:`equivalent` in a worker: ``(verdict, None)`` or ``(None, limit_error)``.

    A timeout on a cold worker may have been spent importing sympy (a second or more on a
    loaded machine), which is not the answer's fault: then one worker is warmed with the rest
    of the deadline and the comparison gets its full budget once more.

    Raises:
        VerifierTimeout: the item's own deadline ran out (not this answer's budget).
    """
    for attempt in (1, 2):
        budget = min(timeout_s, ctx.remaining())
        try:
            out: dict[str, Any] = await ctx.run_in_worker(WORKER_TARGET, payload, timeout=budget)
            return out, None
        except ResourceExhausted as exc:
            return None, exc
        except VerifierTimeout as exc:
            if budget < timeout_s and ctx.remaining() <= 0.01:
                raise  # the item's deadline, not this answer, ran out
            if attempt == 2:
                return None, exc
            await ctx.run_in_worker(WARM_TARGET, {}, timeout=ctx.remaining())
    raise AssertionError("unreachable")


@register(NAME)
class MathAnswer(Verifier[MathSpec]):
    """Math answers (expressions, LaTeX, tuples, sets, intervals, equations) by equivalence.

    ``task.reference`` is the expected answer (LaTeX or plain, e.g. ``"\\frac{\\sqrt3}{2}"``,
    ``"[1, 3)"``, ``"x^2 - 1"``) or a list of acceptable answers.
    """

    Spec = MathSpec
    version: ClassVar[str] = "1"
    reference_required: ClassVar[bool] = True

    async def verify(self, trajectory: Trajectory, spec: MathSpec, ctx: VerifierContext) -> Result:
        references = references_as_text(trajectory.task.reference, NAME)
        answer, source = extract_answer(
            completion_text(trajectory), spec.extract, thinking=spec.strip_thinking
        )
        if answer is None:
            return Result.failed(
                "could not find an answer: put the final answer in \\boxed{}",
                details={"extract": spec.extract},
            )
        if source == "answer_tag":
            # "<answer>2</answer> or <answer>3</answer>": two tagged answers are a hedge (two
            # boxes are one group, judged as a list below).
            turn = completion_text(trajectory)
            turn = end_of_turn(strip_thinking(turn) if spec.strip_thinking else turn)
            run = tags_side_by_side(turn)
            other = next((box for box in run if box != run[-1]), None)
            if other is not None:
                return Result.failed(
                    f"two answers given side by side (answer_tag: {quote(other, 30)} and "
                    f"{quote(run[-1], 30)}): give exactly one final answer",
                    details={"source": source, "hedged": True},
                )
        if spec.multiple_boxed == "group" and source in ("boxed", "answer_tag", "answer_phrase"):
            # extract_answer keeps the last box; the whole final group of boxes is the answer.
            text = completion_text(trajectory)
            text = end_of_turn(strip_thinking(text) if spec.strip_thinking else text)
            if source == "answer_tag":
                text = answer_tag(text) or ""
            elif source == "answer_phrase":
                text = answer_phrase(text) or ""
            group = boxed_group(text)
            if group:
                answer = group
        # The last line of a completion is often a sentence around the math: "Therefore
        # $x \\geq 5$ is the solution." Its last delimited formula is tried when the whole
        # does not parse.
        region = answer
        if source == "last_line":
            region = completion_text(trajectory)
            region = end_of_turn(strip_thinking(region) if spec.strip_thinking else region)
        details: dict[str, Any] = {"answer": answer[:200], "source": source}
        fallbacks = last_math_segment(
            answer, region, sentences=source in ("last_line", "answer_phrase")
        )
        if len(answer) > spec.max_answer_chars and source in ("last_line", "answer_phrase"):
            # A one-paragraph solution without a box: its last line is the whole text, and
            # the answer is the formula or number its last sentence gives.
            short = [f for f in fallbacks if len(f) <= spec.max_answer_chars]
            if short:
                answer, fallbacks = short[0], short[1:]
                details["answer"] = answer[:200]
        if len(answer) > spec.max_answer_chars:
            return Result.failed(
                f"answer is {len(answer)} characters long (limit {spec.max_answer_chars}); "
                "give a simplified final answer",
                details=details,
            )
        # Fast path: identical after text normalisation (no worker round trip).
        text_opts = {"ignore_case": False, "ignore_punctuation": False, "ignore_articles": False}
        # Superscripts are folded to powers first: NFKC alone reads "1²" as "12".
        got_text = normalize_text(fold_scripts(answer), **text_opts).replace(" ", "")
        for reference in references:
            if normalize_text(fold_scripts(reference), **text_opts).replace(" ", "") == got_text:
                details.update(method="text", matched=reference)
                return Result.scored(1.0, feedback="correct", details=details)
        payload = {
            "candidate": answer,
            "references": references,
            "rel_tol": spec.rel_tol,
            "abs_tol": spec.abs_tol,
            "decimal_rel_tol": spec.decimal_rel_tol,
            "decimal_places": spec.decimal_places,
            "percent": spec.percent,
            "units": spec.units,
            "named_equations": spec.named_equations,
            "sets_match_tuples": spec.sets_match_tuples,
            "inequality_for_interval": spec.inequality_for_interval,
            "decimal_comma": spec.decimal_comma,
            "fallbacks": fallbacks,
        }
        out, limit = await _compare(ctx, payload, spec.timeout_s)
        if out is None:
            details["limit"] = type(limit).__name__
            return Result.failed(
                f"could not compare your answer within the limits ({limit}); give a simpler "
                "closed form",
                details=details,
            )
        if out.get("bad_reference"):
            raise BadInput(f"{NAME}: {out['bad_reference']}")
        details.update(
            method=out.get("method", ""),
            parsed=out.get("candidate"),
            matched=out.get("matched"),
        )
        if out.get("equal"):
            return Result.scored(1.0, feedback="correct", details=details)
        if out.get("unparsable"):
            # A word answer may still equal a word reference ("no solution").
            words = normalize_text(
                answer, ignore_case=True, ignore_punctuation=True, ignore_articles=False
            )
            for reference in references:
                if not _WORDS.match(reference.strip()):
                    continue
                if (
                    normalize_text(
                        reference, ignore_case=True, ignore_punctuation=True, ignore_articles=False
                    )
                    == words
                ):
                    details.update(method="text", matched=reference)
                    return Result.scored(1.0, feedback="correct", details=details)
            return Result.failed(f"{out['reason']} (answer {quote(answer)})", details=details)
        reason = out.get("reason") or "not equal"
        if spec.reveal_reference:
            expected = " or ".join(quote(r) for r in references[:3])
            feedback = f"expected {expected}, got {quote(answer)} ({reason})"
        else:
            feedback = f"wrong answer {quote(answer)} ({reason})"
        return Result.failed(feedback, details=details)
