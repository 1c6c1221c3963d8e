"""Without a reference: does the answer use the figures the question asks about?

With no ``task.reference`` nothing says what the right answer is, and grounding x
consistency alone only certifies *some* computation over *some* printed figures: a formula
over any cell, or the difference of two header years, scores 1.0 on any question. So in that
mode the verifier also demands evidence that the figures answer the question:

- every figure the computation uses was found at a table cell whose **row the question
  names**, or in a paragraph sharing the question's content words;
- when the question names years, the cell is in a column of one of those years (or between
  them: "from 2017 to 2019");
- no figure is a **header cell** (a column title such as a year is not a reported figure);
- the computation is not an identity over one figure (checked by ``consistency``).

How a question "names" a row follows how people write questions about a table, not how the
table spells its labels (measured on TAT-QA dev, where 86 of 718 honest answers failed the
first, literal version of this test):

- words match by **stem** (plurals, ``-ing``/``-ed``/``-ly``, first six letters:
  "employees" names "Employee terminations"; "quarterly" names "First Quarter"), with a few
  finance **synonyms** that questions use for row labels (debt/liabilities, costs/expenses,
  sales/revenue, earnings/income);
- a short label ("UK", "Low") is named when it occurs in the question as a whole word;
- a row is named when its **section heading** is (the nearest label row above it with no
  figures: "sum of all Tax credit carryforwards" names the rows under that heading);
- an **unlabelled total row** (no label, and its figure is the sum of two or more figures
  directly above it in its column: checked, not assumed) is named by "total", "sum" or "all";
- when the question names **no** row of a table, a figure is named by its **column title**
  ("Total Expected Charges per segment");
- a column dated January to March of year Y also reads as fiscal year Y-1; and a question
  that names one year and asks for a change, growth or average ("the 2019 average", "the
  change in sales in 2019") also asks about the year before it (the base or opening figure).

What these rules do not reopen: a header cell is never a figure; the question must still name
each figure's row (or column, when it names no row of the table) and its years; an identity
formula is still no computation. A known limit: a row that shares one content word with the
question is named ("Cost of sales" for a question about "Total sales"); requiring the most
completely named row instead failed 23 more honest TAT-QA answers (opening balances, second
rows of a pair), so the reference remains the real check. ``relevance`` is the share of used figures that meet this.
The reward without a reference is ``grounding x consistency x relevance``: it means "a real
computation over the figures the question names, each printed where the answer says", not
"correct". Use a reference whenever there is one.
"""

from __future__ import annotations

import re
from typing import Any

from ._document import FigureMatch, Table, is_year, normalise_label

__all__ = ["question_words", "relevance"]

_WORD = re.compile(r"[a-z][a-z']{3,}")
_STOP = frozenset(
    "what which where when that this from with into over than then were have has been does "
    "during between total change percentage percent ratio average difference increase "
    "decrease year years value amount respectively compared much many".split()
)
_MAX_QUESTION = 4000
"""Characters of the question considered (prompts can be long; the question is the start)."""
_PLURALS = (("ies", "y"), ("sses", "ss"), ("s", ""))
_ENDINGS = ("ing", "ed", "ly")
_SYNONYMS = {
    "liabil": "debt",
    "expens": "cost",
    "sale": "revenu",
    "sales": "revenu",
    "earn": "income",
    "profit": "income",
}
"""Stems that questions use for one another's row labels (kept small: each pair widens what
a question names)."""
_TOTAL_WORDS = frozenset(("total", "totals", "sum", "all"))
_CHANGE = re.compile(
    r"\b(?:average|mean|change[sd]?|increase[sd]?|decrease[sd]?|growth|grow|grew|"
    r"compared?|difference|rise|fall|fell|declined?)\b"
)
_EARLY_MONTH = re.compile(r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?)\b\.?\s*\d", re.I)


def _stem(word: str) -> str:
    word = word.strip("'").removesuffix("'s")
    for suffix, replacement in _PLURALS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + replacement
            break
    for suffix in _ENDINGS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    word = word[:6]
    return _SYNONYMS.get(word, word)


def question_words(question: str) -> set[str]:
    """Stems of the content words of ``question`` (four letters or more, common words
    dropped, synonyms folded)."""
    return {
        _stem(w)
        for part in _WORD.findall(question[:_MAX_QUESTION].casefold().replace("-", " "))
        if (w := part) not in _STOP
    }


_YEAR_IN_TEXT = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")


def _column_years(match: FigureMatch) -> set[int]:
    table = match.table
    assert table is not None and match.column is not None
    years: set[int] = set()
    for r in range(table.header_rows):
        title = table.rows[r][match.column]
        found = {int(y) for y in _YEAR_IN_TEXT.findall(title)}
        years |= found
        if found and _EARLY_MONTH.search(title):
            years |= {y - 1 for y in found}  # a fiscal year ending in January to March
    return years


def _asked_years(question: str) -> tuple[int, int] | None:
    text = question[:_MAX_QUESTION]
    asked = {int(y) for y in _YEAR_IN_TEXT.findall(text)}
    if not asked:
        return None
    low, high = min(asked), max(asked)
    if low == high and _CHANGE.search(text.casefold()):
        low -= 1  # "the change in 2019" is measured from 2018; "the 2019 average" opens there
    return low, high


def _year_ok(match: FigureMatch, question: str) -> bool:
    """A figure in a year column is relevant when the question names that year, a range
    around it ("from 2017 to 2019"), or no year at all."""
    asked = _asked_years(question)
    if asked is None or match.column is None:
        return True
    years = _column_years(match)
    if not years:
        return True
    return any(asked[0] <= y <= asked[1] for y in years)


class _Question:
    """The question, read once: its compact text, stems and whole words."""

    __slots__ = ("compact", "letters", "names_a_row", "text", "tokens", "words")

    def __init__(self, question: str) -> None:
        self.text = question[:_MAX_QUESTION]
        self.compact = normalise_label(self.text, spaces=False)
        self.letters = _letters(self.compact)
        self.words = question_words(self.text)
        self.tokens = set(re.findall(r"[a-z0-9]+", self.text.casefold()))
        self.names_a_row: dict[int, bool] = {}
        """Per table (by id, within one call): does the question name one of its rows?"""


def relevance(
    matches: list[tuple[str, FigureMatch]], question: str, paragraphs: list[str]
) -> tuple[float, list[str], list[dict[str, Any]]]:
    """Share of figures the question names, feedback lines, and per-figure details.

    Args:
        matches: ``(what, match)`` per grounded figure (operand name or literal).
        question: The prompt text.
        paragraphs: The document's text paragraphs.
    """
    asked = _Question(question)
    feedback: list[str] = []
    checked: list[dict[str, Any]] = []
    for what, match in matches:
        ok, why = _relevant(match, asked, paragraphs, question)
        checked.append({"figure": what, "relevant": ok, "reason": why})
        if not ok and not feedback:
            feedback.append(f"relevance: {what} ({match.where}): {why}")
    if not checked:
        return 0.0, ["relevance: no figure from the document to check against the question"], []
    share = sum(1 for c in checked if c["relevant"]) / len(checked)
    return share, feedback, checked


def _letters(text: str) -> str:
    """Letters and digits only ("Total $—" and "total" compare equal)."""
    return re.sub(r"[\W_]+", "", text)


def _label_score(table: Table, row: int, asked: _Question) -> float:
    """How completely the question names the row's label: 1.0 when the label occurs in it
    (or, short, as a whole word), else the share of the label's content words it uses."""
    label = _letters(table.labels[row])
    if len(label) >= 4 and label in asked.letters:
        return 1.0
    if 2 <= len(label) <= 3:
        return 1.0 if label in asked.tokens else 0.0
    stems = question_words(table.shown_label(row))
    return len(stems & asked.words) / len(stems) if stems else 0.0


def _label_named(table: Table, row: int, asked: _Question) -> bool:
    """Named fully, or by a shared content word (see the module doc for what this admits)."""
    return _label_score(table, row, asked) > 0.0


def _heading(table: Table, row: int) -> int | None:
    """The nearest row above ``row`` with only a label (a section heading; the
    first one may sit among the header rows, which end at the first row of figures)."""
    for r in range(row - 1, -1, -1):
        cells = table.rows[r]
        if cells and cells[0].strip() and not any(c.strip() for c in cells[1:]):
            return r
    return None


def _is_total(table: Table, row: int, column: int) -> bool:
    """The cell is the sum of two or more figures directly above it (an unlabelled total)."""
    cell = table.numbers[row][column]
    if cell is None:
        return False
    total, count, slack = 0.0, 0, cell.half_unit
    for r in range(row - 1, table.header_rows - 1, -1):
        above = table.numbers[r][column]
        if above is None:
            if table.rows[r][column].strip():
                break
            continue
        total += above.value
        count += 1
        slack += above.half_unit
        if count >= 2 and abs(total - cell.value) <= slack:
            return True
    return False


def _row_named(table: Table, row: int, column: int | None, asked: _Question) -> bool:
    if _label_named(table, row, asked):
        return True
    heading = _heading(table, row)
    if heading is not None and _label_named(table, heading, asked):
        return True
    if (
        not table.labels[row]
        and column is not None
        and asked.tokens & _TOTAL_WORDS
        and _is_total(table, row, column)
    ):
        return True
    if column is None:
        return False
    names_a_row = asked.names_a_row.get(id(table))
    if names_a_row is None:  # once per table and question, not per figure
        names_a_row = asked.names_a_row[id(table)] = any(
            question_words(table.shown_label(r)) and _label_named(table, r, asked)
            for r in range(table.header_rows, len(table.rows))
        )
    if names_a_row:
        return False
    titles = " ".join(
        table.rows[r][column]
        for r in range(table.header_rows)
        if not is_year(table.rows[r][column])
    )
    return bool(asked.words & question_words(titles))


def _relevant(
    match: FigureMatch, asked: _Question, paragraphs: list[str], question: str
) -> tuple[bool, str]:
    if not asked.compact:
        return False, "there is no question to check the figure against"
    table = match.table
    if table is not None and match.row is not None:
        cell = table.rows[match.row][match.column] if match.column is not None else ""
        if match.row < table.header_rows or (match.column is not None and is_year(cell)):
            return False, "a header cell (a column title such as a year) is not a figure"
        if not _row_named(table, match.row, match.column, asked):
            return False, "the question does not name this row; cite the rows it asks about"
        if not _year_ok(match, question):
            return False, "the column's year is not one the question asks about"
        return True, ""
    if match.paragraph is not None and 0 <= match.paragraph < len(paragraphs):
        shared = asked.words & question_words(paragraphs[match.paragraph][:20_000])
        if len(shared) >= max(1, min(3, len(asked.words) // 2)):
            return True, ""
        return False, "the paragraph does not speak of what the question asks about"
    return False, "not found in a table row or paragraph"
