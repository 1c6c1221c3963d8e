"""A fast text index of a PDF's pages: which pages could print a given figure.

Parsing a page with pdfplumber (layout, then table finding) costs about 50 ms; a 300-page
report parsed whole costs 16 s and 440 MB before its first question is judged. Most questions
cite the page they read, and only that page needs parsing. For figures quoted without a page
(literals in a formula or program, uncited operands) the index says which pages *could* print
them, and only those are parsed.

The index is built with pdfium (``pypdfium2``), whose text extraction is ~68x faster than
pdfplumber's. It is only ever a filter: every page it names is still parsed by pdfplumber and
judged exactly as before, so it must never miss a page where pdfplumber would find the figure.
That is why the test is deliberately loose (see :func:`could_match`): every grounding rule of
``same_figure`` compares the quoted and printed values up to a power of ten (scale words,
percent as a fraction) within half a unit of the less precise one, and a page is a candidate
when *any* digit run on it passes that test at *any* power of ten. Digit runs are also split
at commas and points (pdfplumber's text strategy may cut a cell there) and de-doubled (a
fake-bold PDF prints each glyph twice).

Untrusted PDFs: the index runs in a worker process (a PDF that crashes or balloons pdfium
takes only the worker down, and the caller then parses every page as before); page count,
text per page and digit runs per page are bounded, and a page over a bound is marked
``dense``, i.e. a candidate for every figure.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from typing import Any

from verifiers.errors import BadInput, MissingDependency

from ._numbers import Number

__all__ = ["INDEX_VERSION", "PageIndex", "could_match", "index_pdf"]

INDEX_VERSION = "2"
"""Bumped when the index format or its tokens change; part of the cache entry."""

_MAX_TEXT_PER_PAGE = 200_000
_MAX_RUNS_PER_PAGE = 20_000
_RUN = re.compile(r"\d[\d,]*(?:\.\d*)?|\.\d+")
_NIL = re.compile(r"[-\u2010-\u2015\u2212\ufe63\uff0d]|\b(?:nil|n/a|na|none)\b", re.I)
"""A dash or a nil word anywhere (pdfium may glue a lone dash cell to its neighbours)."""
_SCALE_WORDS = ("thousand", "million", "billion", "000s", "'000")
_WORD_AFTER = re.compile(
    r"[\s)%*\u00b9\u00b2\u00b3\u2070-\u209f]{0,6}"
    r"(?:k|m|b|t|bn|mn|mm|mil|mln|tn|thousands?|millions?|billions?|trillions?|'?000s?)"
    r"\.?(?![^\W\d_])",
    re.I,
)
"""A digit run followed by one of the parser's scale words (``45m``, ``1.2 billion``)."""
_SCALED_SHIFTS = tuple(range(-12, 13, 3))
"""Powers of ten between two scale words (none, thousand ... trillion)."""


def _forms(run: str) -> set[str]:
    """A digit run and every piece of it a table cell could hold.

    pdfplumber's text strategy cuts cells where columns of the page's words line up, which
    can fall inside a run (a title's ``(2019-2021)`` becomes ``...(2019-2`` and ``021)``): so
    every prefix and suffix counts, and the halves of a fake-bold run (``1122,,3344``).
    """
    bases = {run}
    if len(run) % 2 == 0 and len(run) >= 2 and run[0::2] == run[1::2]:
        bases.add(run[0::2])
    forms: set[str] = set()
    for base in bases:
        for k in range(1, len(base) + 1):
            forms.add(base[:k])
            forms.add(base[-k:])
    return {f for f in forms if any(ch.isdigit() for ch in f)}


def _runs(text: str) -> tuple[dict[str, list[float]], dict[str, list[float]], bool]:
    """Values of a page's digit runs (and their pieces) by printed decimals, the same for
    runs followed by a scale word (``45m``, ``1.2 billion``), and whether the page is dense."""
    plain: set[tuple[int, float]] = set()
    worded: set[tuple[int, float]] = set()
    for match in _RUN.finditer(text):
        values = {v for f in _forms(match.group(0)) if (v := _run_value(f)) is not None}
        plain |= values
        if _WORD_AFTER.match(text, match.end()):
            worded |= values
        if len(plain) > _MAX_RUNS_PER_PAGE:
            return {}, {}, True
    return _grouped(plain), _grouped(worded), False


def _grouped(values: set[tuple[int, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for decimals, value in values:
        out.setdefault(str(decimals), []).append(value)
    return {k: sorted(v) for k, v in out.items()}


def index_pdf(payload: dict[str, Any]) -> dict[str, Any]:
    """Index a PDF's pages with pdfium (worker-process target: JSON in, JSON out).

    Args:
        payload: ``{"path": str, "max_pages": int}``.

    Returns:
        ``{"version", "pages": n, "index": [{"runs": [...], "dense", "nil", "scale", "text"}]}``,
        one entry per page: its digit runs, whether it is over a bound, whether it prints a
        lone dash or nil word, a scale word, any text at all. ``index`` is empty when the
        document has more than ``max_pages`` pages (the caller reports that).

    Raises:
        BadInput: pdfium cannot open the file.
        MissingDependency: pypdfium2 is not installed.
    """
    pdfium = MissingDependency.require("pypdfium2", "finance")
    path = str(payload["path"])
    max_pages = int(payload.get("max_pages", 300))
    try:
        pdf = pdfium.PdfDocument(path)
    except (pdfium.PdfiumError, OSError, ValueError) as exc:
        raise BadInput(f"PDF {path!r} cannot be indexed: {exc}") from None
    pages: list[dict[str, Any]] = []
    try:
        count = len(pdf)
        if count > max_pages:
            return {"version": INDEX_VERSION, "pages": count, "index": []}
        for number in range(count):
            page = pdf[number]
            try:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_bounded()
                finally:
                    textpage.close()
            finally:
                page.close()
            dense = len(text) > _MAX_TEXT_PER_PAGE
            text = text[:_MAX_TEXT_PER_PAGE]
            runs, worded, too_many = _runs(text)
            compact = "".join(text.split()).casefold()
            pages.append(
                {
                    "runs": runs,
                    "worded": worded,
                    "dense": dense or too_many,
                    "nil": bool(_NIL.search(text)),
                    "scale": any(w in compact for w in _SCALE_WORDS),
                    "text": bool(compact),
                }
            )
    except pdfium.PdfiumError as exc:
        raise BadInput(f"PDF {path!r} cannot be indexed: {exc}") from None
    finally:
        pdf.close()
    return {"version": INDEX_VERSION, "pages": count, "index": pages}


def _run_value(run: str) -> tuple[int, float] | None:
    """A digit run as (printed decimals, absolute value), or None."""
    digits = run.replace(",", "").strip(".")
    if digits.count(".") > 1:
        digits = digits.replace(".", "")
    try:
        value = abs(float(digits))
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    decimals = len(digits) - digits.index(".") - 1 if "." in digits else 0
    return min(decimals, 20), value


def could_match(quoted: Number, value: float, half: float, *, worded: bool) -> bool:
    """Whether ``same_figure`` could match ``quoted`` with a printed figure of this magnitude.

    ``same_figure`` compares the two as printed (a power of ten of 1), a printed percent as a
    fraction (10**-2), and, only when the two carry different scale words, up to the ratio
    of their scale factors (a multiple of 3 in the exponent). The printed figure's scale word
    is unknown here, so a run followed by a word (``worded``) may have any; magnitudes only,
    within the wider half unit.
    """
    a, c = abs(quoted.value), abs(value)
    if a == 0 or c == 0:
        return a == c
    if not (math.isfinite(a) and math.isfinite(c)):
        return False
    shifts: tuple[int, ...] = (0, -2)
    if quoted.scale or worded:
        shifts = (-2, *_SCALED_SHIFTS)
    for k in shifts:
        shift = 10.0**k
        tol = max(quoted.half_unit, half * shift) * (1 + 1e-6) + 1e-12 * max(a, 1.0)
        if abs(a - c * shift) <= tol:
            return True
    return False


def _any_near(quoted: Number, groups: dict[str, list[float]], shifts: tuple[int, ...]) -> bool:
    """Whether a printed value in ``groups`` (by decimals) is within reach of ``quoted``."""
    a = abs(quoted.value)
    for key, values in groups.items():
        half = 0.5 * 10.0 ** (-int(key))
        for k in shifts:
            shift = 10.0**k
            tol = max(quoted.half_unit, half * shift) * (1 + 1e-6) + 1e-12 * max(a, 1.0)
            lo = bisect.bisect_left(values, (a - tol) / shift)
            if lo < len(values) and values[lo] <= (a + tol) / shift:
                return True
    return False


@dataclass
class PageIndex:
    """The host side of :func:`index_pdf`: candidate pages for a figure."""

    pages: int
    entries: list[dict[str, Any]]

    def candidates(self, quoted: Number) -> set[int]:
        """1-based pages that could print ``quoted`` (in a table cell or in the text).

        The same test as :func:`could_match`, over each page's sorted values.
        """
        found: set[int] = set()
        a = abs(quoted.value)
        if not math.isfinite(a):
            return found
        plain = (-2, *_SCALED_SHIFTS) if quoted.scale else (0, -2)
        for number, entry in enumerate(self.entries, start=1):
            if entry.get("dense"):
                found.add(number)
            elif a == 0:
                # Only a printed zero or a nil cell (a lone dash, "nil", "n/a") matches 0.
                runs = entry.get("runs", {}).values()
                if entry.get("nil") or any(v and v[0] == 0.0 for v in runs):
                    found.add(number)
            elif _any_near(quoted, entry.get("runs", {}), plain) or _any_near(
                quoted, entry.get("worded", {}), (-2, *_SCALED_SHIFTS)
            ):
                found.add(number)
        return found

    def scale_pages(self) -> list[int]:
        """Pages that print a scale word (a scale note can only be on one of these)."""
        return [n for n, e in enumerate(self.entries, start=1) if e.get("scale") or e.get("dense")]

    def digit_pages(self) -> list[int]:
        """Pages with any digit (a useful table needs a figure)."""
        return [n for n, e in enumerate(self.entries, start=1) if e.get("runs") or e.get("dense")]

    def text_pages(self) -> list[int]:
        """Pages with any text."""
        return [n for n, e in enumerate(self.entries, start=1) if e.get("text") or e.get("dense")]


def page_index(data: Any, pages: int) -> PageIndex | None:
    """A usable index from cached :func:`index_pdf` output, or None (parse every page then)."""
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
        return None
    entries = data.get("index")
    if data.get("pages") != pages or not isinstance(entries, list) or len(entries) != pages:
        return None
    if not all(isinstance(e, dict) for e in entries):
        return None  # pdfium and pdfminer disagree on the page count: trust neither filter
    return PageIndex(pages, entries)
