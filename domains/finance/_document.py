"""The report a model read: its tables and text, and finding a figure in them.

A :class:`Document` holds :class:`Table` objects (rows of printed cells, with the page they
came from) and text paragraphs. Tables work out their header rows, row labels and column
headers once, so that a citation such as ``{"row": "Total sales", "column": "2019"}`` can be
resolved the way an analyst would: find the row by its label, the column by its header, and
compare the printed cell with the quoted figure.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from ._numbers import Number, _parse_text, parse_number, scale_factor

__all__ = ["Document", "FigureMatch", "Table", "detect_scale", "is_year", "same_figure"]

SignMode = Literal["exact", "magnitude"]

_YEAR = re.compile(r"^(?:FY\s?)?(?:19|20)\d\d[A-Z]?$")
_NORM_DROP = re.compile(r"[\u00b9\u00b2\u00b3\u2070-\u209f*†‡§]|\(\s*[a-z0-9]\s*\)\s*$")
_TRAILING_PUNCT = " :;,."
r"""Dropped from a label's end (after whitespace runs became one space). ``str.rstrip``, not
``re.sub(r"[\s:;,.]+$")``: the regex restarted at every character of a run, so a model's
citation ``"Total sales" + ".:" * 80000`` took 160 s (quadratic) and turned its answer into a
timeout, an abstain."""
_SPACE = re.compile(r"\s+")
_TEXT_NUMBER = re.compile(
    r"\(?[-\u2212]?\s?(?:US)?[$€£¥]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\)?(?:\s?(?:%|percent|per cent|"
    r"thousand|million|billion|bn|mn|m\b|k\b))?",
    re.I,
)
_SCALE_NOTE = re.compile(
    r"\b(?:in|amounts in|expressed in|\$|€|£)\s*(thousands|millions|billions)\b|"
    r"\((?:[$€£]\s*)?(?:in\s+)?(thousands|millions|billions)\b|\b(?:000s|'000)\b",
    re.I,
)


def is_year(cell: str) -> bool:
    """A column title such as ``2019`` or ``FY2020`` (a header, not a figure)."""
    return bool(_YEAR.match(cell.strip()))


def normalise_label(text: str, *, spaces: bool = True) -> str:
    """Case-folded label without footnote marks, trailing punctuation or extra spaces.

    With ``spaces=False`` all whitespace is dropped: row labels compare that way because
    pdfplumber's text strategy can cut a label mid-word into two columns. Short labels (the
    usual case; reports repeat them across tables and questions) are memoised.
    """
    if len(text) <= 256:
        return _normalise_cached(text, spaces)
    return _normalise(text, spaces)


@lru_cache(maxsize=65536)
def _normalise_cached(text: str, spaces: bool) -> str:
    return _normalise(text, spaces)


def _normalise(text: str, spaces: bool) -> str:
    text = _NORM_DROP.sub(
        "", text.replace("\u2019", "'").replace("\u2013", "-").replace("\u2014", "-")
    )
    text = _SPACE.sub(" ", text).strip().rstrip(_TRAILING_PUNCT).casefold()
    return text if spaces else text.replace(" ", "")


def detect_scale(text: str) -> str:
    """The scale a note such as "(in thousands)" declares, or ``""`` when none is found."""
    match = _SCALE_NOTE.search(text)
    if match is None:
        return ""
    word = (match.group(1) or match.group(2) or "thousands").lower()
    return word.rstrip("s")


def _is_header_value(cell: str, number: Number | None) -> bool:
    """True for cells that look like column titles even though they parse as numbers."""
    return number is None or bool(_YEAR.match(cell.strip()))


def _significant(number: Number) -> int:
    return _significant_digits(number.value, number.decimals) if number.value else 1


@lru_cache(maxsize=16384)
def _significant_digits(value: float, decimals: int) -> int:
    """Printed significant digits (memoised: table cells are compared over and over)."""
    try:
        return len(str(round(abs(value) * 10 ** min(decimals, 20))))
    except (OverflowError, ValueError):  # a figure near float's range: many digits
        return 17


def same_figure(
    quoted: Number,
    printed: Number,
    *,
    document_scale: str = "",
    sign: SignMode = "magnitude",
) -> str | None:
    """Whether a quoted figure is the printed one, within half a unit of the last digit.

    Args:
        quoted: The figure as the model wrote it.
        printed: The figure as the document prints it.
        document_scale: The scale the document declares (``thousand`` ...), used when the
            model wrote a scale word (``1.5 million``) and the table did not.
        sign: ``magnitude`` accepts ``1,234`` for a printed ``(1,234)`` (accounting
            convention: expenses shown in parentheses are subtracted by name).

    Returns:
        How it matched (``exact``, ``magnitude``, ``scaled``, ``percent-as-fraction``), or
        None when it does not match.
    """
    if printed.value == 0 or quoted.value == 0:
        # A nil cell (0 or a dash) says nothing about magnitude: only a quoted 0 matches it.
        return "exact" if printed.value == quoted.value else None
    if _significant(quoted) < min(3, _significant(printed)):
        return None
    a, c = quoted.value, printed.value
    tol = max(quoted.half_unit, printed.half_unit)
    if quoted.scale != printed.scale:
        fa = scale_factor(quoted.scale)
        if printed.scale:
            factors = [scale_factor(printed.scale)]
        elif document_scale:
            factors = [scale_factor(document_scale)]
        else:
            factors = [1.0, 1e3, 1e6, 1e9]
        for fc in factors:
            t = max(quoted.half_unit * fa, printed.half_unit * fc)
            if _close(a * fa, c * fc, t, sign):
                return "scaled"
        if quoted.scale:
            return None
        # "4.3" quoted from "$4.3 million": the number as printed, unit left to the formula.
    if _close(a, c, tol, sign):
        return "exact" if (a >= 0) == (c >= 0) or c == 0 else "magnitude"
    if printed.percent and not quoted.percent:
        if _close(a, c / 100.0, max(quoted.half_unit, printed.half_unit / 100.0), sign):
            return "percent-as-fraction"
    return None


def _close(a: float, c: float, tol: float, sign: SignMode) -> bool:
    tol = tol * (1 + 1e-9) + 1e-12
    if abs(a - c) <= tol:
        return True
    return sign == "magnitude" and abs(abs(a) - abs(c)) <= tol


@dataclass(frozen=True, slots=True)
class FigureMatch:
    """Where a figure was found (or why not).

    Attributes:
        found: The figure is at the cited place (or anywhere, without a citation).
        where: ``table 0, row 'Total sales', column '2019'`` or ``paragraph 2``.
        printed: The cell text found there.
        how: How the numbers matched (see :func:`same_figure`).
        reason: Why it was not found, for the model's feedback.
    """

    found: bool
    where: str = ""
    printed: str = ""
    how: str = ""
    reason: str = ""
    table: Table | None = None
    """The table it was found in (None for paragraphs)."""
    row: int | None = None
    """Row index in :attr:`table` (header rows included)."""
    column: int | None = None
    """Column index, or None for a figure inside a text cell."""
    paragraph: int | None = None
    """Paragraph index for figures found in ``document.text``."""


@dataclass
class Table:
    """One table: rows of printed cells.

    Attributes:
        rows: Cells as printed (``None`` read as empty).
        page: 1-based PDF page, or None for inline tables.
        index: Position among the document's tables (0-based).
        scale: Scale declared for this table ("in thousands"), or ``""``.
        strategy: How it was extracted (``inline``, ``lines``, ``text``, ``csv``, ``html``).
        ordinal: Position among the tables of its PDF page (0-based), or None.
    """

    rows: list[list[str]]
    page: int | None = None
    index: int = 0
    scale: str = ""
    strategy: str = "inline"
    ordinal: int | None = None
    numbers: list[list[Number | None]] = field(init=False, repr=False)
    header_rows: int = field(init=False, repr=False)
    labels: list[str] = field(init=False, repr=False)
    _lookups: dict[tuple[str, str], list[int]] = field(init=False, repr=False, default_factory=dict)
    _titles: list[list[str]] | None = field(init=False, repr=False, compare=False, default=None)
    _numeric: list[int] | None = field(init=False, repr=False, compare=False, default=None)
    _shown: list[str | None] | None = field(init=False, repr=False, compare=False, default=None)
    _name: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        width = max((len(r) for r in self.rows), default=0)
        self.rows = [
            [c.strip() if type(c) is str else _cell_text(c) for c in r] + [""] * (width - len(r))
            for r in self.rows
        ]
        # Cells are all short strings by now: call the memoised parser directly (a report's
        # tables hold thousands of cells, and this runs once per distinct report).
        self.numbers = [
            [_parse_text(c, True) if len(c) <= 64 else None for c in r] for r in self.rows
        ]
        header = 0
        for cells, nums in zip(self.rows, self.numbers, strict=True):
            data = any(
                n is not None and not n.dash and not _is_header_value(c, n)
                for c, n in zip(cells[1:], nums[1:], strict=True)
            )
            if data:
                break
            header += 1
        self.header_rows = header if header < len(self.rows) else 0
        self.labels = [self._label(r, n) for r, n in zip(self.rows, self.numbers, strict=True)]

    @staticmethod
    def _label(cells: list[str], nums: list[Number | None]) -> str:
        parts: list[str] = []
        for cell, num in zip(cells, nums, strict=True):
            if not cell.strip():
                continue
            if num is None or (not parts and _YEAR.match(cell.strip())):
                parts.append(cell)
                continue
            break
        return normalise_label(" ".join(parts), spaces=False)

    @property
    def name(self) -> str:
        """``table 1 (page 3)`` for feedback; ``table 0 on page 3`` for a PDF's tables.

        A PDF is read lazily (only the pages a question needs), so its tables are named by
        their page, which never depends on which other pages were parsed.
        """
        if not self._name:
            if self.ordinal is not None and self.page is not None:
                self._name = f"table {self.ordinal} on page {self.page}"
            else:
                self._name = f"table {self.index}" + (
                    f" (page {self.page})" if self.page is not None else ""
                )
        return self._name

    # -- resolving citations ---------------------------------------------------------------

    def rows_for(self, label: str) -> list[int]:
        """Body rows whose label is ``label`` (exact after normalisation, else containment)."""
        found = self._lookups.get(("row", label))
        if found is None:
            found = self._remember(("row", label), self._rows_for(label))
        return found

    def columns_for(self, header: str) -> list[int]:
        """Columns whose header text is (or contains the word) ``header``."""
        found = self._lookups.get(("column", header))
        if found is None:
            found = self._remember(("column", header), self._columns_for(header))
        return found

    def _remember(self, key: tuple[str, str], found: list[int]) -> list[int]:
        if len(self._lookups) > 4096:  # cached tables outlive items: bound what models cite
            self._lookups.clear()
        self._lookups[key] = found
        return found

    def _rows_for(self, label: str) -> list[int]:
        want = normalise_label(label, spaces=False)
        if not want:
            return []
        body = range(self.header_rows, len(self.rows))
        exact = [i for i in body if self.labels[i] == want]
        if exact:
            return exact
        return [
            i
            for i in body
            if self.labels[i]
            and len(want) >= 3
            and (want in self.labels[i] or self.labels[i] in want)
        ]

    def _columns_for(self, header: str) -> list[int]:
        want = normalise_label(header)
        if not want or not self.rows:
            return []
        width = len(self.rows[0])
        titles = self._column_titles()
        exact = [c for c in range(width) if want in titles[c] or " ".join(titles[c]) == want]
        if exact:
            return self._numeric_alignment(exact, titles)
        pattern = re.compile(r"(?<![\w])" + re.escape(want) + r"(?![\w])")
        return self._numeric_alignment(
            [c for c in range(1, width) if any(pattern.search(t) for t in titles[c])], titles
        )

    def _column_titles(self) -> list[list[str]]:
        """Normalised header cells of each column, worked out on the first column lookup."""
        if self._titles is None:
            self._titles = [
                [
                    normalise_label(self.rows[r][c])
                    for r in range(self.header_rows)
                    if self.rows[r][c].strip()
                ]
                for c in range(len(self.rows[0]))
            ]
        return self._titles

    def _numeric_columns(self) -> list[int]:
        """Columns with at least one figure (not a dash) below the header."""
        if self._numeric is None:
            self._numeric = [
                c
                for c in range(len(self.rows[0]) if self.rows else 0)
                if any(
                    self.numbers[r][c] is not None and not self.numbers[r][c].dash  # type: ignore[union-attr]
                    for r in range(self.header_rows, len(self.rows))
                )
            ]
        return self._numeric

    def _numeric_alignment(self, columns: list[int], titles: list[list[str]]) -> list[int]:
        """Map header columns onto number columns when text extraction shifted them."""
        numeric = self._numeric_columns()
        titled = [c for c in range(1, len(titles)) if titles[c]]
        if not columns or all(c in numeric for c in columns) or len(titled) != len(numeric):
            return columns
        mapped = [numeric[titled.index(c)] for c in columns if c in titled]
        return sorted(set(columns) | set(mapped))

    def embedded_numbers(self) -> list[tuple[int, str, Number]]:
        """Figures printed inside text cells (``"1,258,690,067 shares (2018: 1,313,323,941)"``)."""
        found: list[tuple[int, str, Number]] = []
        for r, (cells, nums) in enumerate(zip(self.rows, self.numbers, strict=True)):
            for cell, num in zip(cells, nums, strict=True):
                if num is None and any(ch.isdigit() for ch in cell):
                    found.extend((r, raw, n) for raw, n in figures_in(cell))
        return found

    def row_numbers(self, label: str) -> list[float] | None:
        """The numbers in the first row labelled ``label`` (for FinQA ``table_*`` steps)."""
        for i in self.rows_for(label):
            values = [n.base for n in self.numbers[i][1:] if n is not None and not n.dash]
            if values:
                return values
        return None

    def suggest_row(self, label: str) -> str:
        labels = [lab for lab in self.labels[self.header_rows :] if lab]
        close = difflib.get_close_matches(
            normalise_label(label, spaces=False), labels, n=1, cutoff=0.5
        )
        return self.shown_label(self.labels.index(close[0])) if close else ""

    def shown_label(self, row: int) -> str:
        """The row's label as printed (text cells before its first figure, joined)."""
        shown = self._shown
        if shown is None:
            shown = self._shown = [None] * len(self.rows)
        label = shown[row]
        if label is None:
            label = shown[row] = self._shown_label(row)
        return label

    def _shown_label(self, row: int) -> str:
        parts: list[str] = []
        for cell, num in zip(self.rows[row], self.numbers[row], strict=True):
            if num is not None and parts:
                break
            if cell and num is None:
                parts.append(cell)
        return "".join(parts) if self.strategy == "text" else " ".join(parts)


def figures_in(text: str) -> list[tuple[str, Number]]:
    """Every figure printed in a piece of prose, as ``(printed, parsed)``."""
    items: list[tuple[str, Number]] = []
    for match in _TEXT_NUMBER.finditer(text):
        raw = match.group(0).strip()
        num = parse_number(raw) or parse_number(raw.strip("()"))
        if num is not None:
            items.append((raw, num))
    return items


def _cell_text(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, float) and cell != cell:
        return ""
    return str(cell).strip()


@dataclass
class Document:
    """Tables and text of one report.

    Attributes:
        tables: Tables in reading order.
        text: Paragraphs (inline text, or one entry per PDF page).
        scale: Scale the document declares, if any.
        source: ``inline``, ``pdf``, ``csv`` or ``html``, for details.
    """

    tables: list[Table] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    scale: str = ""
    source: str = "inline"
    _text_numbers: list[list[tuple[str, Number]]] | None = field(default=None, repr=False)

    def text_numbers(self) -> list[list[tuple[str, Number]]]:
        """Figures printed in each paragraph, parsed once."""
        if self._text_numbers is None:
            self._text_numbers = [figures_in(paragraph) for paragraph in self.text]
        return self._text_numbers

    def row_numbers(self, label: str) -> list[float] | None:
        """Numbers of the first row with this label in any table."""
        for table in self.tables:
            values = table.row_numbers(label)
            if values:
                return values
        return None

    def locate(self, quoted: Number, cite: dict[str, Any] | None, *, sign: SignMode) -> FigureMatch:
        """Find a quoted figure at its citation, or anywhere when there is none.

        A citation may name ``page``, ``table`` (0-based index), ``row`` (label), ``column``
        (header) and ``paragraph`` (0-based, for figures quoted from text). Missing parts
        widen the search; parts that match nothing make the figure ungrounded, with a reason.
        """
        cite = cite or {}
        tables = self._cited_tables(cite)
        if isinstance(tables, str):
            return FigureMatch(False, reason=tables)
        row_label = cite.get("row")
        column = cite.get("column")
        paragraph = cite.get("paragraph", cite.get("text"))
        reasons: list[str] = []
        search_text = paragraph is not None or (row_label is None and column is None)
        if paragraph is None or row_label is not None or column is not None:
            for table in tables:
                match = self._in_table(table, quoted, row_label, column, sign, reasons)
                if match is not None:
                    return match
        if search_text:
            indices: Iterable[int] = range(len(self.text))
            if isinstance(paragraph, int) and not isinstance(paragraph, bool):
                indices = [paragraph] if 0 <= paragraph < len(self.text) else []
                if not indices:
                    reasons.append(
                        f"paragraph {paragraph} does not exist ({len(self.text)} paragraphs)"
                    )
            numbers = self.text_numbers()
            for p in indices:
                for raw, printed in numbers[p]:
                    how = same_figure(quoted, printed, document_scale=self.scale, sign=sign)
                    if how:
                        return FigureMatch(True, f"paragraph {p}", raw, how, paragraph=p)
            if paragraph is None:
                for table in tables:
                    for r, raw, printed in table.embedded_numbers():
                        how = same_figure(
                            quoted, printed, document_scale=table.scale or self.scale, sign=sign
                        )
                        if how:
                            return FigureMatch(
                                True,
                                f"{table.name}, row {table.shown_label(r)!r}",
                                raw,
                                how,
                                table=table,
                                row=r,
                            )
        if not reasons:
            reasons.append("not found in the document")
        return FigureMatch(False, reason=reasons[0])

    def _cited_tables(self, cite: dict[str, Any]) -> list[Table] | str:
        tables = self.tables
        if "page" not in cite and "table" not in cite:
            return tables
        page = cite.get("page")
        if (
            isinstance(page, int)
            and not isinstance(page, bool)
            and any(t.page is not None for t in tables)
        ):
            tables = [t for t in tables if t.page == page]
            if not tables:
                return f"no table on page {page}"
        index = cite.get("table")
        if isinstance(index, int) and not isinstance(index, bool):
            chosen = [t for t in tables if t.index == index]
            if not chosen:
                return f"table {index} does not exist ({len(self.tables)} tables)"
            tables = chosen
        return tables

    def _in_table(
        self,
        table: Table,
        quoted: Number,
        row_label: Any,
        column: Any,
        sign: SignMode,
        reasons: list[str],
    ) -> FigureMatch | None:
        scale = table.scale or self.scale
        if row_label is not None:
            rows: Sequence[int] = table.rows_for(str(row_label))
            if not rows:
                hint = table.suggest_row(str(row_label))
                reasons.append(
                    f"row {str(row_label)!r:.60} not in {table.name}"
                    + (f" (closest: {hint!r})" if hint else "")
                )
                return None
        elif column is not None:
            rows = range(table.header_rows, len(table.rows))
        else:
            rows = range(len(table.rows))  # header cells count too (a year used as a count)
        if column is not None:
            cols: Sequence[int] = table.columns_for(str(column))
            if not cols:
                reasons.append(f"column {str(column)!r:.40} not in {table.name}")
                return None
        else:
            cols = range(len(table.rows[0]) if table.rows else 0)
        seen: list[str] = []
        for r in rows:
            for c in cols:
                printed = table.numbers[r][c]
                if printed is None:
                    continue
                how = same_figure(quoted, printed, document_scale=scale, sign=sign)
                if how:
                    where = f"{table.name}, row {table.shown_label(r)!r}"
                    if column is not None:
                        where += f", column {str(column)!r}"
                    return FigureMatch(
                        True, where, table.rows[r][c], how, table=table, row=r, column=c
                    )
                seen.append(table.rows[r][c])
        if row_label is not None and column is not None:
            shown = ", ".join(repr(s) for s in seen[:3]) or "no number"
            reasons.append(
                f"{table.name} has {shown} at row {str(row_label)!r:.60}, column {str(column)!r:.40}"
            )
        return None
