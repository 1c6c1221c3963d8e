"""Lazy PDF reading: only the pages an answer needs are parsed, with the verdicts of a full read.

The corpus ``datasets/finance/lazy_pdf.jsonl`` lists answer mutations (each a family of ways
an answer can cite, or fail to cite, a figure). Every mutation is applied to every gold answer
over two documents: a synthetic report and a hand-drawn one whose first page has no table,
whose scale note is on a later page, and whose figures repeat across pages, in tables and
text. Each mutated answer is judged over the lazily read document and over the fully read
one; status, reward, components and feedback must be identical.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from verifiers.domains.finance import FinanceSpec, Reference, judge, load_document, synth
from verifiers.domains.finance import _pdfindex as pdfindex
from verifiers.domains.finance._numbers import parse_number
from verifiers.domains.finance._pdfindex import could_match, index_pdf
from verifiers.domains.finance._verifier import pdf_needs

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError
from verifiers.types import Trajectory

CORPUS = Path(__file__).parents[3] / "datasets" / "finance" / "lazy_pdf.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def _drawn_pdf(path: Path) -> None:
    """Cover without a table; scale note on page 2; a figure printed on pages 3, 4 and 5."""
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), invariant=1)
    pdf.drawString(72, 700, "Contoso Holdings annual report")
    pdf.drawString(72, 680, "Page 1")
    pdf.showPage()
    pdf.drawString(72, 700, "Letter to shareholders. Amounts in millions unless stated.")
    pdf.drawString(72, 680, "Revenue reached $45m, up 12.5% on last year; we employ 1,234 people.")
    pdf.showPage()
    tables = {
        3: [
            ("", "2019", "2018"),
            ("Revenue", "1,234.5", "1,100.2"),
            ("Costs", "(800.1)", "—"),
            ("Other income", "12.0", "9.5"),
            ("Operating profit", "446.4", "1,109.7"),
            ("Taxes", "(101.3)", "(99.8)"),
        ],
        4: [
            ("", "2019", "2018"),
            ("Segment revenue", "1,234.5", "0"),
            ("Margin", "12.5%", "11%"),
            ("Employees", "1,234", "1,180"),
            ("Stores", "45", "41"),
        ],
    }
    for page in (3, 4):
        for y, (label, a, b) in enumerate(tables[page]):
            pdf.drawString(72, 700 - 20 * y, label)
            pdf.drawRightString(330, 700 - 20 * y, a)
            pdf.drawRightString(420, 700 - 20 * y, b)
        pdf.showPage()
    pdf.drawString(72, 700, "Note 5. Revenue of 1,234.5 includes 45.0 of services.")
    pdf.showPage()
    pdf.save()


def _drawn_golds(name: str) -> list[dict[str, Any]]:
    def traj(i: int, body: dict[str, Any], answer: float, scale: str) -> dict[str, Any]:
        return {
            "id": f"drawn-{i}",
            "prompt": "What was the change in Revenue from 2018 to 2019?",
            "completion": "```json\n" + json.dumps(body) + "\n```",
            "task": {
                "verifier": "finance.formula",
                "spec": {"document": {"pdf": name}},
                "reference": {"answer": answer, "scale": scale},
            },
        }

    cur = {"value": "1,234.5", "cite": {"page": 3, "row": "Revenue", "column": "2019"}}
    prev = {"value": "1,100.2", "cite": {"page": 3, "row": "Revenue", "column": "2018"}}
    costs = {"value": "(800.1)", "cite": {"page": 3, "row": "Costs", "column": "2019"}}
    return [
        traj(
            0,
            {
                "answer": 134.3,
                "scale": "million",
                "formula": "cur - prev",
                "operands": {"cur": cur, "prev": prev},
            },
            134.3,
            "million",
        ),
        traj(
            1,
            {
                "answer": 434.4,
                "scale": "million",
                "formula": "cur + costs",
                "operands": {"cur": cur, "costs": costs},
            },
            434.4,
            "million",
        ),
    ]


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    base = tmp_path_factory.mktemp("lazy-pdf")
    report = synth.make_report(31, pages=4)
    synth.write_pdf(report, base / "synth.pdf", ruled=False)
    _drawn_pdf(base / "drawn.pdf")
    golds = synth.gold_trajectories(report, {"pdf": "synth.pdf"})[::3]
    programs = {
        t["id"]: t for t in synth.gold_trajectories(report, {"pdf": "synth.pdf"}, use_programs=True)
    }
    for gold in golds:
        gold["_program"] = programs[gold["id"]]["completion"]
    return base, golds + _drawn_golds("drawn.pdf")


def _body(completion: str) -> dict[str, Any]:
    return dict(json.loads(completion.split("```json\n")[1].split("\n```")[0]))


def _values(body: dict[str, Any], change: Any) -> None:
    for operand in body.get("operands", {}).values():
        number = parse_number(operand["value"])
        if number is not None:
            operand["value"] = change(number.value)


def _mutate(gold: dict[str, Any], ops: list[list[Any]]) -> dict[str, Any]:
    traj = json.loads(json.dumps({k: v for k, v in gold.items() if k != "_program"}))
    body = _body(traj["completion"])
    cites = [o.setdefault("cite", {}) for o in body.get("operands", {}).values()]
    for op, *args in ops:
        if op == "drop":
            for c in cites:
                for k in args[0]:
                    c.pop(k, None)
        elif op == "uncite":
            for o in body.get("operands", {}).values():
                o.pop("cite", None)
            cites = [o.setdefault("cite", {}) for o in body.get("operands", {}).values()]
        elif op == "keep":
            for c in cites:
                for k in [k for k in c if k not in args[0]]:
                    del c[k]
        elif op == "set":
            for c in cites:
                c.update(args[0])
        elif op == "shift_page":
            for c in cites:
                if "page" in c:
                    c["page"] += args[0]
        elif op == "set_str_page":
            for c in cites:
                if "page" in c:
                    c["page"] = str(c["page"])
        elif op == "scale_values":
            factor = 1000.0 if args[0] == "million" else 1.0
            _values(body, lambda v, f=factor, w=args[0]: f"{v / f:.4f} {w}")
        elif op == "round_values":
            _values(body, lambda v, d=args[0]: f"{round(v, d):.0f}")
        elif op == "negate_values":
            _values(body, lambda v: f"{-v}")
        elif op == "divide_values":
            _values(body, lambda v, d=args[0]: f"{v / d}")
        elif op == "zero_first":
            first = next(iter(body.get("operands", {}).values()), None)
            if first is not None:
                first["value"] = "0"
        elif op in ("inline_literals", "perturb_literals") and "formula" in body:
            formula = body["formula"]
            bump = 1.0 if op == "perturb_literals" else 0.0
            if op == "inline_literals":
                for name, o in sorted(body["operands"].items(), key=lambda kv: -len(kv[0])):
                    number = parse_number(o["value"])
                    value = number.value + bump if number is not None else 0.0
                    formula = formula.replace(name, f"({value!r})")
                body["operands"] = {}
            else:
                formula = formula.replace(".", "1.", 1)
            body["formula"] = formula
        elif op == "program" and gold.get("_program"):
            body = _body(gold["_program"])
        elif op == "program_table_row":
            row = next((c.get("row") for c in cites if c.get("row")), "Revenue")
            body = {"answer": body["answer"], "program": f"table_sum({row}, none)", "operands": {}}
    traj["completion"] = "```json\n" + json.dumps(body) + "\n```"
    return traj


def _judge(traj: dict[str, Any], base: Path, *, lazy: bool) -> tuple[Any, ...]:
    t = Trajectory.model_validate(traj)
    spec = FinanceSpec.model_validate(traj["task"]["spec"])
    ctx = VerifierContext(deadline=time.monotonic() + 600, base_dir=base)
    assert spec.document is not None
    needs = pdf_needs(str(traj["completion"]), spec) if lazy else None
    document, details = asyncio.run(
        load_document(
            spec.document,
            t,
            ctx,
            pdf_timeout=600,
            pdf_memory_mb=4096,
            max_pages=300,
            needs=needs,
        )
    )
    result = judge(
        str(traj["completion"]),
        spec,
        document,
        Reference(traj["task"]["reference"]),
        details,
        question=str(traj["prompt"]),
    )
    return result.status, result.reward, result.components, result.feedback, details["pages_read"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_lazy_verdicts_equal_full_verdicts(
    documents: tuple[Path, list[dict[str, Any]]], row: dict[str, Any]
) -> None:
    base, golds = documents
    read_fewer = 0
    for gold in golds:
        traj = _mutate(gold, row["ops"])
        lazy = _judge(traj, base, lazy=True)
        full = _judge(traj, base, lazy=False)
        assert lazy[:4] == full[:4], (row["id"], traj["id"], traj["completion"], lazy, full)
        read_fewer += lazy[4] < full[4]
    if row["id"] == "gold":
        assert read_fewer == len(golds)  # a cited page: not every page was read


def test_a_cited_page_reads_that_page_and_the_first(
    documents: tuple[Path, list[dict[str, Any]]],
) -> None:
    base, golds = documents
    drawn = next(g for g in golds if g["id"] == "drawn-0")
    # Page 1 has no table and no scale note: the first table (page 3) and the scale note
    # (page 2) are found through the index; pages 4 and 5 are never read.
    assert _judge(drawn, base, lazy=True)[4] == 3
    assert _judge(drawn, base, lazy=False)[4] == 5


def test_the_index_never_misses_a_page_that_prints_the_figure(tmp_path: Path) -> None:
    _drawn_pdf(tmp_path / "drawn.pdf")
    data = index_pdf({"path": str(tmp_path / "drawn.pdf"), "max_pages": 10})
    assert data["pages"] == 5
    from verifiers.domains.finance._pdfindex import page_index

    index = page_index(data, 5)
    assert index is not None
    n = parse_number
    assert index.candidates(n("1,234.5")) == {2, 3, 4, 5}  # 1,234 people rounds to it too
    assert index.candidates(n("45 million")) >= {2, 5}
    assert index.candidates(n("0")) >= {3, 4}  # a dash (nil) and a printed 0
    assert index.candidates(n("0.125")) >= {2, 4}  # 12.5% as a fraction
    assert 1 not in index.candidates(n("134.3"))
    assert not could_match(n("152,734"), 2.0, 0.5, worded=False)
    assert could_match(n("1.5 million"), 1500.0, 0.5, worded=False)


@pytest.mark.parametrize(
    "failure",
    [InfraError("worker process died (exit status -11)"), BadInput("cannot be indexed")],
    ids=["pdfium-crashed", "pdfium-refused"],
)
def test_a_pdf_pdfium_cannot_index_is_read_whole(
    tmp_path: Path, fresh_pdf_cache: Any, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    """pdfium crashing (the worker dies: InfraError) or refusing the file is no verdict and no
    crash: every page is parsed by pdfplumber, as before the index existed, and the failure is
    cached so the index is not retried."""
    report = synth.make_report(33, pages=3)
    synth.write_pdf(report, tmp_path / "r.pdf", ruled=False)
    traj = synth.gold_trajectories(report, {"pdf": "r.pdf"}, use_programs=True)[0]
    full = _judge(traj, tmp_path, lazy=False)
    fresh_pdf_cache.clear_memory()
    calls: list[int] = []

    def broken(payload: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        raise failure

    monkeypatch.setattr(pdfindex, "index_pdf", broken)
    fresh_pdf_cache.directory = tmp_path / "cache-2"  # cold: nothing parsed yet
    first = _judge(traj, tmp_path, lazy=True)
    assert first[:4] == full[:4] and first[4] == 3  # every page read
    assert _judge(traj, tmp_path, lazy=True)[:4] == full[:4]
    assert calls == [1]


def test_many_uncited_figures_read_every_page(
    documents: tuple[Path, list[dict[str, Any]]],
) -> None:
    """Past 64 distinct uncited figures the index is not consulted per figure: every page is
    read (bounded by the page count), with the same verdict."""
    base, golds = documents
    traj = json.loads(json.dumps({k: v for k, v in golds[-1].items() if k != "_program"}))
    literals = " + ".join(f"{1000 + i}.5" for i in range(80))
    body = {"answer": 1.0, "formula": f"({literals}) * 0 + 1", "operands": {}}
    traj["completion"] = "```json\n" + json.dumps(body) + "\n```"
    lazy, full = _judge(traj, base, lazy=True), _judge(traj, base, lazy=False)
    assert lazy[:4] == full[:4]
    assert lazy[4] == full[4] == 5
