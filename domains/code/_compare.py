"""Comparisons done in the trusted host process: call return values and program output.

Values arrive from the sandbox as tagged JSON and are decoded into builtin types only, so
nothing the candidate defines (an ``__eq__`` that is always true, a ``str`` subclass) can take
part in a comparison here.

The rules (each closes a way a wrong answer used to pass; ``docs/code.md`` lists them):

* ints compare exactly: an expected int equals an int of the same value, or a float that is
  *exactly* that number (``3.0`` for ``3``), never "within 1e-9" (an off-by-one answer
  ``>= 1e9`` would pass); a tolerance applies to an expected int only when the spec sets one;
* floats compare within ``rel_tol``/``abs_tol`` when the expected value is a float;
* ``bool`` is not an int (``True != 1``), a ``str`` is not a number;
* a set equals only a set (expected sets are written in the tagged form, see
  ``CallTests.values``), never a list, sorted or not; tuples equal lists (JSON has no tuples);
* nothing here turns a value into text it cannot hold: ints past ``sys.int_info``'s
  string limit, sets mixing types, keys of any size are compared without ``str``/``repr``.
"""

from __future__ import annotations

import difflib
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["Opaque", "compare_output", "normalise", "short_diff", "short_repr", "values_equal"]


class Opaque:
    """A candidate object that is not plain data (only its type name and repr are known)."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return f"<{self.type_name} object: {self.text[:80]}>"


def normalise(value: Any) -> Any:
    """JSON view of a decoded value: tuples become lists, dict keys strings; sets stay sets."""
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return value
    if isinstance(value, dict):
        out = {_json_key(k): normalise(v) for k, v in value.items()}
        if len(out) != len(value):
            # {1: x, "1": y} has no JSON form; collapsing it would hide the extra key.
            return Opaque("dict", "keys that collide as JSON strings")
        return out
    return value


class _BigKey:
    """A dict key whose text form does not exist (an int past the string limit)."""

    def __init__(self, key: int) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BigKey) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def _json_key(key: Any) -> Any:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int) and key.bit_length() > 10_000:
        return _BigKey(key)
    try:
        return str(key)
    except ValueError:
        return _BigKey(key)


def values_equal(
    actual: Any, expected: Any, *, rel_tol: float, abs_tol: float, int_tolerance: bool = False
) -> bool:
    """Structural equality of decoded values under the module's rules.

    ``int_tolerance``: the spec set a tolerance, so it applies to expected ints too.
    """
    try:
        return _eq(normalise(actual), normalise(expected), rel_tol, abs_tol, int_tolerance)
    except RecursionError:
        return False


def _eq(a: Any, e: Any, rel: float, abs_: float, int_tol: bool) -> bool:
    if isinstance(a, Opaque) or isinstance(e, Opaque):
        return False
    if isinstance(a, bool) or isinstance(e, bool):
        return type(a) is bool and type(e) is bool and a == e
    if isinstance(a, (int, float)) and isinstance(e, (int, float)):
        if isinstance(e, int) and not int_tol:
            # Exact: Python compares int and float as the numbers they are.
            return (isinstance(a, int) or math.isfinite(a)) and a == e
        if isinstance(a, int) and isinstance(e, int):
            if a == e:
                return True
        try:
            fa, fe = float(a), float(e)
        except OverflowError:  # an int beyond float range cannot equal a float within tolerance
            return False
        if math.isnan(fa) or math.isnan(fe):
            return math.isnan(fa) and math.isnan(fe)
        return math.isclose(fa, fe, rel_tol=rel, abs_tol=abs_)
    if isinstance(a, list) and isinstance(e, list):
        return len(a) == len(e) and all(
            _eq(x, y, rel, abs_, int_tol) for x, y in zip(a, e, strict=True)
        )
    if isinstance(a, (set, frozenset)) and isinstance(e, (set, frozenset)):
        return len(a) == len(e) and {_typed(x) for x in a} == {_typed(x) for x in e}
    if isinstance(a, dict) and isinstance(e, dict):
        return a.keys() == e.keys() and all(_eq(a[k], e[k], rel, abs_, int_tol) for k in a)
    if type(a) is not type(e):
        return False
    return bool(a == e)


def _typed(x: Any) -> Any:
    """A set element with its type, so ``{1} != {True}`` and ``{1} != {1.0}``."""
    if isinstance(x, tuple):
        return ("tuple", tuple(_typed(v) for v in x))
    if isinstance(x, frozenset):
        return ("frozenset", frozenset(_typed(v) for v in x))
    return (type(x).__name__, x)


_INT_TOKEN = re.compile(r"[+-]?[0-9]+")
_NUMBER_TOKEN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
r"""A plain decimal number. Each digit run has one way to match: ``[0-9]+\.?[0-9]*`` let the
two runs split a long digit string at every point, so a 16,000-digit token that is not a
number (``"1" * 16000 + "x"``) took 5 s to refuse, quadratic, here in the host process where
nothing has a deadline (1 MiB of program output would hold the engine's loop for hours)."""


def compare_output(
    actual: str, expected: str, mode: str, *, rel_tol: float, abs_tol: float
) -> bool:
    """Compare program output with the expected text under ``mode`` (see ``IoTests.compare``).

    ``float`` mode: an expected integer token (``42``) needs exactly that number (``42``,
    ``42.0``); only expected tokens with a fraction or exponent get the tolerance; a token that
    is not a plain decimal number (``nan``, ``inf``, ``1_000``, ``0x10``) must match as text.
    """
    if mode == "exact":
        return actual == expected
    if mode == "lines":
        return _lines(actual) == _lines(expected)
    a_tok, e_tok = actual.split(), expected.split()
    if mode == "tokens":
        return a_tok == e_tok
    if len(a_tok) != len(e_tok):
        return False
    return all(
        a == e or _same_number(a, e, rel_tol, abs_tol) for a, e in zip(a_tok, e_tok, strict=True)
    )


def _same_number(a: str, e: str, rel_tol: float, abs_tol: float) -> bool:
    if not (_NUMBER_TOKEN.fullmatch(a) and _NUMBER_TOKEN.fullmatch(e)):
        return False
    if _INT_TOKEN.fullmatch(e):
        try:  # Decimal: exact, and no digit limit (int() refuses 4300+ digits)
            return Decimal(a) == Decimal(e)
        except (InvalidOperation, ValueError):
            return False
    try:
        fa, fe = float(a), float(e)
    except (ValueError, OverflowError):
        return False
    if not (math.isfinite(fa) and math.isfinite(fe)):
        return False
    return math.isclose(fa, fe, rel_tol=rel_tol, abs_tol=abs_tol)


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr`` cut to ``limit`` characters with a marker (never raises, never a surrogate)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 640:
        # repr() of ints past 4300 digits raises ValueError; show the size instead.
        return f"<int with about {int(value.bit_length() * 0.30103) + 1} digits>"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # e.g. a huge int nested in a list
        return f"<{type(value).__name__} too large to display>"
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 15] + f"... ({len(text)} chars)"


def printable(text: str) -> str:
    """``text`` with unpaired surrogates written as ``\\udXXX`` (a result must stay writable)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def short_diff(actual: str, expected: str, limit: int = 600) -> str:
    """A few changed lines of a unified diff (expected -> actual), cut to ``limit`` chars."""
    # Bounded input: difflib is quadratic in the worst case and this path has no deadline.
    exp_lines = [ln[:300] for ln in expected[:20_000].splitlines()[:60]]
    act_lines = [ln[:300] for ln in actual[:20_000].splitlines()[:60]]
    diff = difflib.unified_diff(exp_lines, act_lines, "expected", "actual", n=0, lineterm="")
    lines = [line for line in diff if not line.startswith("@@")][:14]
    text = printable("\n".join(lines))
    return text if len(text) <= limit else text[:limit] + "\n..."
