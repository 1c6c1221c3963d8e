"""``answer.math``: symbolic equivalence of expressions and LaTeX answers through sympy.

The model's answer is parsed by :mod:`verifiers.answers._latex` and
:mod:`verifiers.answers._mathparse` (``ast`` whitelist, bounded sizes; never ``eval``,
``sympify``, ``parse_expr`` or ``latex2sympy``) and compared in a worker process
(``ctx.run_in_worker``), because sympy's simplification has no time bound of its own: the
worker is killed when the spec's ``timeout_s`` passes.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field

from ..context import VerifierContext
from ..errors import BadInput, ResourceExhausted, VerifierTimeout
from ..protocol import Verifier
from ..registry import register
from ..text import completion_text
from ..types import Result, Trajectory
from ._common import AnswerSpec, quote, references_as_text
from ._exact import normalize_text
from ._extract import Extract, extract_answer

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
    """Relative tolerance for numeric comparison (numbers, and expressions evaluated at
    random points). Small by default: ``answer.math`` judges exact answers; use
    ``answer.numeric`` for measured or rounded quantities."""
    abs_tol: float = Field(default=1e-12, ge=0.0)
    """Absolute tolerance for numeric comparison."""
    timeout_s: float = Field(default=5.0, gt=0.0)
    """Time allowed for one comparison in the worker. An answer sympy cannot compare in time
    is a model failure (too complex), unless the item's own deadline ran out (then error)."""
    max_answer_chars: int = 1_000
    """A longer extracted answer fails without parsing."""


_WORDS = re.compile(r"^[A-Za-z][A-Za-z '\-]*$")


def equivalent(payload: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point: compare one answer with references. JSON in, JSON out.

    Payload: ``candidate`` (str), ``references`` (list of str), ``rel_tol``, ``abs_tol``.
    Returns ``{"equal", "reason", "method", "candidate", "matched", "bad_reference"}``.
    ``bad_reference`` is set (and nothing else is meaningful) when a reference that looks
    like math does not parse: that is the task's fault, not the model's.
    """
    from ._latex import MathParseError
    from ._mathparse import Tolerance, equal_pieces, parse_answer, show

    tol = Tolerance(float(payload["rel_tol"]), float(payload["abs_tol"]))
    references: list[str] = list(payload["references"])
    parsed_refs: list[tuple[str, Any]] = []
    for reference in references:
        try:
            parsed_refs.append((reference, parse_answer(reference)))
        except MathParseError as exc:
            if _WORDS.match(reference.strip()):
                continue  # a word answer ("no solution"): compared as text by the caller
            return {"bad_reference": f"reference {quote(reference)} does not parse: {exc}"}
    out: dict[str, Any] = {"equal": False, "reason": "", "method": "", "matched": None}
    try:
        got = parse_answer(str(payload["candidate"]))
    except MathParseError as exc:
        out["reason"] = f"could not parse the answer as math: {exc}"
        out["unparsable"] = True
        return out
    out["candidate"] = show(got)
    from sympy.core.sympify import SympifyError
    from sympy.polys.polyerrors import BasePolynomialError

    # What sympy raises on exotic but well-formed answers: they are "not equal". Anything
    # else (an AssertionError, a bug) escapes and the item is an error, never a silent 0.
    sympy_refusals = (
        TypeError,
        ValueError,
        ArithmeticError,
        AttributeError,
        NotImplementedError,
        RecursionError,
        IndexError,
        KeyError,
        SympifyError,
        BasePolynomialError,
    )
    reasons: list[str] = []
    for reference, want in parsed_refs:
        try:
            ok, why = equal_pieces(got, want, tol)
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
        details: dict[str, Any] = {"answer": answer[:200], "source": source}
        if len(answer) > spec.max_answer_chars:
            return Result.failed(
                f"answer is {len(answer)} characters long (limit {spec.max_answer_chars}); "
                "give a simplified final answer",
                details=details,
            )
        # Fast path: identical after text normalisation (no worker round trip).
        text_opts = {"ignore_case": False, "ignore_punctuation": False, "ignore_articles": False}
        got_text = normalize_text(answer, **text_opts).replace(" ", "")
        for reference in references:
            if normalize_text(reference, **text_opts).replace(" ", "") == got_text:
                details.update(method="text", matched=reference)
                return Result.scored(1.0, feedback="correct", details=details)
        payload = {
            "candidate": answer,
            "references": references,
            "rel_tol": spec.rel_tol,
            "abs_tol": spec.abs_tol,
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
