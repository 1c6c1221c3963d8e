"""Comparisons done in the trusted host process: call return values and program output.

Values arrive from the sandbox as tagged JSON and are decoded into builtin types only, so
nothing the candidate defines (an ``__eq__`` that is always true, a ``str`` subclass) can take
part in a comparison here.
"""

from __future__ import annotations

import difflib
import math
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
    """JSON view of a decoded value: tuples become lists, sets sorted lists, dict keys strings."""
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [normalise(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if isinstance(value, dict):
        return {_json_key(k): normalise(v) for k, v in value.items()}
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    return str(key)


def values_equal(actual: Any, expected: Any, *, rel_tol: float, abs_tol: float) -> bool:
    """Structural equality of normalised values; floats within tolerance; bools are not ints."""
    a = normalise(actual)
    e = normalise(expected)
    return _eq(a, e, rel_tol, abs_tol)


def _eq(a: Any, e: Any, rel: float, abs_: float) -> bool:
    if isinstance(a, Opaque) or isinstance(e, Opaque):
        return False
    if isinstance(a, bool) or isinstance(e, bool):
        return type(a) is bool and type(e) is bool and a == e
    if isinstance(a, (int, float)) and isinstance(e, (int, float)):
        if isinstance(a, int) and isinstance(e, int):
            return a == e
        try:
            fa, fe = float(a), float(e)
        except OverflowError:  # an int beyond float range cannot equal a float within tolerance
            return False
        if math.isnan(fa) or math.isnan(fe):
            return math.isnan(fa) and math.isnan(fe)
        return math.isclose(fa, fe, rel_tol=rel, abs_tol=abs_)
    if isinstance(a, list) and isinstance(e, list):
        return len(a) == len(e) and all(_eq(x, y, rel, abs_) for x, y in zip(a, e, strict=True))
    if isinstance(a, dict) and isinstance(e, dict):
        return a.keys() == e.keys() and all(_eq(a[k], e[k], rel, abs_) for k in a)
    if type(a) is not type(e):
        return False
    return bool(a == e)


def compare_output(
    actual: str, expected: str, mode: str, *, rel_tol: float, abs_tol: float
) -> bool:
    """Compare program output with the expected text under ``mode`` (see ``IoTests.compare``)."""
    if mode == "exact":
        return actual == expected
    if mode == "lines":
        return _lines(actual) == _lines(expected)
    a_tok, e_tok = actual.split(), expected.split()
    if mode == "tokens":
        return a_tok == e_tok
    if len(a_tok) != len(e_tok):
        return False
    for a, e in zip(a_tok, e_tok, strict=True):
        if a == e:
            continue
        try:
            fa, fe = float(a), float(e)
        except ValueError:
            return False
        if not math.isclose(fa, fe, rel_tol=rel_tol, abs_tol=abs_tol):
            return False
    return True


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def short_repr(value: Any, limit: int = 200) -> str:
    """``repr`` cut to ``limit`` characters with a marker."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 640:
        # repr() of ints past 4300 digits raises ValueError; show the size instead.
        return f"<int with about {int(value.bit_length() * 0.30103) + 1} digits>"
    try:
        text = repr(value)
    except ValueError:  # e.g. a huge int nested in a list
        return f"<{type(value).__name__} too large to display>"
    return text if len(text) <= limit else text[: limit - 15] + f"... ({len(text)} chars)"


def short_diff(actual: str, expected: str, limit: int = 600) -> str:
    """A few changed lines of a unified diff (expected -> actual), cut to ``limit`` chars."""
    diff = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "expected", "actual", n=0, lineterm=""
    )
    lines = [line for line in diff if not line.startswith("@@")][:14]
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n..."
