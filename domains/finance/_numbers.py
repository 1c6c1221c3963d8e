"""Reading numbers the way financial reports print them.

One parser serves both sides of every comparison: the figures a model quotes and the cells
extracted from a document. It understands currency symbols and codes, thousands separators,
accounting negatives ``(1,234)``, unicode minus signs and dashes, ``12.5%`` / ``12.5 percent``,
scale words (``1.2 billion``, ``$45m``), footnote markers (``1,234(a)``, ``1,234*``,
superscript digits) and, for table cells only, a lone dash meaning nil.

The parser keeps how many decimals were printed, because "equal" for a printed figure means
"within half a unit of its last printed digit".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

__all__ = ["SCALE_FACTORS", "Number", "parse_number", "scale_factor"]

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
_NUMBER = re.compile(
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
# The shapes most cells take ("$1,234.5", "(1,234)", "12.5%", "-7"): read without the full
# normalisation pipeline, which matters when a report's tables are parsed for the first time.
_SIMPLE = re.compile(
    r"\s*\$?\s*(\()?\s*\$?\s*(-)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*(\))?\s*(%)?\s*"
)


@dataclass(frozen=True, slots=True)
class Number:
    """A parsed figure.

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


def parse_number(raw: object, *, dash_is_zero: bool = False) -> Number | None:
    """Parse a printed figure, or return None when ``raw`` is not one number.

    Args:
        raw: A string as printed, or an ``int``/``float``/``Decimal`` (a JSON number).
        dash_is_zero: Read a lone dash (``-``, ``—``) or ``nil`` as 0 (table cells only).

    Returns:
        The :class:`Number`, or None for text, empty cells and several numbers in one string.
    """
    if type(raw) is str:
        return _parse_text(raw, dash_is_zero) if len(raw) <= 64 else None
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, Decimal):
        # 1e400 is a finite Decimal but float() makes it inf: refuse what floats cannot hold.
        if not raw.is_finite() or not math.isfinite(float(raw)):
            return None
        exponent = raw.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return Number(float(raw), min(decimals, MAX_DECIMALS))
    if isinstance(raw, int):
        try:
            return Number(float(raw), 0)
        except OverflowError:
            return None
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            return None
        text = repr(raw)
        if "e" in text or "E" in text:
            return Number(raw, 0)
        return Number(raw, len(text.split(".")[1]) if "." in text else 0)
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    return _parse_text(raw, dash_is_zero)


@lru_cache(maxsize=65536)
def _parse_text(raw: str, dash_is_zero: bool) -> Number | None:
    simple = _SIMPLE.fullmatch(raw)
    if simple is not None:
        open_, minus, int_part, frac, close, pct = simple.groups()
        if bool(open_) == bool(close):
            value = float(int_part.replace(",", "") + (frac or ""))
            if bool(open_) != bool(minus):
                value = -value
            return Number(value, min(len(frac) - 1, MAX_DECIMALS) if frac else 0, bool(pct), "")
    if not _DIGIT.search(raw):
        if dash_is_zero and raw.translate(_MINUS).strip().lower() in _DASHES:
            return Number(0.0, 0, dash=True)
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
    match = _NUMBER.match(text)
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
    return Number(value, decimals, percent, scale)
