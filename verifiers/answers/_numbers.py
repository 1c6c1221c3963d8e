"""Reading numbers the way models (and financial reports) write them: the one number parser.

Two entry points share one grammar (scale words, currency signs and codes, unicode minus
signs, thousands separators, accounting parentheses, percent words): :func:`parse_number` /
:func:`find_numbers` read an answer or free text (``answer.numeric``), and
:func:`parse_figure` reads one printed figure, keeping its printed decimals (finance: table
cells and quoted operands, imported by ``verifiers.domains.finance``). They differ only where
the context does, each difference pinned by ``datasets/answers/figures.jsonl``: a figure
drops footnote marks (``1,234*``, ``1,234(a)``), reads a lone dash as nil in a cell, reads
spaced scale letters (``45 m``, ``45 mm``: a statement's millions) and a bare ``(3)`` as
negative; an answer reads fractions, exponents and LaTeX, and a bare ``(3)`` is an equation
label. Scale letters (``k m b t``) count in answers only attached (``12k``, ``$45m``).

Handles thousands separators (``1,234,567``), currency (``$``, ``€``, ``£``, ``¥``, ``₹``,
``USD``), scientific notation (``1.2e-3``, ``1.2 \\times 10^{-3}``), fractions (``3/4``,
``\\frac{3}{4}``), percent (``12.5%``, ``12.5\\%``, ``12.5 percent``), scale words
(``1.2 million``), accounting negatives (``(1,234)``), and every Unicode dash or minus
(U+2010 ``‐5`` is minus five). European decimal commas (``1.234,5``) are not read: ``1.234``
is one and a quarter-ish, not 1234.

Text is first read as a reader sees it (:func:`verifiers.text.visible_text`): invisible
characters dropped, superscripts kept as exponents, so ``2⁵`` is 32 and ``1²`` is 1, never
25 or 12. A power of plain numbers (``2^5``, ``1.5^{2}``) is evaluated; any other power
(``2^{x}``, ``2^{0.5}``) is not a number here.

Everything here is regex-driven with linear patterns, safe on untrusted text: no pattern can
rescan a run of the input from each of its positions (the ``\\times 10^k`` pattern starts only
at the first space of a run).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from ..text import visible_text

__all__ = [
    "SCALE_FACTORS",
    "Figure",
    "Number",
    "find_number_spans",
    "find_numbers",
    "normalize_numeric_text",
    "one_reading",
    "parse_figure",
    "parse_number",
    "scale_factor",
]


SCALE_FACTORS: dict[str, float] = {
    "": 1.0,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
}
"""Multipliers of the scale words an answer or a figure may carry (``percent`` is separate)."""

_SCALE_WORDS: dict[str, str] = {
    "k": "thousand",
    "thousand": "thousand",
    "thousands": "thousand",
    "000s": "thousand",
    "000": "thousand",
    "m": "million",
    "mn": "million",
    "mm": "million",
    "mil": "million",
    "mln": "million",
    "million": "million",
    "millions": "million",
    "b": "billion",
    "bn": "billion",
    "bil": "billion",
    "billion": "billion",
    "billions": "billion",
    "t": "trillion",
    "tn": "trillion",
    "trillion": "trillion",
    "trillions": "trillion",
}

_PERCENT_WORDS = {"%", "percent", "per cent", "pct", "pct."}

# Unicode minus, hyphens and dashes, all read as an ASCII minus sign before a digit.
_MINUS = dict.fromkeys(map(ord, "\u2212\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d"), "-")
_SPACES = dict.fromkeys(map(ord, "\u00a0\u2007\u2009\u202f\u200a\u2002\u2003\t\r\n"), " ")
_SUPERSCRIPTS = re.compile("[\u00b9\u00b2\u00b3\u2070-\u209f\u2020\u2021\u00a7*#]+")
_CURRENCY = re.compile(
    r"(?:\b(?:USD|US|EUR|GBP|JPY|CHF|CNY|RMB|CAD|AUD|HKD|INR|Rs)\b\.?|[A-Z]{0,2}\$|[€£¥₹₩])"
)
_FOOTNOTE_TAIL = re.compile(
    r"(?<=[\d)%])\s*(?:\(\s*[a-zA-Z]\s*\)|\(\s*\d\s*\)|\[\s*\w{1,3}\s*\])\s*$"
)
_FIGURE = re.compile(
    r"""^
    (?P<sign>[-+])?\s*
    (?P<open>\()?\s*
    (?P<sign2>[-+])?\s*
    (?P<int>\d{1,3}(?:,\d{3})+|\d+)?
    (?P<frac>\.\d*)?
    \s*(?P<pct1>%)?\s*
    (?P<close>\))?\s*
    (?P<pct2>%)?\s*
    (?P<word>[A-Za-z][A-Za-z. ]{0,9}|'?000s?)?
    $""",
    re.X,
)
MAX_DECIMALS = 20
"""Printed decimals beyond this are not kept: a float has 17 significant digits, and a JSON
number with 400 decimals would otherwise overflow ``10 ** decimals`` arithmetic."""

_DASHES = {"-", "--", "---", "nil", "n/a", "na", "none"}
_DIGIT = re.compile(r"\d")
_NONZERO_DIGIT = re.compile(r"[1-9]")
# The shapes most cells take ("$1,234.5", "(1,234)", "12.5%", "-7"): read without the full
# normalisation pipeline, which matters when a report's tables are parsed for the first time.
_SIMPLE = re.compile(
    r"\s*\$?\s*(\()?\s*\$?\s*(-)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*(\))?\s*(%)?\s*"
)


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure as a report prints it (a table cell, a quoted operand).

    Attributes:
        value: The printed number with sign applied (``"(1,234)"`` -> -1234.0); percent and
            scale words are *not* applied here (see :attr:`base`).
        decimals: Digits printed after the decimal point (0 for integers).
        percent: Printed with ``%`` or ``percent``.
        scale: Scale word printed with the number (``""``, ``thousand``, ``million`` ...).
        dash: The cell was a lone dash (nil), read as 0.
    """

    value: float
    decimals: int = 0
    percent: bool = False
    scale: str = ""
    dash: bool = False

    @property
    def base(self) -> float:
        """The value in base units: scale word applied, percent as a fraction."""
        v = self.value * SCALE_FACTORS.get(self.scale, 1.0)
        return v / 100.0 if self.percent else v

    @property
    def half_unit(self) -> float:
        """Half a unit of the last printed digit, in the units of :attr:`value`."""
        return 0.5 * 10.0 ** (-self.decimals)


def scale_factor(scale: str | None) -> float:
    """Multiplier for a scale name; ``percent`` and unknown names count as 1."""
    return SCALE_FACTORS.get(scale or "", 1.0)


def parse_figure(raw: object, *, dash_is_zero: bool = False) -> Figure | None:
    """Parse a printed figure, or return None when ``raw`` is not one number.

    Args:
        raw: A string as printed, or an ``int``/``float``/``Decimal`` (a JSON number).
        dash_is_zero: Read a lone dash (``-``, ``—``) or ``nil`` as 0 (table cells only).

    Returns:
        The :class:`Number`, or None for text, empty cells and several numbers in one string.
    """
    if type(raw) is str:
        return parse_figure_text(raw, dash_is_zero) if len(raw) <= 64 else None
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, Decimal):
        # 1e400 is a finite Decimal but float() makes it inf: refuse what floats cannot hold.
        # 1e-400 is a non-zero Decimal that float() makes 0: as 1e400, refuse it.
        if not raw.is_finite() or not math.isfinite(float(raw)) or (raw and not float(raw)):
            return None
        exponent = raw.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return Figure(float(raw), min(decimals, MAX_DECIMALS))
    if isinstance(raw, int):
        try:
            return Figure(float(raw), 0)
        except OverflowError:
            return None
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            return None
        text = repr(raw)
        if "e" in text or "E" in text:
            return Figure(raw, 0)
        return Figure(raw, len(text.split(".")[1]) if "." in text else 0)
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    return parse_figure_text(raw, dash_is_zero)


@lru_cache(maxsize=65536)
def parse_figure_text(raw: str, dash_is_zero: bool) -> Figure | None:
    """:func:`parse_figure` of a string of at most 64 characters (memoised: table cells)."""
    simple = _SIMPLE.fullmatch(raw)
    if simple is not None:
        open_, minus, int_part, frac, close, pct = simple.groups()
        if bool(open_) == bool(close):
            value = float(int_part.replace(",", "") + (frac or ""))
            if bool(open_) != bool(minus):
                value = -value
            return Figure(value, min(len(frac) - 1, MAX_DECIMALS) if frac else 0, bool(pct), "")
    if not _DIGIT.search(raw):
        if dash_is_zero and raw.translate(_MINUS).strip().lower() in _DASHES:
            return Figure(0.0, 0, dash=True)
        return None
    text = raw.translate(_SPACES).translate(_MINUS).strip()
    text = _SUPERSCRIPTS.sub("", text)
    text = _FOOTNOTE_TAIL.sub("", text)
    text = _CURRENCY.sub("", text).strip()
    lowered = text.lower()
    percent = False
    for word in ("per cent", "percent", "pct.", "pct"):
        if lowered.endswith(word):
            text = text[: -len(word)].rstrip()
            percent = True
            break
    match = _FIGURE.match(text)
    if match is None:
        return None
    int_part, frac = match.group("int"), match.group("frac")
    if not int_part and (not frac or frac == "."):
        return None
    if bool(match.group("open")) != bool(match.group("close")):
        return None
    scale = ""
    word = match.group("word")
    if word:
        key = word.strip().rstrip(".").lower().lstrip("'")
        if key in _PERCENT_WORDS:
            percent = True
        elif key in _SCALE_WORDS:
            scale = _SCALE_WORDS[key]
        else:
            return None
    digits = (int_part or "0").replace(",", "") + (frac if frac and frac != "." else "")
    value = float(digits)
    negative = (match.group("sign") == "-") ^ (match.group("sign2") == "-")
    if match.group("open"):
        negative = not negative if not match.group("sign2") else negative
    if negative:
        value = -value
    decimals = min(len(frac) - 1, MAX_DECIMALS) if frac else 0
    percent = percent or bool(match.group("pct1") or match.group("pct2"))
    return Figure(value, decimals, percent, scale)


# -- answers: numbers in free text and in a whole answer ----------------------------------

SCALES = {word: SCALE_FACTORS[canonical] for word, canonical in _SCALE_WORDS.items()}
"""Scale word -> multiplier, for the answer scanner: the same words as a printed figure."""

_SHORT_SCALE = "k|m|b|t"
"""Scale letters read in answers only when attached (``12k``, ``$45m``): ``5 m`` is five
metres there, and ``mm``/``mil`` (millimetres, thousandths of an inch) are not read at all.
A table cell is one figure, so :func:`parse_figure` reads them spaced too (``45 m`` or
``45 mm`` in a statement is 45 million). This is the one place the two readings differ."""
_NOT_IN_ANSWERS = ("mm", "mil")

_LONG_SCALE = "|".join(
    sorted(
        (
            re.escape(w)
            for w in _SCALE_WORDS
            if w[0].isalpha() and w not in (*_SHORT_SCALE.split("|"), *_NOT_IN_ANSWERS)
        ),
        key=len,
        reverse=True,
    )
)


@dataclass(frozen=True)
class Number:
    """One number found in text."""

    value: float
    """The number as written, before percent or scale is applied (``12.5`` for ``12.5%``)."""
    percent: bool = False
    """Written with ``%`` / ``percent``."""
    scale: float = 1.0
    """Multiplier of a scale word (``1e6`` for *million*), 1 when none."""
    text: str = ""
    """The matched text, for feedback."""

    @property
    def contradictory(self) -> bool:
        """A percent with a scale word (``4.2% thousand``) is not one number."""
        return self.percent and self.scale != 1.0


def _nearer(candidates: tuple[float, float], other: float) -> float:
    return min(candidates, key=lambda c: abs(c - other))


def one_reading(got: Number, ref: Number, percent: str, scale: str) -> tuple[float, float]:
    """The single pair of values compared for ``got`` against ``ref``.

    At most one reading of an answer is tried against a reference, so leniency never
    multiplies (``4.2% thousand`` must not match 42, 4200, 4.2 and 0.042; ``0.125%`` must not
    pass ``12.5%``). Percent (``percent``): ``fraction`` reads ``x%`` as ``x/100`` on both
    sides, ``number`` as ``x``; ``either``: when both sides are written the same way (both
    with ``%`` or neither) they compare as written; when only one side has ``%`` (a reference
    of 12.5 or of 0.125 for an answer of 12.5%), that side is read as whichever of ``x`` and
    ``x/100`` is nearer the other side. Scale words (``scale``) the same way: ``apply``
    multiplies, ``ignore`` does not; ``either``: the same word on both sides (or none)
    compares as written, different words are applied, and a word on one side only is applied
    or not, whichever is nearer the other side.
    """
    g, r = got.value, ref.value
    if got.percent or ref.percent:
        if percent == "fraction":
            g, r = (g / 100 if got.percent else g), (r / 100 if ref.percent else r)
        elif percent == "either" and got.percent != ref.percent:
            if got.percent:
                g = _nearer((g, g / 100), r * (ref.scale if ref.scale != 1.0 else 1.0))
            else:
                r = _nearer((r, r / 100), g * (got.scale if got.scale != 1.0 else 1.0))
    if got.scale != 1.0 or ref.scale != 1.0:
        if scale == "apply" or (scale == "either" and got.scale != 1.0 and ref.scale != 1.0):
            if not (scale == "either" and got.scale == ref.scale):
                g, r = g * got.scale, r * ref.scale
        elif scale == "either":
            if got.scale != 1.0:
                g = _nearer((g, g * got.scale), r)
            else:
                r = _nearer((r, r * ref.scale), g)
    return g, r


_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*([-+]?[\d.,]+)\s*\}\s*\{\s*([-+]?[\d.,]+)\s*\}")
_LATEX_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*(\d)(\d)")
_GLUED_FRAC = re.compile(r"(?<=[\d.])(?=\\[dt]?frac)")
"""A digit right before ``\\frac``: ``3\\frac{1}{2}`` is the mixed number 3 1/2 (refused as
two numbers), never the fraction 31/2."""
_PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]{0,200}\}")
"""``\\phantom{2}`` takes the room of its content and shows nothing: not part of the answer."""
_COLOR = re.compile(r"\\(?:text)?color\s*\{[\w!.]{0,40}\}")
"""``\\color{red}``, ``\\textcolor{red}``: the colour, not a number (its group stays)."""
_TIMES_TEN = re.compile(
    r"(?<!\s)\s*(?:\\times|\\cdot|×|\*|·)\s*10\s*\^\s*\{?\s*([-+]?\d{1,4})\s*\}?"
)
_TEN_POW = re.compile(r"(?<![\d.])10\s*\^\s*\{?\s*([-+]?\d{1,4})\s*\}?")
_POWER = re.compile(
    r"(?<![\w.^])(\d+(?:\.\d+)?)\s*\^\s*(?:\{\s*([-+]?\d{1,3})\s*\}|([-+]?\d{1,3}))(?![\d.])"
)
_OTHER_POWER = re.compile(r"\^\s*(?:\{[^{}]{0,64}\}|[-+]?[\w.]*)")


def _drop_powers(text: str) -> str:
    """Blank out ``base ^ exponent`` (base digits included): neither is the number."""
    out: list[str] = []
    last = 0
    for match in _OTHER_POWER.finditer(text):
        out.append(text[last : match.start()].rstrip().rstrip("0123456789.").rstrip())
        out.append(" ^ ")
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _power(match: re.Match[str]) -> str:
    exponent = int(match.group(2) or match.group(3))
    try:
        value = float(match.group(1)) ** exponent
    except (OverflowError, ZeroDivisionError):
        return " ^ "
    if not math.isfinite(value) or abs(exponent) > 64:
        return " ^ "
    return format(value, ".15g")


def normalize_numeric_text(text: str) -> str:
    """Rewrite LaTeX and Unicode number notation into plain ASCII the scanner reads."""
    text = visible_text(text)
    if "\\" not in text and "{" not in text and "^" not in text:
        return text  # nothing below applies to plain text
    text = (
        text.replace("{,}", ",")
        .replace("\\,", ",")
        .replace("\\!", "")
        .replace("\\%", "%")
        .replace("\\$", "$")
        .replace("\\left", "")
        .replace("\\right", "")
    )
    text = re.sub(r"\\(?:text|mathrm|textbf|mbox)\s*\{\s*(%|percent)\s*\}", r"\1", text)
    text = _GLUED_FRAC.sub(" ", text)
    text = _LATEX_FRAC.sub(r"\1/\2", text)
    text = _LATEX_FRAC_SHORT.sub(r"\1/\2", text)
    text = _PHANTOM.sub("", text)
    text = _COLOR.sub("", text)
    text = _TIMES_TEN.sub(r"e\1", text)
    text = _TEN_POW.sub(r"1e\1", text)
    if "^" in text:
        text = _POWER.sub(_power, text)
        # What is left is a power of something else: no number may be read out of it.
        text = _drop_powers(text)
    return text


_NUMBER = re.compile(
    r"(?<![\w.])"
    r"(?P<open>\(\s*)?"
    r"(?P<sign1>[-+]\s?)?"
    r"(?P<cur>(?-i:[A-Z]{1,2})?\$\s?|[€£¥₹₩]\s?|(?:USD|EUR|GBP|JPY|CHF|CNY|RMB|CAD|AUD|HKD|INR)\s?)?"
    r"(?P<sign2>[-+])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?![\d,]\d)"
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?"
    r"(?P<exp>[eE][-+]?\d{1,4})?"
    r"(?P<pct>\s?%|\s(?:per\s?cent|pct)\b)?"
    r"(?P<scale>\s?(?:" + _LONG_SCALE + r")\b|(?:" + _SHORT_SCALE + r")(?![^\W\d_]))?"
    r"(?P<close>\s*\))?",
    re.I,
)


def _build(match: re.Match[str]) -> Number | None:
    num = match.group("num").replace(",", "")
    exp = match.group("exp") or ""
    try:
        value = float(num + exp)
        if match.group("den"):
            den = float(match.group("den"))
            if den == 0:
                return None
            value /= den
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value) or (value == 0.0 and _NONZERO_DIGIT.search(num)):
        # 1e9999 overflows and 1e-400 underflows: what a float cannot hold is no number,
        # else "1e-400" (or 0.000...01 with 400 zeros) would pass a reference of exactly 0.
        return None
    sign = (match.group("sign1") or "").strip() + (match.group("sign2") or "")
    negative = sign.count("-") % 2 == 1
    text = match.group(0).strip()
    if match.group("open") and match.group("close"):
        # Accounting negative: "(1,234)", "($5.00)", "(12.5%)"; a bare "(3)" is usually an
        # equation label, so it stays positive.
        if (
            match.group("cur")
            or "," in match.group("num")
            or "." in match.group("num")
            or (match.group("pct"))
        ):
            negative = not negative
    elif match.group("open") or match.group("close"):
        text = text.strip("() ")
    if negative:
        value = -value
    scale_word = (match.group("scale") or "").strip().lower()
    return Number(
        value=value,
        percent=bool(match.group("pct")),
        scale=SCALES.get(scale_word, 1.0),
        text=text,
    )


def find_numbers(text: str, *, normalized: bool = False) -> list[Number]:
    """Every number in ``text``, in order."""
    if not normalized:
        text = normalize_numeric_text(text)
    found: list[Number] = []
    for match in _NUMBER.finditer(text):
        number = _build(match)
        if number is not None:
            found.append(number)
    return found


def find_number_spans(text: str) -> list[tuple[Number, int, int]]:
    """Every number in ``text`` (already normalised) with its span, in order."""
    found: list[tuple[Number, int, int]] = []
    for match in _NUMBER.finditer(text):
        number = _build(match)
        if number is not None:
            found.append((number, match.start(), match.end()))
    return found


def parse_number(text: str) -> Number | None:
    """``text`` as exactly one number (surrounding ``$...$`` and spaces allowed), else None."""
    text = normalize_numeric_text(text).strip()
    text = re.sub(r"\\(?:text|mathrm|textbf|mbox)\s*\{([^{}]*)\}", r"\1", text)
    # Surrounding spaces and ``$`` (and a final full stop): str methods, linear, where the
    # regex ``^[\s$]*(.*?)[\s$.]*$`` retried its tail at every position.
    body = text.lstrip().lstrip("$").strip()
    while body.endswith(("$", ".")) or body[-1:].isspace():
        body = body.rstrip().rstrip("$.")
    while body.startswith("$") or body[:1].isspace():
        body = body.lstrip().lstrip("$")
    for candidate in (text, body):
        match = _NUMBER.fullmatch(candidate.strip())
        if match is not None:
            return _build(match)
    return None
