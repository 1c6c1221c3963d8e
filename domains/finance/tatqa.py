"""TAT-QA arithmetic questions as ``finance.formula`` trajectories (regression corpus).

TAT-QA (Zhu et al., 2021) pairs real annual-report tables and paragraphs with questions whose
gold ``derivation`` is arithmetic over printed figures (``(44.1-56.7)/56.7``). This module
turns each arithmetic question into a trajectory whose completion is that derivation written
as a formula over named operands, each operand drawn from the cell (or paragraph) it is
printed in, with a citation. Scored by ``finance.formula`` these must pass; the
:func:`perturb` variants (one operand changed, wrong scale, sign flipped, percent written as a
fraction) must fail with the right component at fault.

The dataset is not shipped: pass the path of ``tatqa_dataset_dev.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._document import Document, Table
from ._formula import evaluate, parse_formula
from ._numbers import Number, parse_number

__all__ = ["Perturbation", "TatqaItem", "convert", "load_tatqa", "perturb"]

_TOKEN = re.compile(
    r"\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?%|\s(?:million|thousand|billion)\b)?|\$?\.\d+%?"
)


@dataclass
class TatqaItem:
    """A converted question: the trajectory, and how it was built."""

    trajectory: dict[str, Any]
    answer_obj: dict[str, Any]
    computed: float


def _row_label(cells: list[str], col: int) -> str:
    return next((c for c in cells[:col] if c.strip() and parse_number(c) is None), "")


def _header(table: Table, col: int) -> str:
    """The column's title that tells it apart: the lowest header cell whose text no other
    column of that header row shares (``2019`` rather than a ``€m`` over every column)."""
    fallback = ""
    for r in range(table.header_rows - 1, -1, -1):
        text = table.rows[r][col].strip()
        if not text:
            continue
        fallback = fallback or text
        if sum(1 for c in table.rows[r] if c.strip() == text) == 1:
            return text
    return fallback


def _find(
    doc: Document, number: Number, taken: set[tuple[int, int, int]] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """Where a derivation figure is printed: the cell text and a citation.

    A value the derivation already quoted from one cell is quoted from another cell of the
    same row when the row prints it twice (``21.0% - 21.0%``: the 2019 and the 2018 rate),
    else from the same cell again (``(a - b) / b``). ``taken`` records the cells used.
    """
    taken = taken if taken is not None else set()
    for t, table in enumerate(doc.tables):
        for r in range(table.header_rows, len(table.rows)):
            same = [
                c
                for c, printed in enumerate(table.numbers[r])
                if printed is not None
                and not printed.dash
                and c != 0
                and abs(abs(printed.value) - abs(number.value)) < 1e-9
            ]
            if not same:
                continue
            c = next((c for c in same if (t, r, c) not in taken), same[0])
            taken.add((t, r, c))
            cite: dict[str, Any] = {}
            label = _row_label(table.rows[r], c)
            if label:
                cite["row"] = label
            header = _header(table, c)
            if header:
                cite["column"] = header
            return table.rows[r][c], cite
    for p, items in enumerate(doc.text_numbers()):
        for raw, printed in items:
            if (
                abs(abs(printed.value) - abs(number.value)) < 1e-9
                and number.scale in ("", printed.scale)
                and number.percent == printed.percent
            ):
                return raw, {"paragraph": p}
    for table in doc.tables:
        for _row, raw, printed in table.embedded_numbers():
            if (
                abs(abs(printed.value) - abs(number.value)) < 1e-9
                and number.percent == printed.percent
            ):
                return raw, {}
        for r in range(table.header_rows):
            for head in table.numbers[r]:
                if head is not None and head.value == number.value and not number.percent:
                    return f"{number.value:g}", {}
    return None


def _operand_value(token: str, number: Number, printed: str, signed: bool) -> str:
    """The figure to quote: the cell as printed, adjusted to the derivation's reading."""
    cell = parse_number(printed, dash_is_zero=True)
    if cell is None or cell.scale != number.scale:
        return token.replace("$", "").strip()
    text = printed
    if cell.percent and not number.percent:
        text = text.replace("%", "").strip()
    if not signed and (cell.value < 0) != (number.value < 0):
        return token.replace("$", "").strip()
    return text


def _matches(computed: float, answer: float) -> bool:
    for target in (answer, answer / 100.0):
        if abs(computed - target) <= max(
            0.006 * abs(target), 0.0051 * (1 if target == answer else 0.01)
        ):
            return True
    return False


def convert(doc_json: dict[str, Any], question: dict[str, Any]) -> TatqaItem | None:
    """The gold trajectory of one arithmetic question, or None when it cannot be written.

    Figures of the derivation are looked up in the table (then the paragraphs); each becomes
    an operand quoting the printed cell, with a row/column (or paragraph) citation. Small
    plain integers printed nowhere, or dividing (``/2``, ``/3``), and the constant 1 stay literal constants. A derivation figure printed
    nowhere is kept as an operand without citation (its grounding fails, honestly). TAT-QA
    writes accounting negatives both ways (``(71)`` as -71, or ``71`` after a minus sign), so
    the reading whose result matches the gold answer is kept.
    """
    derivation = str(question.get("derivation") or "")
    answer = question.get("answer")
    if (
        question.get("answer_type") != "arithmetic"
        or not derivation
        or isinstance(answer, list | dict | str)
    ):
        return None
    rows = doc_json["table"]["table"]
    paragraphs = [
        p["text"] for p in sorted(doc_json.get("paragraphs", []), key=lambda p: p.get("order", 0))
    ]
    doc = Document([Table(rows=rows)], paragraphs)
    text = derivation.replace("[", "(").replace("]", ")").replace("\u2212", "-")
    tokens = list(_TOKEN.finditer(text))
    found: list[tuple[str, Number, tuple[str, dict[str, Any]] | None] | None] = []
    taken: set[tuple[int, int, int]] = set()
    for match in tokens:
        token = match.group(0).strip()
        number = parse_number(token)
        if number is None:
            return None
        where = _find(doc, number, taken)
        divisor = text[: match.start()].rstrip().endswith("/") and number.value <= 12
        # The constant one (``x1 / x2 - 1``) is arithmetic, not a figure, even where some
        # paragraph happens to print a 1 ("Note 1").
        plain = (
            token.isdigit()
            and abs(number.value) <= 100
            and (where is None or divisor or number.value == 1)
        )
        found.append(None if plain else (token, number, where))
    scale = str(question.get("scale") or "")
    first: TatqaItem | None = None
    for signed in (False, True):
        operands: dict[str, dict[str, Any]] = {}
        values: dict[str, float] = {}
        pieces: list[str] = []
        pos = 0
        for match, entry in zip(tokens, found, strict=True):
            pieces.append(text[pos : match.start()])
            pos = match.end()
            if entry is None:
                pieces.append(match.group(0).strip())
                continue
            token, number, where = entry
            name = f"x{len(operands) + 1}"
            if where is None:
                operands[name] = {"value": token.replace("$", "").strip()}
            else:
                operands[name] = {
                    "value": _operand_value(token, number, where[0], signed),
                    "cite": where[1],
                }
            quoted = parse_number(operands[name]["value"])
            if quoted is None:
                return None
            values[name] = quoted.base
            pieces.append(name)
        pieces.append(text[pos:])
        formula_text = "".join(pieces).replace("$", "")
        try:
            computed = evaluate(parse_formula(formula_text), values)
        except ValueError:
            continue
        answer_obj = {
            "answer": answer,
            "scale": scale,
            "formula": formula_text,
            "operands": operands,
        }
        trajectory = {
            "id": question["uid"],
            "prompt": question["question"],
            "completion": "```json\n" + json.dumps(answer_obj) + "\n```",
            "task": {
                "verifier": "finance.formula",
                "spec": {"document": {"table": rows, "text": paragraphs}},
                "reference": {"answer": answer, "scale": scale},
            },
        }
        item = TatqaItem(trajectory, answer_obj, computed)
        if isinstance(answer, int | float) and _matches(computed, float(answer)):
            return item
        first = first or item
    return first


def load_tatqa(path: str | Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """``(document, question)`` pairs of every arithmetic question in a TAT-QA file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    for doc_json in data:
        for question in doc_json["questions"]:
            if question.get("answer_type") == "arithmetic":
                yield doc_json, question


@dataclass
class Perturbation:
    """A wrong variant of a gold trajectory and the component that must catch it."""

    kind: str
    trajectory: dict[str, Any]
    at_fault: str


def _with_answer(item: TatqaItem, kind: str, obj: dict[str, Any], at_fault: str) -> Perturbation:
    traj = json.loads(json.dumps(item.trajectory))
    traj["id"] = f"{traj['id']}-{kind}"
    traj["completion"] = "```json\n" + json.dumps(obj) + "\n```"
    return Perturbation(kind, traj, at_fault)


def perturb(item: TatqaItem) -> list[Perturbation]:
    """The wrong variants that apply to this item.

    - ``operand``: one operand's figure changed (answer recomputed, so only grounding and
      correctness can notice) -> ``grounding``;
    - ``scale``: a wrong scale word on a non-percent answer -> ``correct``;
    - ``sign``: the answer's sign flipped -> ``consistency``;
    - ``percent_as_fraction``: a percent answer written as a fraction -> ``correct``.
    """
    out: list[Perturbation] = []
    obj = item.answer_obj
    answer = float(obj["answer"])
    scale = obj["scale"]
    # Changed operand: a figure printed nowhere, answer recomputed from it.
    spec_doc = item.trajectory["task"]["spec"]["document"]
    doc = Document([Table(rows=spec_doc["table"])], list(spec_doc["text"]))
    if obj["operands"] and item.computed != 0:
        name = next(iter(obj["operands"]))
        quoted = parse_number(obj["operands"][name]["value"])
        for factor in (1.37, 1.91, 2.53, 3.17):
            if quoted is None or quoted.value == 0 or quoted.scale:
                break
            new_value = round(quoted.value * factor + 0.7, max(quoted.decimals, 1))
            new_number = parse_number(f"{new_value}")
            if new_number is None or doc.locate(new_number, None, sign="magnitude").found:
                continue
            changed = dict(obj, operands=dict(obj["operands"]))
            changed["operands"][name] = {**obj["operands"][name], "value": f"{new_value}"}
            values = {k: parse_number(v["value"]).base for k, v in changed["operands"].items()}  # type: ignore[union-attr]
            try:
                result = evaluate(parse_formula(obj["formula"]), values)
            except ValueError:
                break
            ratio = 100.0 if abs(answer / item.computed) > 10 else 1.0
            changed["answer"] = round(result * ratio, 6)
            if abs(changed["answer"] - answer) > 0.02 * abs(answer) + 1e-9:
                out.append(_with_answer(item, "operand", changed, "grounding"))
            break
    scaled_operands = any(
        (n := parse_number(v["value"])) is not None and n.scale for v in obj["operands"].values()
    )
    if answer != 0 and scale in ("thousand", "million", "billion") and not scaled_operands:
        wrong = {"thousand": "million", "million": "thousand", "billion": "million"}[scale]
        out.append(_with_answer(item, "scale", dict(obj, scale=wrong), "correct"))
    if answer != 0:
        out.append(_with_answer(item, "sign", dict(obj, answer=-answer), "consistency"))
    if answer != 0 and scale == "percent":
        out.append(
            _with_answer(item, "percent_as_fraction", dict(obj, answer=answer / 100), "correct")
        )
    return out
