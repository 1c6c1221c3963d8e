"""Without a reference: does the answer use the figures the question asks about?

With no ``task.reference`` nothing says what the right answer is, and grounding x
consistency alone only certifies *some* computation over *some* printed figures: a formula
over any cell, or the difference of two header years, scores 1.0 on any question. So in that
mode the verifier also demands evidence that the figures answer the question:

- every figure the computation uses was found at a table cell whose **row the question
  names** (the label, without spaces and case, occurs in the question, or they share a
  content word) and, when the question names years, in a column of one of those years (or
  between them: "from 2017 to 2019"); or in a paragraph sharing the question's content words;
- no figure is a **header cell** (a column title such as a year is not a reported figure);
- the computation is not an identity over one figure (checked by ``consistency``).

``relevance`` is the share of used figures that meet this. The reward without a reference is
``grounding x consistency x relevance``: it means "a real computation over the figures the
question names, each printed where the answer says", not "correct". Use a reference whenever
there is one.
"""

from __future__ import annotations

import re
from typing import Any

from ._document import FigureMatch, is_year, normalise_label

__all__ = ["question_words", "relevance"]

_WORD = re.compile(r"[a-z][a-z'\-]{3,}")
_STOP = frozenset(
    "what which where when that this from with into over than then were have has been does "
    "during between total change percentage percent ratio average difference increase "
    "decrease year years value amount respectively compared much many".split()
)
_MAX_QUESTION = 4000
"""Characters of the question considered (prompts can be long; the question is the start)."""


def question_words(question: str) -> set[str]:
    """Content words of the question (four letters or more, common words dropped)."""
    return {w for w in _WORD.findall(question[:_MAX_QUESTION].casefold()) if w not in _STOP}


_YEAR_IN_TEXT = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")


def _column_years(match: FigureMatch) -> set[int]:
    table = match.table
    assert table is not None and match.column is not None
    years: set[int] = set()
    for r in range(table.header_rows):
        years.update(int(y) for y in _YEAR_IN_TEXT.findall(table.rows[r][match.column]))
    return years


def _year_ok(match: FigureMatch, question: str) -> bool:
    """A figure in a year column is relevant when the question names that year, a range
    around it ("from 2017 to 2019"), or no year at all."""
    asked = {int(y) for y in _YEAR_IN_TEXT.findall(question[:_MAX_QUESTION])}
    if not asked or match.column is None:
        return True
    years = _column_years(match)
    if not years:
        return True
    return any(min(asked) <= y <= max(asked) for y in years)


def relevance(
    matches: list[tuple[str, FigureMatch]], question: str, paragraphs: list[str]
) -> tuple[float, list[str], list[dict[str, Any]]]:
    """Share of figures the question names, feedback lines, and per-figure details.

    Args:
        matches: ``(what, match)`` per grounded figure (operand name or literal).
        question: The prompt text.
        paragraphs: The document's text paragraphs.
    """
    compact = normalise_label(question[:_MAX_QUESTION], spaces=False)
    words = question_words(question)
    feedback: list[str] = []
    checked: list[dict[str, Any]] = []
    for what, match in matches:
        ok, why = _relevant(match, compact, words, paragraphs, question)
        checked.append({"figure": what, "relevant": ok, "reason": why})
        if not ok and not feedback:
            feedback.append(f"relevance: {what} ({match.where}): {why}")
    if not checked:
        return 0.0, ["relevance: no figure from the document to check against the question"], []
    share = sum(1 for c in checked if c["relevant"]) / len(checked)
    return share, feedback, checked


def _relevant(
    match: FigureMatch, compact: str, words: set[str], paragraphs: list[str], question: str
) -> tuple[bool, str]:
    if not compact:
        return False, "there is no question to check the figure against"
    table = match.table
    if table is not None and match.row is not None:
        cell = table.rows[match.row][match.column] if match.column is not None else ""
        if match.row < table.header_rows or (match.column is not None and is_year(cell)):
            return False, "a header cell (a column title such as a year) is not a figure"
        label = table.labels[match.row]
        shown = table.shown_label(match.row)
        named = (len(label) >= 3 and label in compact) or bool(words & question_words(shown))
        if not named:
            return False, "the question does not name this row; cite the rows it asks about"
        if not _year_ok(match, question):
            return False, "the column's year is not one the question asks about"
        return True, ""
    if match.paragraph is not None and 0 <= match.paragraph < len(paragraphs):
        shared = words & question_words(paragraphs[match.paragraph][:20_000])
        if len(shared) >= max(1, min(3, len(words) // 2)):
            return True, ""
        return False, "the paragraph does not speak of what the question asks about"
    return False, "not found in a table row or paragraph"
