"""Whitelisted ``ast`` walk into sympy, and equivalence of parsed answers.

Only these node types are accepted: ``Expression``, ``BinOp`` (``+ - * / **``), ``UnaryOp``
(``+ -``), integer ``Constant``, ``Name`` and ``Call`` of a name in
:data:`~verifiers.answers._latex.FUNCTIONS` with positional arguments. Anything else (an
attribute, a subscript, a string, a keyword argument, a lambda) is rejected before sympy sees
it. Powers are bounded so that ``9**9**9`` is refused instead of computed.
"""

from __future__ import annotations

import ast
import math
import random
from collections.abc import Callable
from typing import Any

import sympy

from ._latex import FUNCTIONS, MathParseError, Piece, latex_to_plain, split_structure, to_python
from ._numeval import Unsupported, evaluate

__all__ = ["MAX_NODES", "Parsed", "equal_pieces", "parse_answer"]

MAX_NODES = 400
"""Most AST nodes in one expression."""
MAX_EXPONENT = 10_000
"""Largest integer exponent of a number; huge powers are how answers exhaust memory."""
MAX_SYMBOLIC_EXPONENT = 200
"""Largest integer exponent of an expression with symbols (expansion cost grows with it)."""
MAX_POWER_DIGITS = 5_000
"""Largest estimated number of digits of an integer power."""
MAX_FACTORIAL = 1_000
"""Largest integer argument of factorial and binomial."""

Parsed = tuple[str, Any]


def _fn(name: str) -> Callable[..., Any]:
    table: dict[str, Callable[..., Any]] = {
        "sqrt": sympy.sqrt,
        "root": lambda x, n=2: sympy.root(x, n),
        "sin": sympy.sin,
        "cos": sympy.cos,
        "tan": sympy.tan,
        "cot": sympy.cot,
        "sec": sympy.sec,
        "csc": sympy.csc,
        "arcsin": sympy.asin,
        "arccos": sympy.acos,
        "arctan": sympy.atan,
        "asin": sympy.asin,
        "acos": sympy.acos,
        "atan": sympy.atan,
        "sinh": sympy.sinh,
        "cosh": sympy.cosh,
        "tanh": sympy.tanh,
        "log": lambda x, b=None: sympy.log(x) if b is None else sympy.log(x, b),
        "ln": sympy.log,
        "exp": sympy.exp,
        "abs": sympy.Abs,
        "factorial": sympy.factorial,
        "binomial": sympy.binomial,
        "floor": sympy.floor,
        "ceil": sympy.ceiling,
    }
    return table[name]


_CONSTANTS: dict[str, Any] = {
    "pi": sympy.pi,
    "oo": sympy.oo,
    "infty": sympy.oo,
    "inf": sympy.oo,
    "e": sympy.E,
    "i": sympy.I,
}


class _Builder:
    """Walks one ``ast.Expression`` into a sympy expression, node by node."""

    def __init__(self) -> None:
        self.nodes = 0

    def build(self, node: ast.AST) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise MathParseError(f"expression has more than {MAX_NODES} parts")
        if isinstance(node, ast.Expression):
            return self.build(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int):
                raise MathParseError("only integer literals are allowed")
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name):
            constant = _CONSTANTS.get(node.id)
            if constant is not None:
                return constant
            return sympy.Symbol(node.id)
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise MathParseError("unsupported unary operator")
        if isinstance(node, ast.BinOp):
            left = self.build(node.left)
            right = self.build(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                if right == 0:
                    raise MathParseError("division by zero")
                return left / right
            if isinstance(node.op, ast.Pow):
                return _power(left, right)
            raise MathParseError("unsupported operator")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise MathParseError("unsupported function call")
            if node.keywords or not node.args or len(node.args) > FUNCTIONS[node.func.id]:
                raise MathParseError(f"bad arguments to {node.func.id}")
            if any(isinstance(arg, ast.Starred) for arg in node.args):
                raise MathParseError("unsupported argument")
            args = [self.build(arg) for arg in node.args]
            name = node.func.id
            if name in ("factorial", "binomial"):
                for arg in args:
                    if arg.is_number and (not arg.is_Integer or abs(int(arg)) > MAX_FACTORIAL):
                        raise MathParseError(
                            f"{name} argument must be an integer <= {MAX_FACTORIAL}"
                        )
            return _fn(name)(*args)
        raise MathParseError(f"unsupported syntax: {type(node).__name__}")


def _power(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` after checking the result stays small."""
    if exponent.is_Integer or exponent.is_Rational:
        size = abs(int(exponent.p)) / int(exponent.q)
        if base.free_symbols:
            if size > MAX_SYMBOLIC_EXPONENT:
                raise MathParseError(f"exponent {exponent} too large")
        else:
            if size > MAX_EXPONENT:
                raise MathParseError(f"exponent {exponent} too large")
            if base.is_Rational and base not in (0, 1, -1):
                digits = size * math.log10(max(abs(int(base.p)), int(base.q), 2))
                if digits > MAX_POWER_DIGITS:
                    raise MathParseError(f"{base}**{exponent} is too large a number")
    elif not exponent.free_symbols:
        # An irrational numeric exponent (e^{e^{10}}): bound its size numerically.
        try:
            value = evaluate(exponent, {})
        except Unsupported:
            raise MathParseError("exponent too large to evaluate") from None
        if abs(value) > MAX_EXPONENT:
            raise MathParseError("exponent too large")
    return sympy.Pow(base, exponent)


def _expression(text: str) -> Any:
    source = to_python(text)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise MathParseError(f"not an expression ({type(exc).__name__})") from None
    return _Builder().build(tree)


def _piece(piece: Piece) -> Parsed:
    if piece.kind == "expr":
        return ("expr", _expression(piece.text))
    if piece.kind == "empty":
        return ("set", [])
    items = [_piece(p) for p in piece.items]
    if piece.kind == "interval":
        return ("interval", (items[0], items[1], piece.closed))
    return (piece.kind, items)


def parse_answer(text: str) -> Parsed:
    """A math answer as ``(kind, value)``; ``kind`` is expr/eq/tuple/set/list/interval/union.

    Raises:
        MathParseError: outside the grammar or a bound.
    """
    return _piece(split_structure(latex_to_plain(text)))


# -- equivalence --------------------------------------------------------------------------


class Tolerance:
    """Numeric tolerance for comparing two values (absolute or relative, whichever is larger)."""

    def __init__(self, rel: float, abs_: float) -> None:
        self.rel = rel
        self.abs = abs_

    def close(self, a: complex, b: complex) -> bool:
        return abs(a - b) <= max(self.abs, self.rel * max(abs(a), abs(b)))


def _number(expr: Any, point: dict[Any, complex] | None = None) -> complex | None:
    """``expr`` (at ``point``) as a complex number, or None where it cannot be evaluated."""
    try:
        return evaluate(expr, point or {})
    except Unsupported:
        return None


def equal_exprs(a: Any, b: Any, tol: Tolerance) -> tuple[bool, str]:
    """Whether two sympy expressions are equal, and how that was decided."""
    if a == b:
        return True, "structural"
    infinite = (sympy.oo, -sympy.oo, sympy.zoo)
    if a.has(*infinite) or b.has(*infinite):
        # Only a plain infinity equals an infinity; simplify() on oo - f(x) can run forever.
        return (a in infinite and a == b), "structural"
    symbols = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)
    if not symbols:
        va, vb = _number(a), _number(b)
        if va is not None and vb is not None:
            return tol.close(va, vb), "numeric"
        return _small_simplify_is_zero(a - b), "symbolic"
    # Random points in a range where sqrt/log of simple expressions stay real; seeded so a
    # verdict is reproducible (the cache relies on it).
    rng = random.Random(0x5EED)
    checked = 0
    for _ in range(8):
        point = {s: complex(rng.randint(1050, 2950) / 1000) for s in symbols}
        va = _number(a, point)
        vb = _number(b, point)
        if va is None or vb is None:
            continue
        if not tol.close(va, vb):
            return False, "numeric"
        checked += 1
        if checked >= 5:
            return True, "numeric"
    if checked >= 2:
        return True, "numeric"
    return _small_simplify_is_zero(a - b), "symbolic"


MAX_SIMPLIFY_OPS = 40
"""``sympy.simplify`` runs only on differences this small (it has no time bound of its own;
the worker's timeout is the backstop)."""


def _small_simplify_is_zero(diff: Any) -> bool:
    """Last resort when no test point evaluates (overflow, poles): simplify, but only small
    algebraic differences; with transcendental functions inside, simplify() can run for
    minutes (``sin(pi*(100 - x)*(log(110) + I*pi))`` does), so those count as different."""
    if sympy.count_ops(diff) > MAX_SIMPLIFY_OPS or diff.atoms(sympy.Function):
        return False
    return bool(sympy.simplify(diff) == 0)


def _eq_value(parsed: Parsed) -> Parsed | None:
    """For ``x = <value>``: the value (a single-symbol left side names the unknown)."""
    kind, value = parsed
    if kind == "eq" and value[0][0] == "expr" and value[0][1].is_Symbol:
        return value[1]  # type: ignore[no-any-return]
    return None


def equal_pieces(got: Parsed, want: Parsed, tol: Tolerance) -> tuple[bool, str]:
    """Whether a parsed answer equals a parsed reference, and a reason when it does not."""
    got_kind, got_value = got
    want_kind, want_value = want
    if got_kind == "eq" and want_kind != "eq":
        value = _eq_value(got)
        if value is None:
            return False, "expected a value, got an equation"
        return equal_pieces(value, want, tol)
    if want_kind == "eq" and got_kind != "eq":
        value = _eq_value(want)
        if value is None:
            return False, "expected an equation"
        return equal_pieces(got, value, tol)
    if got_kind == "list" and len(got_value) == 1:
        return equal_pieces(got_value[0], want, tol)
    if want_kind == "list" and len(want_value) == 1:
        return equal_pieces(got, want_value[0], tol)
    if {got_kind, want_kind} == {"tuple", "interval"}:
        # "(1, 3)" is both a pair and an open interval: read it as the interval here.
        if got_kind == "tuple" and len(got_value) == 2:
            got_kind, got_value = "interval", (got_value[0], got_value[1], (False, False))
        if want_kind == "tuple" and len(want_value) == 2:
            want_kind, want_value = "interval", (want_value[0], want_value[1], (False, False))
    unordered = {"set", "list", "union"}
    if got_kind in unordered and want_kind in unordered:
        return _match_unordered(got_value, want_value, tol)
    if got_kind != want_kind:
        return False, f"expected {_describe(want_kind)}, got {_describe(got_kind)}"
    if got_kind == "expr":
        ok, method = equal_exprs(got_value, want_value, tol)
        return ok, method if ok else "not equal"
    if got_kind == "eq":
        (gl, gr), (wl, wr) = got_value, want_value
        if gl[0] == wl[0] == "expr" and gl[1].is_Symbol and gl[1] == wl[1]:
            return equal_pieces(gr, wr, tol)
        if gl[0] == gr[0] == wl[0] == wr[0] == "expr":
            diff_got = gl[1] - gr[1]
            diff_want = wl[1] - wr[1]
            for sign in (1, -1):
                ok, method = equal_exprs(diff_got, sign * diff_want, tol)
                if ok:
                    return True, method
        return False, "equations differ"
    if got_kind == "tuple":
        if len(got_value) != len(want_value):
            return False, f"expected {len(want_value)} components, got {len(got_value)}"
        for index, (g, w) in enumerate(zip(got_value, want_value, strict=True)):
            ok, why = equal_pieces(g, w, tol)
            if not ok:
                return False, f"component {index + 1}: {why}"
        return True, "tuple"
    if got_kind == "interval":
        g_lo, g_hi, g_closed = got_value
        w_lo, w_hi, w_closed = want_value
        if tuple(g_closed) != tuple(w_closed):
            return False, "interval ends differ (open/closed)"
        if equal_pieces(g_lo, w_lo, tol)[0] and equal_pieces(g_hi, w_hi, tol)[0]:
            return True, "interval"
        return False, "interval bounds differ"
    return False, f"cannot compare {got_kind}"


def _match_unordered(got: list[Parsed], want: list[Parsed], tol: Tolerance) -> tuple[bool, str]:
    if len(got) != len(want):
        return False, f"expected {len(want)} elements, got {len(got)}"
    remaining = list(want)
    for item in got:
        for index, candidate in enumerate(remaining):
            if equal_pieces(item, candidate, tol)[0]:
                del remaining[index]
                break
        else:
            return False, "elements differ"
    return True, "unordered"


def _describe(kind: str) -> str:
    return {
        "expr": "a single value",
        "eq": "an equation",
        "tuple": "a tuple",
        "set": "a set",
        "list": "a list",
        "interval": "an interval",
        "union": "a union of intervals",
    }.get(kind, kind)


def show(parsed: Parsed) -> str:
    """A short text form of a parsed answer for feedback and details."""
    kind, value = parsed
    if kind == "expr":
        text = str(sympy.sstr(value))
        return text if len(text) <= 200 else text[:197] + "..."
    if kind == "interval":
        lo, hi, closed = value
        return f"{'[' if closed[0] else '('}{show(lo)}, {show(hi)}{']' if closed[1] else ')'}"
    if kind == "eq":
        return f"{show(value[0])} = {show(value[1])}"
    inner = ", ".join(show(v) for v in value)
    return {"set": "{%s}", "tuple": "(%s)"}.get(kind, "%s") % inner
