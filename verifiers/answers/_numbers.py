"""Reading numbers the way models (and financial reports) write them.

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

from ..text import visible_text

__all__ = ["Number", "find_numbers", "normalize_numeric_text", "one_reading", "parse_number"]

SCALES = {
    "thousand": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
}


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
    text = _LATEX_FRAC.sub(r"\1/\2", text)
    text = _LATEX_FRAC_SHORT.sub(r"\1/\2", text)
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
    r"(?P<cur>(?:US)?\$|€|£|¥|₹|(?:USD|EUR|GBP|JPY)\s?)?"
    r"(?P<sign2>[-+])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?![\d,]\d)"
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\d.]))?"
    r"(?P<exp>[eE][-+]?\d{1,4})?"
    r"(?P<pct>\s?%|\s(?:per\s?cent|pct)\b)?"
    r"(?P<scale>\s?(?:thousand|million|billion|trillion|bn|mn)\b)?"
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
    if not math.isfinite(value):
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
