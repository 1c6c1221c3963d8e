"""The answer format: a JSON object in the completion, and its JSON Schema.

The completion holds one JSON object, possibly inside a fenced block or after prose::

    {"answer": 24.41, "scale": "percent",
     "formula": "(rev_2019 - rev_2018) / rev_2018 * 100",
     "operands": {"rev_2019": {"value": "1,496.5", "cite": {"page": 1, "row": "Total sales",
                                                             "column": "2019"}},
                  "rev_2018": {"value": "$1,202.9", "cite": {"row": "Total sales",
                                                             "column": "2018"}}}}

``program`` (a FinQA program) may replace ``formula``. Extra keys are allowed everywhere.
The pydantic models below exist for the published schema (``answer_json_schema()``); the
hot path reads the object by hand so it can keep the printed digits of every number (JSON
numbers are decoded as ``Decimal``) and say precisely what is wrong with a malformed answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._numbers import Number, parse_number

__all__ = [
    "SCALES",
    "Answer",
    "AnswerError",
    "AnswerModel",
    "CiteModel",
    "Operand",
    "OperandModel",
    "answer_json_schema",
    "find_answer",
    "read_answer",
]

SCALES = ("", "thousand", "million", "billion", "percent")
Scale = Literal["", "thousand", "million", "billion", "percent"]

_MAX_COMPLETION = 4_000_000
_MAX_ATTEMPTS = 256
_DECODER = json.JSONDecoder(parse_float=Decimal)


class CiteModel(BaseModel):
    """Where an operand is printed. Every key is optional; extra keys are allowed."""

    model_config = ConfigDict(extra="allow")

    page: int | None = None
    """1-based PDF page."""
    table: int | None = None
    """0-based index of the table in the document."""
    row: str | None = None
    """Row label as printed (matched case-insensitively, footnote marks ignored)."""
    column: str | None = None
    """Column header as printed (``2019``, ``Year ended December 31, 2019``)."""
    paragraph: int | None = None
    """0-based paragraph of ``document.text`` (for figures quoted from prose)."""


class OperandModel(BaseModel):
    """One extracted figure."""

    model_config = ConfigDict(extra="allow")

    value: str | float
    """The figure as printed (``"$1,202.9"``, ``"(73)"``, ``"12.5%"``, ``"1.2 billion"``) or a
    JSON number."""
    cite: CiteModel | None = None
    """Where it is printed; without it the figure may be anywhere in the document."""


class AnswerModel(BaseModel):
    """The JSON object a completion must contain."""

    model_config = ConfigDict(extra="allow", title="finance.formula answer")

    answer: float | str
    """The result: a number, or a printed figure such as ``"24.41%"``; ``"yes"``/``"no"`` for
    FinQA ``greater`` programs."""
    scale: Scale | None = None
    """Unit of ``answer``; omitted means "the reference's scale"."""
    formula: str | None = None
    """Arithmetic over operand names: ``+ - * / **``, parentheses, ``abs round min max sum
    avg``."""
    program: str | None = None
    """A FinQA program, as an alternative to ``formula``."""
    operands: dict[str, OperandModel] = Field(default_factory=dict)
    """The extracted figures by name."""


def answer_json_schema() -> dict[str, Any]:
    """JSON Schema of the answer object (published in docs/finance.md)."""
    return AnswerModel.model_json_schema()


class AnswerError(ValueError):
    """The completion has no usable answer object (a model failure)."""


@dataclass(frozen=True, slots=True)
class Operand:
    """An operand as quoted: raw text, parsed number (None when unreadable), citation."""

    name: str
    raw: str
    number: Number | None
    cite: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Answer:
    """A parsed answer object.

    Attributes:
        value: The answer as a number, or None for a yes/no answer.
        text: The answer as written.
        decimals: Decimals printed in the answer.
        scale: The stated scale, or None when omitted.
        boolean: ``True``/``False`` for a yes/no answer.
        formula: Formula text, if any.
        program: FinQA program text, if any.
        operands: By name, in order.
    """

    value: float | None
    text: str
    decimals: int
    scale: str | None
    boolean: bool | None = None
    formula: str | None = None
    program: str | None = None
    operands: dict[str, Operand] = field(default_factory=dict)


def find_answer(text: str) -> dict[str, Any]:
    """The last JSON object with an ``answer`` key in ``text`` (fenced blocks first).

    Linear in the completion: the decoder reads at most :data:`_SCAN_FACTOR` times the text
    (plus :data:`_SCAN_SLACK` characters) over all candidates, so nested objects around a
    megabyte string cost a few decodes, not one per level. This runs on the engine's inline
    path, which has no deadline.

    Raises:
        AnswerError: none found (or the scan budget ran out first).
    """
    if len(text) > _MAX_COMPLETION:
        text = text[-_MAX_COMPLETION:]
    budget = [_SCAN_FACTOR * len(text) + _SCAN_SLACK]
    for block in _fenced_blocks(text):
        found = _scan(block, budget)
        if found is not None:
            return found
    found = _scan(text, budget)
    if found is None:
        if budget[0] <= 0:
            raise AnswerError(
                'no JSON object with an "answer" key found before the scan gave up (the '
                "completion holds too much other JSON); put the answer object last, in a "
                "```json block"
            )
        raise AnswerError('no JSON object with an "answer" key found in the completion')
    return found


_SCAN_FACTOR = 4
"""The JSON scan decodes at most this many times the completion's length in total..."""
_SCAN_SLACK = 1 << 20
"""... plus this many characters."""


def _fenced_blocks(text: str) -> list[str]:
    """Bodies of ````` fenced blocks, last first (str.find: cheaper than a regex here)."""
    fences: list[int] = []
    pos = text.find("```")
    while pos >= 0 and len(fences) < 2 * _MAX_ATTEMPTS:
        fences.append(pos)
        pos = text.find("```", pos + 3)
    blocks: list[str] = []
    for i in range(0, len(fences) - 1, 2):
        body = text[fences[i] + 3 : fences[i + 1]]
        newline = body.find("\n")
        blocks.append(body[newline + 1 :] if newline >= 0 else body)
    blocks.reverse()
    return blocks


def _decode(text: str, start: int, budget: list[int]) -> Any:
    """One candidate decode, charged to ``budget`` (characters the decoder read)."""
    try:
        value, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        budget[0] -= max(1, exc.pos - start)
        return None
    except (ValueError, RecursionError):
        budget[0] -= len(text) - start
        return None
    budget[0] -= end - start
    return value


def _scan(text: str, budget: list[int]) -> dict[str, Any] | None:
    # Fast path: the object opens right before its "answer" key (the usual shape).
    key = text.rfind('"answer"')
    if key > 0 and budget[0] > 0:
        start = text.rfind("{", 0, key)
        if start >= 0 and not text[start + 1 : key].strip():
            value = _decode(text, start, budget)
            if isinstance(value, dict) and "answer" in value:
                return value
    end = len(text)
    attempts = 0
    while attempts < _MAX_ATTEMPTS and budget[0] > 0:
        start = text.rfind("{", 0, end)
        if start < 0:
            return None
        attempts += 1
        value = _decode(text, start, budget)
        if isinstance(value, dict) and "answer" in value:
            return value
        end = start
    return None


def read_answer(obj: dict[str, Any]) -> Answer:
    """Validate an answer object and parse its numbers.

    Raises:
        AnswerError: a missing or unreadable answer, an unknown scale, malformed operands.
    """
    raw = obj.get("answer")
    scale = obj.get("scale")
    if scale is not None:
        if not isinstance(scale, str) or scale.strip().lower() not in SCALES:
            raise AnswerError(
                f"scale {scale!r:.40} must be one of {', '.join(repr(s) for s in SCALES)}"
            )
        scale = scale.strip().lower()
    boolean: bool | None = None
    value: float | None = None
    decimals = 0
    if isinstance(raw, bool):
        boolean = raw
    elif isinstance(raw, str) and raw.strip().lower() in ("yes", "no", "true", "false"):
        boolean = raw.strip().lower() in ("yes", "true")
    else:
        number = parse_number(raw)
        if number is None:
            raise AnswerError(f"answer {raw!r:.60} is not a number")
        value, decimals = number.value, number.decimals
        if number.percent:
            if scale not in (None, "percent"):
                raise AnswerError(f"answer {raw!r:.40} is a percentage but scale is {scale!r}")
            scale = "percent"
        elif number.scale:
            if scale not in (None, "", number.scale):
                raise AnswerError(f"answer {raw!r:.40} says {number.scale} but scale is {scale!r}")
            scale = number.scale
    formula = obj.get("formula")
    program = obj.get("program")
    if formula is not None and not isinstance(formula, str):
        raise AnswerError("formula must be a string")
    if program is not None and not isinstance(program, str):
        raise AnswerError("program must be a string")
    operands_raw = obj.get("operands") or {}
    if not isinstance(operands_raw, dict):
        raise AnswerError("operands must be an object mapping names to {value, cite}")
    if len(operands_raw) > 200:
        raise AnswerError(f"{len(operands_raw)} operands; the limit is 200")
    operands: dict[str, Operand] = {}
    for name, spec in operands_raw.items():
        if isinstance(spec, dict):
            value_raw = spec.get("value")
            cite = spec.get("cite")
            if cite is not None and not isinstance(cite, dict):
                raise AnswerError(f"operand {name!r:.40}: cite must be an object")
        else:
            value_raw, cite = spec, None
        printed = str(value_raw) if not isinstance(value_raw, str) else value_raw
        operands[str(name)] = Operand(str(name), printed[:64], parse_number(value_raw), cite)
    return Answer(
        value=value,
        text=str(raw)[:64],
        decimals=decimals,
        scale=scale,
        boolean=boolean,
        formula=formula,
        program=program,
        operands=operands,
    )
