"""Synthetic financial reports with questions, gold formulas and answers.

:func:`make_report` draws a deterministic (seeded) company: income statements, balance
sheets and segment tables over three fiscal years, figures that add up (gross profit is
revenue minus cost of revenue, totals are sums), accounting negatives printed as ``(1,234)``
and a scale note such as "in thousands". :func:`write_pdf` lays it out with reportlab, one
statement per page, with ruling lines or without (unruled statements exercise pdfplumber's
text strategy). :func:`gold_trajectories` turns the questions into ``finance.formula``
trajectories whose completions are correct, for tests, examples and benchmarks;
:func:`inline_document` gives the same tables as an inline document.

Example::

    report = make_report(seed=7, pages=3)
    write_pdf(report, "report.pdf", ruled=False)
    items = gold_trajectories(report, {"pdf": "report.pdf"})
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Question",
    "Report",
    "Statement",
    "gold_trajectories",
    "inline_document",
    "make_report",
    "write_pdf",
]

_COMPANIES = (
    "Northwind Holdings",
    "Contoso Industries",
    "Fabrikam Group",
    "Tailspin Systems",
    "Wingtip Logistics",
    "Adventure Works",
    "Litware Energy",
    "Proseware Health",
)
_SEGMENTS = ("Industrial", "Consumer", "Healthcare", "Software", "Services", "Energy", "Retail")
_REGIONS = ("North America", "Europe", "Asia Pacific", "Latin America", "Middle East")


@dataclass
class Statement:
    """One table of the report.

    Attributes:
        title: Heading printed above the table.
        years: Column headers (fiscal years, newest first).
        rows: ``(label, values)``; values are numbers in the report's scale (percent rows are
            percentages); ``None`` values print as a dash.
        percent_rows: Labels of rows printed as percentages.
        page: 1-based page the statement is printed on.
        index: 0-based table index in the document.
    """

    title: str
    years: list[str]
    rows: list[tuple[str, list[float | None]]]
    percent_rows: set[str] = field(default_factory=set)
    page: int = 1
    index: int = 0

    def value(self, label: str, year: str) -> float:
        for name, values in self.rows:
            if name == label:
                found = values[self.years.index(year)]
                if found is None:
                    raise KeyError(label)
                return found
        raise KeyError(label)

    def printed(self, label: str, year: str) -> str:
        return _fmt(self.value(label, year), label in self.percent_rows, self._dollar(label))

    def _dollar(self, label: str) -> bool:
        return (
            label == self.rows[0][0] or label.lower().startswith("total") or label == "Net income"
        )

    def cells(self) -> list[list[str]]:
        """The table as printed: header row, then one row per line item."""
        out = [["", *self.years]]
        for label, values in self.rows:
            out.append(
                [label]
                + [
                    "—" if v is None else _fmt(v, label in self.percent_rows, self._dollar(label))
                    for v in values
                ]
            )
        return out


@dataclass
class Question:
    """A question with its gold answer.

    Attributes:
        text: The question.
        formula: Gold formula over operand names.
        operands: ``{name: {"value": printed, "cite": {...}}}``.
        answer: Gold answer (rounded as a careful analyst would state it).
        scale: ``percent`` or the report's scale.
        program: The same computation as a FinQA program.
    """

    text: str
    formula: str
    operands: dict[str, dict[str, Any]]
    answer: float
    scale: str
    program: str


@dataclass
class Report:
    """A generated report."""

    company: str
    scale: str
    statements: list[Statement]
    questions: list[Question]
    seed: int


def _fmt(value: float, percent: bool, dollar: bool) -> str:
    if percent:
        text = f"{abs(value):.1f}%"
    else:
        text = f"{abs(value):,.0f}" if value == int(value) else f"{abs(value):,.1f}"
    if value < 0:
        text = f"({text})"
    return f"${text}" if dollar and not percent else text


def _by_label(
    labels: tuple[str, ...], columns: list[list[float]]
) -> list[tuple[str, list[float | None]]]:
    """The rows of a statement: each label with its value in every year (one column a year)."""
    rows: dict[str, list[float | None]] = {label: [] for label in labels}
    for column in columns:
        for label, v in zip(labels, column, strict=True):
            rows[label].append(float(v))
    return list(rows.items())


_INCOME = (
    "Revenue",
    "Cost of revenue",
    "Gross profit",
    "Selling, general and administrative",
    "Research and development",
    "Operating income",
    "Interest expense",
    "Other income (expense), net",
    "Income before income taxes",
    "Provision for income taxes",
    "Net income",
    "Gross margin",
)

_BALANCE = (
    "Cash and cash equivalents",
    "Accounts receivable, net",
    "Inventories",
    "Total current assets",
    "Property, plant and equipment, net",
    "Goodwill",
    "Total assets",
    "Accounts payable",
    "Long-term debt",
    "Total liabilities",
    "Total shareholders' equity",
    "Total liabilities and shareholders' equity",
)


def _statement_income(rng: random.Random, years: list[str], title: str) -> Statement:
    base = rng.randint(40_000, 900_000)

    def year(i: int) -> list[float]:
        revenue = round(base * (1 - 0.07 * i) * rng.uniform(0.95, 1.05))
        cost = round(revenue * rng.uniform(0.45, 0.7))
        gross = revenue - cost
        sga = round(revenue * rng.uniform(0.08, 0.15))
        rnd = round(revenue * rng.uniform(0.03, 0.09))
        operating = gross - sga - rnd
        interest = -round(revenue * rng.uniform(0.005, 0.02))
        other = round(revenue * rng.uniform(-0.01, 0.01))
        pretax = operating + interest + other
        tax = round(pretax * rng.uniform(0.18, 0.27))
        net = pretax - tax
        margin = round(gross / revenue * 100, 1)
        return [
            revenue,
            cost,
            gross,
            sga,
            rnd,
            operating,
            interest,
            other,
            pretax,
            tax,
            net,
            margin,
        ]

    rows = _by_label(_INCOME, [year(i) for i in range(len(years))])
    return Statement(title, years, rows, {"Gross margin"})


def _statement_balance(rng: random.Random, years: list[str], title: str) -> Statement:
    base = rng.randint(50_000, 2_000_000)

    def year(i: int) -> list[float]:
        scale = (1 - 0.05 * i) * rng.uniform(0.95, 1.05)
        cash = round(base * 0.12 * scale * rng.uniform(0.8, 1.2))
        receivables = round(base * 0.1 * scale * rng.uniform(0.8, 1.2))
        inventory = round(base * 0.08 * scale * rng.uniform(0.8, 1.2))
        current = cash + receivables + inventory
        ppe = round(base * 0.4 * scale * rng.uniform(0.9, 1.1))
        goodwill = round(base * 0.1 * rng.uniform(0.9, 1.1))
        total = current + ppe + goodwill
        payable = round(total * rng.uniform(0.08, 0.15))
        debt = round(total * rng.uniform(0.2, 0.4))
        liabilities = payable + debt
        equity = total - liabilities
        assets = [cash, receivables, inventory, current, ppe, goodwill, total]
        return [*assets, payable, debt, liabilities, equity, total]

    return Statement(title, years, _by_label(_BALANCE, [year(i) for i in range(len(years))]))


def _statement_segments(
    rng: random.Random, years: list[str], title: str, names: list[str]
) -> Statement:
    rows: dict[str, list[float | None]] = {n: [] for n in names}
    rows["Total"] = []
    for _ in years:
        total = 0.0
        for n in names:
            v = float(rng.randint(5_000, 400_000))
            if rng.random() < 0.15:
                v = -float(rng.randint(100, 5_000))
            rows[n].append(v)
            total += v
        rows["Total"].append(total)
    return Statement(title, years, list(rows.items()))


def make_report(seed: int = 0, *, pages: int = 3, scale: str = "thousand") -> Report:
    """Draw a report with ``pages`` statements and about five questions per statement.

    Args:
        seed: Random seed; the same seed gives the same report.
        pages: Number of statements (one per page).
        scale: ``thousand`` or ``million``: the report's "in thousands" note.
    """
    rng = random.Random(seed)
    company = rng.choice(_COMPANIES)
    first = rng.randint(2015, 2022)
    statements: list[Statement] = []
    for page in range(1, pages + 1):
        years = [str(first + 2 - k - 3 * ((page - 1) // 3)) for k in range(3)]
        kind = (page - 1) % 3
        if kind == 0:
            st = _statement_income(
                rng, years, f"Consolidated Statements of Operations ({years[-1]}-{years[0]})"
            )
        elif kind == 1:
            st = _statement_balance(
                rng, years, f"Consolidated Balance Sheets ({years[-1]}-{years[0]})"
            )
        else:
            names = rng.sample(_SEGMENTS if rng.random() < 0.5 else _REGIONS, 4)
            st = _statement_segments(rng, years, f"Segment Revenue ({years[-1]}-{years[0]})", names)
        st.page, st.index = page, page - 1
        statements.append(st)
    questions = [q for st in statements for q in _questions(rng, st, scale)]
    return Report(company, scale, statements, questions, seed)


def _operand(st: Statement, label: str, year: str) -> dict[str, Any]:
    return {
        "value": st.printed(label, year),
        "cite": {"page": st.page, "row": label, "column": year},
    }


def _questions(rng: random.Random, st: Statement, scale: str) -> list[Question]:
    y1, y0, ym = st.years[0], st.years[1], st.years[2]
    labels = [label for label, _ in st.rows if label not in st.percent_rows]
    out: list[Question] = []
    a, b = rng.sample(labels, 2)
    # Year-over-year growth of a line item, in percent.
    v1, v0 = st.value(a, y1), st.value(a, y0)
    if v0 != 0:
        growth = round((v1 - v0) / v0 * 100, 2)
        out.append(
            Question(
                f"By what percentage did {a} change from {y0} to {y1}?",
                "(cur - prev) / prev * 100",
                {"cur": _operand(st, a, y1), "prev": _operand(st, a, y0)},
                growth,
                "percent",
                f"subtract({abs(v1):.0f}, {abs(v0):.0f}), divide(#0, {abs(v0):.0f}), multiply(#1, const_100)"
                if v1 >= 0 and v0 > 0
                else "",
            )
        )
    # Difference between years, in the report's scale.
    w1, w0 = st.value(b, y1), st.value(b, y0)
    out.append(
        Question(
            f"What was the change in {b} between {y0} and {y1}?",
            "cur - prev",
            {"cur": _operand(st, b, y1), "prev": _operand(st, b, y0)},
            round(w1 - w0, 1),
            scale,
            f"subtract({abs(w1):.0f}, {abs(w0):.0f})" if w1 >= 0 and w0 >= 0 else "",
        )
    )
    # Three-year average.
    vals = [st.value(a, y) for y in (y1, y0, ym)]
    out.append(
        Question(
            f"What was the average {a} over {ym}-{y1}?",
            "(x1 + x2 + x3) / 3",
            {f"x{i + 1}": _operand(st, a, y) for i, y in enumerate((y1, y0, ym))},
            round(sum(vals) / 3, 2),
            scale,
            "",
        )
    )
    # Ratio of two items in the same year, in percent.
    c1, c2 = st.value(a, y1), st.value(b, y1)
    if c2 != 0:
        out.append(
            Question(
                f"What was {a} as a percentage of {b} in {y1}?",
                "num / den * 100",
                {"num": _operand(st, a, y1), "den": _operand(st, b, y1)},
                round(c1 / c2 * 100, 2),
                "percent",
                "",
            )
        )
    return out


def inline_document(report: Report) -> dict[str, Any]:
    """The report's tables as an inline ``task.spec.document`` (scale declared)."""
    return {
        "tables": [st.cells() for st in report.statements],
        "scale": report.scale,
        "text": [
            f"{report.company}. All amounts in {report.scale}s of U.S. dollars, except percentages."
        ],
    }


def gold_trajectories(
    report: Report,
    document: dict[str, Any],
    *,
    use_programs: bool = False,
    id_prefix: str = "",
) -> list[dict[str, Any]]:
    """One correct trajectory per question (formula, or FinQA program where one exists).

    Args:
        report: From :func:`make_report`.
        document: ``task.spec.document`` to cite (``{"pdf": ...}`` or :func:`inline_document`).
        use_programs: Write the FinQA program instead of the formula where the question has one.
        id_prefix: Prefix of the trajectory ids.
    """
    inline = "pdf" not in document
    items: list[dict[str, Any]] = []
    for i, q in enumerate(report.questions):
        operands = q.operands
        if inline:
            operands = {
                k: {
                    "value": v["value"],
                    "cite": {
                        **{kk: vv for kk, vv in v["cite"].items() if kk != "page"},
                        "table": v["cite"]["page"] - 1,
                    },
                }
                for k, v in operands.items()
            }
        body: dict[str, Any] = {"answer": q.answer, "scale": q.scale, "operands": operands}
        if use_programs and q.program:
            body["program"] = q.program
            body["operands"] = {}
        else:
            body["formula"] = q.formula
        completion = (
            f"Reading the statements of {report.company}.\n```json\n{json.dumps(body)}\n```"
        )
        items.append(
            {
                "id": f"{id_prefix}{report.seed}-{i}",
                "prompt": q.text,
                "completion": completion,
                "task": {
                    "verifier": "finance.formula",
                    "spec": {"document": document},
                    "reference": {"answer": q.answer, "scale": q.scale},
                },
            }
        )
    return items


def write_pdf(report: Report, path: str | Path, *, ruled: bool = True) -> Path:
    """Lay the report out as a PDF, one statement per page.

    Args:
        report: From :func:`make_report`.
        path: Output file.
        ruled: Draw grid lines (pdfplumber's lines strategy) or none (its text strategy).

    Raises:
        MissingDependency: reportlab is not installed.
    """
    try:
        from reportlab.lib import colors
        from reportlab.lib.pagesizes import letter
        from reportlab.lib.styles import getSampleStyleSheet
        from reportlab.platypus import (
            PageBreak,
            Paragraph,
            SimpleDocTemplate,
            Spacer,
            Table,
            TableStyle,
        )
    except ImportError:
        from verifiers.errors import MissingDependency

        raise MissingDependency("reportlab", "finance") from None
    out = Path(path)
    styles = getSampleStyleSheet()
    story: list[Any] = []
    for n, st in enumerate(report.statements):
        if n:
            story.append(PageBreak())
        story.append(Paragraph(f"{report.company}", styles["Heading2"]))
        story.append(Paragraph(st.title, styles["Heading3"]))
        story.append(
            Paragraph(f"(in {report.scale}s of U.S. dollars, except percentages)", styles["Italic"])
        )
        story.append(Spacer(1, 12))
        table = Table(st.cells(), colWidths=[230, 85, 85, 85], hAlign="LEFT")
        style: list[tuple[Any, ...]] = [
            ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
            ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
            ("FONTSIZE", (0, 0), (-1, -1), 9),
        ]
        if ruled:
            style.append(("GRID", (0, 0), (-1, -1), 0.5, colors.black))
        table.setStyle(TableStyle(style))
        story.append(table)
        story.append(Spacer(1, 12))
        story.append(
            Paragraph(
                "The accompanying notes are an integral part of these consolidated financial statements. "
                "Amounts in parentheses are negative.",
                styles["BodyText"],
            )
        )
    SimpleDocTemplate(
        str(out), pagesize=letter, title=f"{report.company} annual report", invariant=1
    ).build(story)
    return out
