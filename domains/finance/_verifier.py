"""``finance.formula``: check extracted figures, the formula over them, and the answer.

Three components, each in [0, 1]:

- ``grounding``: share of operands (and of non-trivial literals in the formula) found at
  their citation, or anywhere in the document without one, within half a unit of the last
  printed digit;
- ``consistency``: the formula (or FinQA program) over the operands reproduces the stated
  answer;
- ``correct``: the answer matches ``task.reference`` (1% relative by default).

The reward is ``correct`` when there is a reference and ``grounding * consistency`` when there
is none, unless ``spec.weights`` asks for a weighted mean. The feedback has one line per check
that failed, naming the operand, cell or step at fault, and never the reference value.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Hashable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import Field

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, VerifierError
from verifiers.protocol import Spec, Verifier
from verifiers.registry import register
from verifiers.text import completion_text, prompt_text
from verifiers.types import Result, Trajectory

from ._answer import SCALES, Answer, AnswerError, find_answer, read_answer
from ._dependence import Dependence, dependence
from ._document import Document, FigureMatch
from ._formula import (
    Formula,
    FormulaError,
    FormulaLimits,
    FormulaRejected,
    Program,
    evaluate,
    is_constant,
    parse_formula,
    parse_program,
    run_program,
)
from ._numbers import Number, parse_number, scale_factor
from ._relevance import relevance
from ._sources import PdfNeeds, load_document, load_inline

__all__ = ["FinanceSpec", "FormulaCrossCheck", "Reference"]

_COMPONENTS = ("grounding", "consistency", "correct")


class FinanceSpec(Spec):
    """Settings of ``finance.formula`` (``task.spec``)."""

    document: dict[str, Any] | None = None
    """The source: ``{"pdf": path}``, ``{"table": rows, "text": [...]}``, ``{"tables": [...]}``,
    ``{"csv": path or text}``, ``{"html": path or markup}``; optional ``scale``. Without a
    document, ``grounding`` is not computed."""
    rel_tol: float = Field(default=0.01, ge=0.0, le=1.0)
    """Relative tolerance of ``correct``."""
    decimals: int | None = Field(default=None, ge=0, le=12)
    """When set (or given in the reference), the answer must round to the reference at this
    many decimals instead of meeting ``rel_tol``."""
    mode: Literal["default", "finqa"] = "default"
    """``finqa``: strict FinQA execution accuracy (both rounded to 5 decimals, equal)."""
    percent_fraction_credit: float = Field(default=0.0, ge=0.0, le=1.0)
    """Credit for an answer that is right except for a percent/fraction (x100) mix-up."""
    consistency_rtol: float = Field(default=0.001, ge=0.0, le=1.0)
    """Relative slack of ``consistency`` on top of the answer's printed precision."""
    grounding_sign: Literal["exact", "magnitude"] = "magnitude"
    """``magnitude`` accepts ``1,234`` for a printed ``(1,234)`` (accounting convention)."""
    require_formula: bool = True
    """A missing formula/program scores ``consistency`` 0 (else the component is omitted)."""
    weights: dict[str, float] | None = None
    """Weighted mean over components instead of the default rule, e.g.
    ``{"correct": 0.6, "grounding": 0.2, "consistency": 0.2}``."""
    max_formula_chars: int = Field(default=2000, ge=1, le=20000)
    """Longest formula or program accepted."""
    pdf_timeout_s: float = Field(default=60.0, gt=0)
    """Time limit of one PDF extraction (worker process killed after it)."""
    pdf_memory_mb: int = Field(default=2048, ge=64)
    """Memory limit of the extraction worker."""
    max_pages: int = Field(default=300, ge=1)
    """PDFs with more pages are rejected as ``bad_input``."""


class Reference:
    """``task.reference``: a number, a printed figure, or ``{"answer", "scale", "decimals"}``.

    Raises:
        BadInput: unreadable reference (the verifier cannot judge).
    """

    __slots__ = ("boolean", "decimals", "scale", "value")

    def __init__(self, raw: Any) -> None:
        scale: Any = None
        decimals: Any = None
        if isinstance(raw, dict):
            scale = raw.get("scale")
            decimals = raw.get("decimals")
            raw = raw.get("answer")
        if scale is not None and scale not in SCALES:
            raise BadInput(f"reference scale {scale!r} must be one of {SCALES}")
        if decimals is not None and (not isinstance(decimals, int) or not 0 <= decimals <= 12):
            raise BadInput("reference decimals must be an integer from 0 to 12")
        self.boolean: bool | None = None
        self.value: float | None = None
        if isinstance(raw, bool):
            self.boolean = raw
        elif isinstance(raw, str) and raw.strip().lower() in ("yes", "no", "true", "false"):
            self.boolean = raw.strip().lower() in ("yes", "true")
        else:
            number = parse_number(raw)
            if number is None:
                raise BadInput(f"reference answer {raw!r:.60} is not a number")
            self.value = number.value
            if number.percent:
                scale = scale or "percent"
            elif number.scale:
                scale = scale or number.scale
        self.scale: str = scale or ""
        self.decimals: int | None = decimals


_references: dict[tuple[Any, ...], Reference] = {}


def _reference(raw: Any) -> Reference:
    """A parsed reference, memoised for plain values (GRPO groups share one per question).

    A :class:`Reference` is never mutated after construction, so sharing one is safe.
    """
    if isinstance(raw, dict):
        if len(raw) > 3 or not set(raw) <= {"answer", "scale", "decimals"}:
            return Reference(raw)
        key: tuple[Any, ...] = (
            "d",
            type(raw.get("answer")),
            raw.get("answer"),
            raw.get("scale"),
            type(raw.get("decimals")),
            raw.get("decimals"),
        )
    else:
        key = ("v", type(raw), raw)
    try:
        found = _references.get(key)
    except TypeError:  # an unhashable answer: parse it every time
        return Reference(raw)
    if found is None:
        found = Reference(raw)
        if len(_references) >= 4096:
            _references.clear()
        _references[key] = found
    return found


@lru_cache(maxsize=64)
def _limits(max_length: int) -> FormulaLimits:
    """One limits object per length (it is part of the parsed-formula cache key)."""
    return FormulaLimits(max_length=max_length)


def _factor(scale: str) -> float:
    return 0.01 if scale == "percent" else scale_factor(scale)


def _round(value: float, digits: int) -> Decimal | None:
    """``value`` rounded half-up to ``digits``; None when it cannot be (inf, nan, too many
    digits for the context): callers treat None as "not equal", never as 0."""
    try:
        return Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return None


@register("finance.formula")
class FormulaCrossCheck(Verifier[FinanceSpec]):
    """Cross-check a financial answer: grounding, consistency, correctness (see module doc)."""

    Spec = FinanceSpec
    version: ClassVar[str] = "2"
    cacheable: ClassVar[bool] = False

    async def verify(
        self, trajectory: Trajectory, spec: FinanceSpec, ctx: VerifierContext
    ) -> Result:
        reference = (
            None if trajectory.task.reference is None else _reference(trajectory.task.reference)
        )
        document: Document | None = None
        doc_details: dict[str, Any] = {}
        completion = completion_text(trajectory)
        if spec.document is not None:
            document, doc_details = await load_document(
                spec.document,
                trajectory,
                ctx,
                pdf_timeout=spec.pdf_timeout_s,
                pdf_memory_mb=spec.pdf_memory_mb,
                max_pages=spec.max_pages,
                needs=pdf_needs(completion, spec) if "pdf" in spec.document else None,
            )
        return judge(
            completion,
            spec,
            document,
            reference,
            doc_details,
            question=prompt_text(trajectory),
        )

    def verify_inline(self, trajectory: Trajectory, spec: FinanceSpec) -> Result | None:
        """Judge right in the engine's loop when the document is inline (or absent).

        Inline tables and text are parsed once per distinct document (memoised) and an item
        then costs tens of microseconds, so the engine's task, deadline and context per item
        would dominate. PDFs (worker process), CSV/HTML (files, pandas) and inline documents
        too large to parse within about a millisecond return None: the engine then awaits
        :meth:`verify`, which gives the same verdict. So do inputs the verifier cannot judge
        (``BadInput``): the async path raises the same error, and the engine reports it there
        with the verifier's full ``name@version``, exactly as before this fast path existed.
        """
        try:
            reference = (
                None if trajectory.task.reference is None else _reference(trajectory.task.reference)
            )
            doc_details: dict[str, Any] = {}
            document: Document | None = None
            if spec.document is not None:
                loaded = load_inline(spec.document)
                if loaded is None:
                    return None
                document, doc_details = loaded
            return judge(
                completion_text(trajectory),
                spec,
                document,
                reference,
                doc_details,
                question=prompt_text(trajectory),
            )
        except VerifierError:
            return None


def pdf_needs(completion: str, spec: FinanceSpec) -> PdfNeeds:
    """The figures :func:`judge` will look up in the document, and where (lazy PDF reading).

    Mirrors judge's reading of the answer: the operands the formula or program uses and its
    literals. An answer judge rejects before grounding needs no figure.
    """
    try:
        answer = read_answer(find_answer(completion))
        limits = _limits(spec.max_formula_chars)
        formula = parse_formula(answer.formula, limits) if answer.formula is not None else None
        program = (
            parse_program(answer.program, limits)
            if answer.program is not None and formula is None
            else None
        )
    except (AnswerError, FormulaError):
        return PdfNeeds()
    used = formula.names if formula is not None else (program.names if program else frozenset())
    computes = formula is not None or program is not None
    figures: list[tuple[Number, dict[str, Any] | None]] = [
        (operand.number, operand.cite)
        for operand in answer.operands.values()
        if operand.number is not None and (not computes or operand.name in used)
    ]
    if formula is not None:
        figures += [
            (Number(value, decimals), None)
            for value, decimals in formula.literals
            if not is_constant(value)
        ]
    elif program is not None:
        figures += [(num, None) for raw in program.literals if (num := parse_number(raw))]
    full = program is not None and bool(program.rows)
    full = full or any(
        isinstance(cite.get("table"), int) and not isinstance(cite.get("table"), bool)
        for _, cite in figures
        if cite
    )
    return PdfNeeds(tuple(figures), full)


def judge(
    completion: str,
    spec: FinanceSpec,
    document: Document | None,
    reference: Reference | None,
    doc_details: dict[str, Any] | None = None,
    *,
    question: str = "",
) -> Result:
    """Score a completion against a loaded document (the synchronous core of the verifier).

    Without a reference and with a document, ``relevance`` (see ``_relevance``) joins the
    components and the reward: the figures must be the ones ``question`` asks about.
    """
    details: dict[str, Any] = {"document": doc_details or {}}
    zeros = {c: 0.0 for c in _COMPONENTS if c != "correct" or reference is not None}
    if document is None:
        zeros.pop("grounding", None)
    elif reference is None:
        zeros["relevance"] = 0.0
    try:
        answer = read_answer(find_answer(completion))
    except AnswerError as exc:
        return Result.failed(f"answer: {exc}", components=zeros, details=details)
    limits = _limits(spec.max_formula_chars)
    try:
        formula = parse_formula(answer.formula, limits) if answer.formula is not None else None
        program = (
            parse_program(answer.program, limits)
            if answer.program is not None and formula is None
            else None
        )
    except FormulaError as exc:
        return _rejected(answer, exc, zeros, details)

    components: dict[str, float] = {}
    feedback: list[str] = []
    effective_scale = (
        answer.scale if answer.scale is not None else (reference.scale if reference else "")
    )

    # -- grounding -----------------------------------------------------------------------
    used = formula.names if formula is not None else (program.names if program else frozenset())
    found_at: list[tuple[str, Any]] = []
    cells: dict[Any, tuple[Hashable, bool]] = {}
    """Dependence-test input key -> (the document cell it was found at, cited precisely)."""
    if document is not None:
        checked: list[dict[str, Any]] = []
        unused = [name for name in answer.operands if name not in used]
        if unused and (formula is not None or program is not None):
            details["unused_operands"] = unused[:20]
        for operand in answer.operands.values():
            if (formula is not None or program is not None) and operand.name not in used:
                continue  # a figure the computation ignores is no evidence of anything
            if operand.number is None:
                checked.append({"operand": operand.name, "found": False, "reason": "not a number"})
                continue
            match = document.locate(operand.number, operand.cite, sign=spec.grounding_sign)
            if match.found:
                found_at.append((f"operand {operand.name}", match))
                key = ("name", operand.name) if formula is not None else operand.name
                cells[key] = (_cell_of(match), _precise(operand.cite))
            checked.append(
                {
                    "operand": operand.name,
                    "value": operand.raw,
                    "found": match.found,
                    "where": match.where,
                    "printed": match.printed,
                    "how": match.how,
                    "reason": match.reason,
                }
            )
        literals: list[tuple[str, Number, Any]] = []
        if formula is not None:
            literals = [
                (f"{value:g}", Number(value, decimals), ("literal", value))
                for value, decimals in formula.literals
                if not is_constant(value)
            ]
        elif program is not None:
            literals = [
                (raw, num, raw)
                for raw in program.literals
                if (num := parse_number(raw)) is not None
            ]
        for raw, number, key in literals:
            match = document.locate(number, None, sign=spec.grounding_sign)
            if match.found:
                found_at.append((f"literal {raw}", match))
                cells[key] = (_cell_of(match), False)
            checked.append(
                {
                    "literal": raw,
                    "found": match.found,
                    "where": match.where,
                    "how": match.how,
                    "reason": match.reason,
                }
            )
        if checked:
            grounded = sum(1 for c in checked if c["found"])
            components["grounding"] = grounded / len(checked)
            for c in checked:
                if not c["found"]:
                    what = (
                        f"operand {c['operand']}" if "operand" in c else f"literal {c['literal']}"
                    )
                    shown = f" = {c['value']!r}" if c.get("value") else ""
                    feedback.append(f"grounding: {what}{shown}: {c['reason']}")
                    break
        else:
            components["grounding"] = 0.0
            feedback.append("grounding: no operands given; cite the figures you used")
        details["grounding"] = checked

    # -- consistency ---------------------------------------------------------------------
    if formula is None and program is None:
        if spec.require_formula:
            components["consistency"] = 0.0
            feedback.append("consistency: no formula or program given")
    else:
        try:
            components["consistency"] = _consistency(
                answer,
                formula,
                program,
                document,
                effective_scale,
                spec,
                feedback,
                details,
                _Evidence(cells, question),
            )
        except FormulaRejected as exc:
            return _rejected(answer, exc, zeros, details)

    # -- relevance (no reference) ----------------------------------------------------------
    if document is not None and reference is None:
        share, lines, per_figure = relevance(found_at, question, document.text)
        components["relevance"] = share
        feedback.extend(lines)
        details["relevance"] = per_figure

    # -- correctness ---------------------------------------------------------------------
    if reference is not None:
        components["correct"] = _correctness(answer, reference, spec, feedback, details)

    reward = _reward(components, spec, reference is not None)
    return Result.scored(
        reward,
        components=components,
        feedback="\n".join(feedback) or "all checks passed",
        details=details,
    )


class _Evidence:
    """What the dependence test needs from grounding and the prompt."""

    __slots__ = ("cells", "question")

    def __init__(self, cells: dict[Any, tuple[Hashable, bool]], question: str) -> None:
        self.cells = cells
        """Input key -> (document cell, cited precisely)."""
        self.question = question

    def groups(self, inputs: dict[Any, float]) -> dict[Any, Any]:
        """Input key -> its figure: quotations of one cell are one figure, and so are equal
        values unless both are cited precisely (row and column, or paragraph) at different
        cells (an ambiguous citation of a value printed twice may mean either cell, so it
        cannot stand for a second, independent figure)."""
        keys = list(inputs)
        root = {k: k for k in keys}

        def find(k: Any) -> Any:
            while root[k] != k:
                root[k] = root[root[k]]
                k = root[k]
            return k

        def join(a: Any, b: Any) -> None:
            root[find(a)] = find(b)

        # Linear: one pass per cell and per value (a long formula must not cost n^2 here).
        by_cell: dict[Hashable, Any] = {}
        by_value: dict[float, list[Any]] = {}
        for k in keys:
            cell, _ = self.cells.get(k, (None, False))
            if cell is not None:
                if cell in by_cell:
                    join(k, by_cell[cell])
                else:
                    by_cell[cell] = k
            by_value.setdefault(abs(inputs[k]), []).append(k)
        for bucket in by_value.values():
            if len(bucket) > 1 and not all(self.cells.get(k, (None, False))[1] for k in bucket):
                # An imprecise quotation may mean any cell printing this value.
                for k in bucket[1:]:
                    join(k, bucket[0])
        return {k: find(k) for k in keys}


def _precise(cite: dict[str, Any] | None) -> bool:
    """A citation that names one cell: row and column, or a paragraph."""
    if not cite:
        return False
    return ("row" in cite and "column" in cite) or "paragraph" in cite


def _cell_of(match: FigureMatch) -> Hashable:
    if match.table is not None:
        return ("cell", id(match.table), match.row, match.column, match.printed)
    return ("paragraph", match.paragraph, match.printed)


def _consistency(
    answer: Answer,
    formula: Formula | None,
    program: Program | None,
    document: Document | None,
    scale: str,
    spec: FinanceSpec,
    feedback: list[str],
    details: dict[str, Any],
    evidence: _Evidence | None = None,
) -> float:
    evidence = evidence or _Evidence({}, "")
    values: dict[str, float] = {}
    base_units = False
    for operand in answer.operands.values():
        if operand.number is None:
            feedback.append(
                f"consistency: operand {operand.name} = {operand.raw!r} is not a number"
            )
            return 0.0
        values[operand.name] = operand.number.base
        base_units = base_units or bool(operand.number.scale)
    rows = document.row_numbers if document is not None else (lambda _label: None)
    what = "formula" if formula is not None else "program"
    inputs: dict[Any, float] = {}
    compute: Any
    try:
        if formula is not None:
            result: float | bool = evaluate(formula, values)
            inputs = {("name", n): values[n] for n in sorted(formula.names)}
            # The same figure written twice is one input (like an operand name used twice).
            inputs.update({("literal", v): v for v, _ in formula.literals if not is_constant(v)})
            compute = _formula_compute(formula, values)
        else:
            assert program is not None
            read: dict[str, float] = {}
            result = run_program(program, values, rows, inputs=read)
            inputs = dict(read)
            compute = _program_compute(program, values, rows)
    except FormulaRejected:
        raise
    except FormulaError as exc:
        feedback.append(f"consistency: {exc}")
        return 0.0
    details["computed"] = result
    if not inputs:
        feedback.append(
            f"consistency: the {what} uses no figure from the document (only constants)"
        )
        return 0.0
    if isinstance(result, bool) or answer.boolean is not None:
        ok = isinstance(result, bool) and result == answer.boolean
        if not ok:
            feedback.append(
                f"consistency: the {what} gives {_show(result)}, the answer says {answer.text}"
            )
            return 0.0
        return _depends(compute, inputs, result, 0.0, what, formula, program, feedback, evidence)
    assert answer.value is not None
    factor = scale_factor(scale) if base_units and scale != "percent" else 1.0
    stated = answer.value * factor
    if not (math.isfinite(stated) and math.isfinite(result)):
        feedback.append("consistency: the answer or the formula's result is not a finite number")
        return 0.0
    half = 0.5 * 10.0 ** (-answer.decimals) * factor
    candidates = [(stated, half)]
    if scale == "percent":
        candidates.append((stated / 100.0, half / 100.0))
    # Tightest reading first: an answer of 0 percent matches as a percentage and as a
    # fraction, and the dependence test must use the tolerance of the fraction reading.
    slacks = [(t, max(h, spec.consistency_rtol * abs(t), 1e-9)) for t, h in candidates]
    for target, slack in sorted(slacks, key=lambda c: c[1]):
        if abs(result - target) <= slack:
            return _depends(
                compute, inputs, result, slack, what, formula, program, feedback, evidence
            )
    feedback.append(
        f"consistency: the {what} gives {result:.6g}, but the answer says {answer.text}"
        + (f" {scale}" if scale else "")
    )
    return 0.0


def _formula_compute(formula: Formula, values: dict[str, float]) -> Any:
    def compute(changed: Any) -> float:
        names = dict(values)
        literals: dict[int, float] = {}
        for (kind, key), value in changed.items():
            if kind == "name":
                names[key] = value
            else:
                literals.update(
                    {
                        id(node): value
                        for (v, _), node in zip(
                            formula.literals, formula.literal_nodes, strict=True
                        )
                        if v == key
                    }
                )
        return evaluate(formula, names, literals=literals)

    return compute


def _program_compute(program: Program, values: dict[str, float], rows: Any) -> Any:
    def compute(changed: Any) -> float | bool:
        return run_program(program, values, rows, overrides=changed)

    return compute


def _input_name(key: Any, formula: Formula | None, program: Program | None) -> str:
    if formula is not None:
        kind, ident = key
        return str(ident) if kind == "name" else f"literal {ident:g}"
    return f"{key!r:.40}"


_EXTREME = re.compile(
    r"\b(?:max(?:imum)?|min(?:imum)?|high(?:er|est)|larg(?:er|est)|great(?:er|est)|"
    r"low(?:er|est)|small(?:er|est)|most|least|peak|bigg(?:er|est))\b",
    re.I,
)
"""Words of a question that asks for a selection (the larger of two figures is the answer)."""


def _selection_candidates(formula: Formula | None) -> tuple[set[Any], bool]:
    """Inputs that are bare arguments (``a``, ``-a``) of a ``min``/``max`` call, and whether
    the whole formula is such a call."""
    if formula is None or ("min" not in formula.source and "max" not in formula.source):
        return set(), False  # the usual case, without walking the tree
    found: set[Any] = set()
    for node in ast.walk(formula.tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
        ):
            continue
        args: list[ast.expr] = []
        for arg in node.args:
            args.extend(arg.elts if isinstance(arg, ast.Tuple | ast.List) else [arg])
        for arg in args:
            while isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub | ast.UAdd):
                arg = arg.operand
            if isinstance(arg, ast.Name):
                found.add(("name", arg.id))
            elif isinstance(arg, ast.Constant) and isinstance(arg.value, int | float):
                found.add(("literal", float(arg.value)))
    top = formula.tree
    whole = (
        isinstance(top, ast.Call)
        and isinstance(top.func, ast.Name)
        and top.func.id in ("min", "max")
    )
    return found, whole


_DEPENDENCE_MEMO: dict[tuple[Any, ...], Dependence[Any]] = {}
"""Dependence verdicts by (computation, figures, cells, result, tolerance); bounded."""


def _depends(
    compute: Any,
    inputs: dict[Any, float],
    result: float | bool,
    slack: float,
    what: str,
    formula: Formula | None,
    program: Program | None,
    feedback: list[str],
    evidence: _Evidence,
) -> float:
    """1.0 when the result depends on every cited cell (see ``_dependence``) and computes
    something; else 0.0 with a feedback line."""
    candidates, selection = _selection_candidates(formula)
    figure = evidence.groups(inputs)
    # GRPO groups repeat completions: the verdict of one computation over the same figures
    # (values and cells) at the same tolerance is computed once.
    source = formula.source if formula is not None else program.source if program else ""
    key = (what, source, tuple(inputs.items()), tuple(figure.values()), result, slack)
    memo_key: tuple[Any, ...] | None = key
    found: Dependence[Any] | None
    try:
        found = _DEPENDENCE_MEMO.get(key)
    except TypeError:  # an unhashable input key: no memo
        memo_key, found = None, None
    if found is None:
        found = dependence(
            compute,
            inputs,
            result,
            slack,
            cell=figure.__getitem__,
            candidates=candidates,
        )
        if memo_key is not None:
            if len(_DEPENDENCE_MEMO) >= 4096:
                _DEPENDENCE_MEMO.clear()
            _DEPENDENCE_MEMO[memo_key] = found
    if found.dead:
        shown = ", ".join(_input_name(k, formula, program) for k in found.dead)
        feedback.append(
            f"consistency: figure(s) {shown} do not affect the {what}'s result beyond the "
            "answer's precision (cancelled against another quotation of the same cell, "
            f"multiplied away, vanishing or hidden behind min/max): the {what} must compute "
            "the answer from every figure it cites"
        )
        return 0.0
    # A formula that is a whole min/max picks one of its figures: a restatement unless the
    # question asks for the larger/smaller one. Otherwise a restatement is one locally live
    # figure whose value is the result (``a * 100``, ``max(o / 2, a)``).
    asks_selection = selection and bool(_EXTREME.search(evidence.question[:4000]))
    if not isinstance(result, bool) and (
        (selection and not asks_selection and any(_restates(v, result) for v in inputs.values()))
        or (
            not selection and len(found.local) == 1 and _restates(inputs[found.local[0][0]], result)
        )
    ):
        feedback.append(
            f"consistency: the {what} only restates one figure (times a power of ten): "
            "compute the answer from the figures the question asks about"
        )
        return 0.0
    return 1.0


def _restates(value: float, result: float) -> bool:
    """The result is ``value`` up to sign and a power of ten."""
    if value == 0:
        return result == 0
    ratio = abs(result / value)
    return any(abs(ratio - 10.0**k) <= 1e-9 * 10.0**k for k in range(-12, 13))


def _rejected(
    answer: Answer, exc: FormulaError, zeros: dict[str, float], details: dict[str, Any]
) -> Result:
    """A formula that breaks the rules earns nothing, whatever else is right."""
    kind = "formula" if answer.formula is not None else "program"
    return Result.failed(f"{kind} rejected: {exc}", components=zeros, details=details)


def _show(value: float | bool) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.6g}"


def _correctness(
    answer: Answer,
    reference: Reference,
    spec: FinanceSpec,
    feedback: list[str],
    details: dict[str, Any],
) -> float:
    details["reference"] = {
        "value": reference.value if reference.boolean is None else reference.boolean,
        "scale": reference.scale,
    }
    if reference.boolean is not None or answer.boolean is not None:
        ok = answer.boolean is not None and answer.boolean == reference.boolean
        if not ok:
            feedback.append("correct: the yes/no answer is wrong")
        return 1.0 if ok else 0.0
    assert answer.value is not None and reference.value is not None
    scale = answer.scale if answer.scale is not None else reference.scale
    a = answer.value * _factor(scale)
    r = reference.value * _factor(reference.scale)
    in_ref_units = a / _factor(reference.scale)
    decimals = reference.decimals if reference.decimals is not None else spec.decimals
    if spec.mode == "finqa":
        ok = round(in_ref_units, 5) == round(reference.value, 5)
        rule = "equal at 5 decimals (FinQA)"
    elif decimals is not None:
        got, want = _round(in_ref_units, decimals), _round(reference.value, decimals)
        ok = got is not None and want is not None and got == want
        rule = f"equal at {decimals} decimals"
    elif r == 0:
        ok = a == 0
        rule = "exactly zero"
    else:
        ok = abs(a - r) <= spec.rel_tol * abs(r) * (1 + 1e-12)
        rule = f"within {spec.rel_tol:.4g} relative"
    details["correct_rule"] = rule
    if ok:
        return 1.0
    if r != 0 and a != 0:
        ratio = a / r
        for factor, text in ((100.0, "x100"), (0.01, "/100")):
            if abs(ratio - factor) <= spec.rel_tol * factor:
                details["percent_fraction_confusion"] = text
                feedback.append(
                    f"correct: the answer is off by {text}: a percent/fraction mix-up "
                    f"(state a percentage with scale 'percent', a fraction with scale '')"
                )
                return spec.percent_fraction_credit
        for power, word in ((3, "1,000"), (6, "1,000,000"), (9, "1,000,000,000")):
            for sign in (1, -1):
                factor = 10.0 ** (sign * power)
                if abs(ratio - factor) <= spec.rel_tol * factor:
                    feedback.append(
                        f"correct: the answer is off by a factor of {word}: check the scale "
                        f"(stated {scale or 'no scale'!r})"
                    )
                    details["scale_confusion"] = factor
                    return 0.0
        if abs(ratio + 1) <= spec.rel_tol:
            feedback.append("correct: the answer has the wrong sign")
            return 0.0
    feedback.append(
        f"correct: the answer {answer.text}{' ' + scale if scale else ''} does not match the "
        f"reference ({rule})"
    )
    return 0.0


def _reward(components: dict[str, float], spec: FinanceSpec, has_reference: bool) -> float:
    if spec.weights:
        unknown = set(spec.weights) - {*_COMPONENTS, "relevance"}
        if unknown:
            raise BadInput(
                f"spec.weights has unknown components {sorted(unknown)}; "
                f"use {[*_COMPONENTS, 'relevance']}"
            )
        used = {k: w for k, w in spec.weights.items() if k in components and w > 0}
        total = sum(used.values())
        if total <= 0:
            raise BadInput("spec.weights gives no positive weight to a computed component")
        return sum(components[k] * w for k, w in used.items()) / total
    if has_reference:
        return components["correct"]
    reward = 1.0
    for name in ("grounding", "consistency", "relevance"):
        if name in components:
            reward *= components[name]
    return reward
