"""Whitelisted ``ast`` walk into sympy, and equivalence of parsed answers.

Only these node types are accepted: ``Expression``, ``BinOp`` (``+ - * / **``), ``UnaryOp``
(``+ -``), integer ``Constant``, ``Name`` and ``Call`` of a name in
:data:`~verifiers.answers._latex.FUNCTIONS` with positional arguments. Anything else (an
attribute, a subscript, a string, a keyword argument, a lambda) is rejected before sympy sees
it. Powers are bounded so that ``9**9**9`` is refused instead of computed.
"""

from __future__ import annotations

import ast
import functools
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy

from ._latex import (
    FUNCTIONS,
    MIN_ARGS,
    MathParseError,
    Piece,
    latex_to_plain,
    split_structure,
    to_python,
)
from ._mathboxes import boxed_group
from ._matheval import Unsupported, evaluate

__all__ = ["MAX_NODES", "Expr", "Parsed", "Tolerance", "equal_pieces", "parse_answer", "show"]

MAX_NODES = 400
"""Most AST nodes in one expression."""
MAX_EXPONENT = 10_000
"""Largest integer exponent of a number; huge powers are how answers exhaust memory."""
MAX_SYMBOLIC_EXPONENT = 200
"""Largest integer exponent of an expression with symbols (expansion cost grows with it)."""
MAX_POWER_DIGITS = 5_000
"""Largest estimated number of digits of an integer power."""
MAX_FACTORIAL = 1_000
MAX_BIG_OPERATOR_TERMS = 1_000
"""Most terms of a ``\\sum``/``\\prod`` with numeric limits that is evaluated term by term."""
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
    if name in ("matrix", "mrow"):
        raise MathParseError(f"{name} is built by the parser")
    return table[name]


_CONSTANTS: dict[str, Any] = {
    "pi": sympy.pi,
    "oo": sympy.oo,
    "infty": sympy.oo,
    "inf": sympy.oo,
    "e": sympy.E,
    "i": sympy.I,
    "infinity": sympy.oo,
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
            name = node.func.id
            if len(node.args) < MIN_ARGS.get(name, 1):
                raise MathParseError(f"{name} needs {MIN_ARGS[name]} arguments")
            args = [self.build(arg) for arg in node.args]
            if name == "mrow":
                if any(isinstance(arg, _Row) or _is_matrix(arg) for arg in args):
                    raise MathParseError("a matrix cell must be a value")
                return _Row(args)
            if name == "matrix":
                if not all(isinstance(arg, _Row) for arg in args):
                    raise MathParseError("matrix rows expected")
                if len({len(row) for row in args}) != 1:
                    raise MathParseError("matrix rows differ in length")
                return sympy.ImmutableMatrix([list(row) for row in args])
            if any(isinstance(arg, _Row) for arg in args):
                raise MathParseError("a matrix row outside a matrix")
            if name == "det":
                if not _is_matrix(args[0]) or args[0].shape[0] != args[0].shape[1]:
                    raise MathParseError("a determinant needs a square matrix")
                return args[0].det()
            if name in ("summation", "product", "integral", "limit"):
                return _big_operator(name, args)
            if name in ("factorial", "binomial"):
                for arg in args:
                    if _is_matrix(arg):
                        raise MathParseError(f"{name} of a matrix")
                    if arg.is_number and (not arg.is_Integer or abs(int(arg)) > MAX_FACTORIAL):
                        raise MathParseError(
                            f"{name} argument must be an integer <= {MAX_FACTORIAL}"
                        )
            return _fn(name)(*args)
        raise MathParseError(f"unsupported syntax: {type(node).__name__}")


_BOUND = "bound_index_"
"""Prefix of the canonical names of summation indices (letters only: never a model's name,
which the tokenizer splits into single letters)."""


def _big_operator(name: str, args: list[Any]) -> Any:
    """``\\sum``/``\\prod``/``\\int`` over ``idx`` from ``lo`` to ``hi``; ``\\lim`` of the body as
    ``idx`` tends to ``lo`` (``hi`` is the side: 0 both, 1 from above, -1 from below).

    A sum or product is evaluated when its body is a polynomial in the index (closed forms:
    ``\\sum_{k=1}^{n} k``) or its limits are integers at most :data:`MAX_BIG_OPERATOR_TERMS`
    apart; otherwise it stays unevaluated and compares by structure. A definite integral is
    evaluated by sympy (in the worker, under the spec's ``timeout_s``)."""
    body, var, lo, hi = args
    if not isinstance(var, sympy.Symbol) or any(_is_matrix(a) for a in args):
        raise MathParseError(f"bad {name} limits")
    # The index is a bound name: \\sum_{k} and \\sum_{j} of the same terms are one sum. It is
    # renamed by nesting level (an inner sum, built first, holds the lower levels).
    level = 1 + max(
        (int(s.name[len(_BOUND) :]) for s in body.free_symbols if s.name.startswith(_BOUND)),
        default=-1,
    )
    index = sympy.Symbol(f"{_BOUND}{level}")
    body = body.subs(var, index)
    variable_powers = [
        p for p in body.atoms(sympy.Pow) if p.exp.free_symbols and p.base.free_symbols
    ]
    too_complex = sympy.count_ops(body) > MAX_INTEGRAND_OPS or bool(variable_powers)
    if name == "limit":
        # sympy's limit has no time bound either: small bodies only, in the worker; one
        # variable exponent is allowed ((1 + 1/n)^n), a tower of them (x^{x^x}) is not.
        if sympy.count_ops(body) > MAX_INTEGRAND_OPS or len(variable_powers) > 1:
            raise MathParseError("limit too complex to evaluate; give its value")
        direction = {0: "+-", 1: "+", -1: "-"}.get(int(hi), "+-")
        value = sympy.limit(body, index, lo, dir=direction)
        if isinstance(value, sympy.Limit) or value.has(sympy.AccumBounds):
            raise MathParseError("a limit sympy cannot evaluate")
        return value
    if name == "integral":
        # sympy's integrator has no time bound (the worker's timeout is the backstop): only
        # small integrands without a variable exponent (x^x) are integrated.
        if too_complex:
            raise MathParseError("integral too complex to evaluate; give its value")
        return sympy.Integral(body, (index, lo, hi)).doit()
    cls = sympy.Sum if name == "summation" else sympy.Product
    value = cls(body, (index, lo, hi))
    if name == "summation" and body.is_polynomial(index) and sympy.degree(body, index) <= 6:
        return sympy.expand(value.doit())
    if lo.is_number and hi.is_number:
        if not (lo.is_Integer and hi.is_Integer):
            raise MathParseError(f"{name} limits must be integers")
        if int(hi) - int(lo) <= MAX_BIG_OPERATOR_TERMS:
            return _fold(name, body, index, int(lo), int(hi))
    return value


MAX_INTEGRAND_OPS = 30
"""Largest integrand (sympy operation count) a definite integral is evaluated for."""
MAX_FOLD_BITS = 20_000
"""Largest exact number (in bits) a sum or product of numeric terms may grow to
(``\\prod_{k=1}^{1000} k^{1000}`` would have millions of digits)."""


def _fold(name: str, body: Any, index: Any, lo: int, hi: int) -> Any:
    """Term by term, with the size of the running value bounded at every step."""
    total: Any = sympy.Integer(0 if name == "summation" else 1)
    for k in range(lo, hi + 1):
        term = body.subs(index, k)
        total = total + term if name == "summation" else total * term
        if total.is_Rational and max(abs(total.p), abs(total.q)).bit_length() > MAX_FOLD_BITS:
            raise MathParseError(f"{name} too large to evaluate")
        if sympy.count_ops(total) > MAX_NODES:
            raise MathParseError(f"{name} too large to evaluate")
    return total


class _Row(list[Any]):
    """One ``mrow(...)`` of a matrix while it is being built."""


def _is_matrix(value: Any) -> bool:
    return isinstance(value, sympy.MatrixBase)


MAX_MATRIX_POWER = 20
"""Largest integer power of a matrix."""


def _power(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` after checking the result stays small."""
    if _is_matrix(exponent):
        raise MathParseError("a matrix exponent")
    if _is_matrix(base):
        if not exponent.is_Integer or abs(int(exponent)) > MAX_MATRIX_POWER:
            raise MathParseError(f"a matrix power must be an integer <= {MAX_MATRIX_POWER}")
        return base**exponent
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


_SYMPY_REFUSALS: tuple[type[BaseException], ...] = (
    TypeError,
    ValueError,
    ArithmeticError,
    AttributeError,
    NotImplementedError,
    IndexError,
    KeyError,
    RecursionError,
)
"""What sympy raises on well-formed but meaningless input (a matrix plus a number,
``binomial(7)``, a shape mismatch): the answer's fault, never an error of the verifier."""


def _expression(text: str) -> Any:
    source = to_python(text)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise MathParseError(f"not an expression ({type(exc).__name__})") from None
    try:
        value = _Builder().build(tree)
    except MathParseError:
        raise
    except _SYMPY_REFUSALS as exc:
        raise MathParseError(f"not a valid expression ({type(exc).__name__})") from None
    if isinstance(value, _Row):
        raise MathParseError("a matrix row outside a matrix")
    return value


@dataclass(frozen=True)
class Expr:
    """A parsed value and how it was written."""

    value: Any
    """The sympy expression (or ``ImmutableMatrix``)."""
    approx: bool = False
    """Written as a decimal (``0.333333``): an approximation of an exact value."""
    percent: bool = False
    """Written with a percent sign."""
    base: int = 0
    """A base-n numeral (``204_5``); 0 for ordinary numbers."""


_DECIMAL = re.compile(r"\d\.\d|(?<!\d)\.\d")


def _piece(piece: Piece) -> Parsed:
    if piece.kind == "expr":
        if piece.base:
            return ("expr", Expr(sympy.Integer(int(piece.text)), base=piece.base))
        value = _expression(piece.text)
        return (
            "expr",
            Expr(value, approx=bool(_DECIMAL.search(piece.text)), percent=piece.percent),
        )
    if piece.kind == "empty":
        return ("set", [])
    if piece.kind == "text":
        return ("text", piece.text)
    items = [_piece(p) for p in piece.items]
    if piece.kind == "builder":
        (condition,) = items
        if condition[0] != "rel":
            return condition  # "{x | x ∈ [1, 2]}": the set named after the bar
        as_set = _relation_set(condition[1])
        if as_set is None:
            raise MathParseError("a set-builder condition this parser cannot solve")
        return as_set
    if piece.kind == "interval":
        return ("interval", (items[0], items[1], piece.closed))
    if piece.kind == "eq":
        return ("eq", (items[0], items[1]))
    if piece.kind == "rel":
        if any(kind != "expr" or _is_matrix(v.value) for kind, v in items):
            raise MathParseError("an inequality compares values")
        return ("rel", ([v.value for _, v in items], piece.ops))
    return (piece.kind, items)


def parse_answer(text: str, *, units: bool = True, boxes: bool = True) -> Parsed:
    """A math answer as ``(kind, value)``.

    ``kind`` is ``expr`` (value: :class:`Expr`), ``eq`` (lhs, rhs), ``rel`` (sides, ops),
    ``tuple``/``set``/``list``/``system``/``union`` (items), ``interval`` (lo, hi, closed) or
    ``text`` (normalised words). Text holding ``\boxed{}`` is read from its final group of
    boxes (see :mod:`verifiers.answers._mathboxes`) when ``boxes`` is on.

    Raises:
        MathParseError: outside the grammar or a bound.
    """
    if boxes and ("\\boxed" in text or "\\fbox" in text):
        group = boxed_group(text)
        if group:
            text = group
    return _piece(split_structure(latex_to_plain(text), units=units))


# -- equivalence --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    """How close two numbers must be, relative to the reference's magnitude.

    ``rel`` applies to exact values; ``decimal_rel`` and ``decimal_places`` to a decimal
    compared with an exact value (``0.333333`` for ``1/3``: both must hold, so a decimal
    rounds like the value to ``decimal_places`` places *and* agrees to ``decimal_rel``
    relative precision, and ``0`` never matches ``9.1e-31``). ``abs`` is an absolute floor,
    0 by default."""

    rel: float = 1e-9
    abs: float = 0.0
    decimal_rel: float = 1e-6
    decimal_places: int = 6
    percent: bool = True
    """A reference ``28%`` also accepts ``0.28`` (a candidate written with ``%`` must give
    the percent value itself)."""
    named: bool = True
    """``x = 5`` answers ``5``; ``(p, q) = (3, 2)`` answers ``(3, 2)``."""
    relation_for_set: bool = False
    """An inequality answers a set or interval reference (``x > 2`` for ``(2, oo)``); off by
    default, as in Math-Verify: a task whose reference is in interval notation asks for it.
    The other way (an interval for an inequality reference) always compares."""
    sets_tuples: bool = True
    """A set and a tuple with the same elements match (Math-Verify's default)."""

    def close(self, got: complex, want: complex) -> bool:
        return abs(got - want) <= max(self.abs, self.rel * abs(want))

    def close_decimal(self, got: complex, want: complex) -> bool:
        gap = abs(got - want)
        if gap <= self.abs:
            return True
        places = self.decimal_places
        same_rounding = round(got.real, places) == round(want.real, places) and round(
            got.imag, places
        ) == round(want.imag, places)
        return same_rounding and gap <= self.decimal_rel * abs(want)


def _number(expr: Any, point: dict[Any, complex] | None = None) -> complex | None:
    """``expr`` (at ``point``) as a complex number, or None where it cannot be evaluated."""
    try:
        return evaluate(expr, point or {})
    except Unsupported:
        return None


_INFINITE = (sympy.oo, -sympy.oo, sympy.zoo)
SAMPLE_POINTS = 16
"""Points tried per comparison of expressions with symbols; 6 that agree decide."""


def _points(symbols: list[Any]) -> list[dict[Any, complex]]:
    """Seeded test points across signs and magnitudes (0.1 to 20 on both sides of 0), so
    ``\\sqrt{x^2}`` is not ``x`` and ``\\ln x`` is not ``\\ln|x|``; reproducible, so verdicts
    can be cached."""
    rng = random.Random(0x5EED)
    out = []
    for index in range(SAMPLE_POINTS):
        point = {}
        for number, s in enumerate(symbols):
            magnitude = 10 ** rng.uniform(-1.0, 1.3)
            negative = (index + number) % 2 == 1 if index < 4 else rng.random() < 0.5
            point[s] = complex(-magnitude if negative else magnitude)
        out.append(point)
    return out


def equal_exprs(a: Any, b: Any, tol: Tolerance, decimal: bool = False) -> tuple[bool, str]:
    """Whether ``a`` (the answer) equals ``b`` (the reference), and how that was decided.

    A point where the reference is not a finite real number (outside its domain: ``\\ln x``
    at ``x < 0``) is skipped, unless the reference is complex-valued by itself; a point where
    the reference is real and the answer is not counts against the answer.
    """
    if a == b:
        return True, "structural"
    if _is_matrix(a) or _is_matrix(b):
        if not (_is_matrix(a) and _is_matrix(b)) or a.shape != b.shape:
            return False, "matrix shapes differ"
        for x, y in zip(a, b, strict=True):
            if not equal_exprs(x, y, tol, decimal)[0]:
                return False, "matrix entries differ"
        return True, "matrix"
    if a.has(sympy.Sum, sympy.Product, sympy.Integral) or b.has(
        sympy.Sum, sympy.Product, sympy.Integral
    ):
        # An unevaluated sum (symbolic limits, opaque terms such as F_{n-k-1}): sampling
        # cannot substitute into its limits, so only the same sum written alike is equal.
        return bool(sympy.expand(a - b) == 0), "structural"
    if a.has(*_INFINITE) or b.has(*_INFINITE):
        # Only a plain infinity equals an infinity; simplify() on oo - f(x) can run forever.
        return (a in _INFINITE and a == b), "structural"
    close = tol.close_decimal if decimal else tol.close
    symbols = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)
    if not symbols:
        if a.is_Rational and b.is_Rational and not decimal:
            return False, "exact"
        va, vb = _number(a), _number(b)
        if va is not None and vb is not None:
            if close(va, vb):
                return True, "numeric"
            if abs(va - vb) > 1e-12 * max(1.0, abs(vb)):
                return False, "numeric"
            # Within float noise of each other: only a proof decides.
        return _small_simplify_is_zero(a - b), "symbolic"
    complex_ref = b.has(sympy.I)
    checked = 0
    for point in _points(symbols):
        vb = _number(b, point)
        if vb is None or (not complex_ref and abs(vb.imag) > 1e-12 * max(1.0, abs(vb))):
            continue  # outside the reference's domain
        va = _number(a, point)
        if va is None:
            return False, "numeric"  # the reference is defined here and the answer is not
        if va == vb or abs(va - vb) <= tol.rel * max(abs(va), abs(vb)):
            checked += 1
        elif (vb == 0 and abs(va) < 1e-12) or (va == 0 and abs(vb) < 1e-12):
            continue  # a zero against float noise: this point cannot tell
        else:
            return False, "numeric"
        if checked >= 6:
            return _confirm(a - b)
    if checked >= 3:
        return _confirm(a - b)
    # Too few points inside the reference's domain: only a proof decides.
    if _cheap_zero(a - b):
        return True, "symbolic"
    return _small_simplify_is_zero(a - b), "symbolic"


MAX_SIMPLIFY_OPS = 40
"""``sympy.simplify`` runs only on differences this small (it has no time bound of its own;
the worker's timeout is the backstop)."""


def _confirm(diff: Any) -> tuple[bool, str]:
    """After the test points agree: where a cheap exact check exists (polynomials and
    rational functions), it has the last word, so an answer built to vanish at the seeded
    points (``x + (x - p_1)...(x - p_6)``) still differs."""
    if not _rational_function(diff):
        return True, "numeric"
    if bool(sympy.cancel(diff) == 0):
        return True, "symbolic"
    return False, "symbolic"


def _rational_function(diff: Any) -> bool:
    if sympy.count_ops(diff) > 4 * MAX_SIMPLIFY_OPS or diff.atoms(sympy.Function):
        return False
    return all(p.exp.is_Integer for p in diff.atoms(sympy.Pow)) and not diff.has(sympy.E)


def _cheap_zero(diff: Any) -> bool:
    """A symbolic proof that ``diff`` is 0 when a cheap one exists (polynomials and rational
    functions of modest size); False means "not proven", never "different"."""
    if sympy.count_ops(diff) > 4 * MAX_SIMPLIFY_OPS or diff.atoms(sympy.Function):
        return False
    if any(p.is_Pow and not p.exp.is_Integer for p in diff.atoms(sympy.Pow)):
        return False
    return bool(sympy.cancel(diff) == 0)


def _small_simplify_is_zero(diff: Any) -> bool:
    """Last resort when no test point evaluates (overflow, poles): simplify, but only small
    algebraic differences; with transcendental functions inside, simplify() can run for
    minutes (``sin(pi*(100 - x)*(log(110) + I*pi))`` does), so those count as different."""
    if sympy.count_ops(diff) > MAX_SIMPLIFY_OPS:
        return False
    if diff.atoms(sympy.Function) and diff.free_symbols:
        return False  # a numeric difference of small size simplifies in bounded time
    return bool(sympy.simplify(diff) == 0)


def _is_name(value: Any) -> bool:
    """An expression made only of symbols (``x``, ``AB``, ``f(x)``, ``|AB|``, ``NO/BO``):
    the left side of ``name = value`` names the answer rather than stating an equation."""
    if _is_matrix(value) or not value.free_symbols:
        return False
    return all(n in (1, -1) for n in value.atoms(sympy.Number))


def _lhs_is_name(parsed: Parsed) -> bool:
    kind, value = parsed
    if kind == "expr":
        return _is_name(value.value)
    if kind == "tuple":
        return all(k == "expr" and _is_name(v.value) for k, v in value)
    return False


def _eq_value(parsed: Parsed, tol: Tolerance) -> Parsed | None:
    """For ``name = <value>`` (or a true computation ``2 + 3 = 5``): the value."""
    lhs, rhs = parsed[1]
    if tol.named and _lhs_is_name(lhs):
        return rhs  # type: ignore[no-any-return]
    if lhs[0] == rhs[0] == "expr" and not lhs[1].value.free_symbols:
        if equal_exprs(lhs[1].value, rhs[1].value, tol)[0]:
            return rhs  # type: ignore[no-any-return]
    return None


def _values(parsed: Parsed) -> list[Expr]:
    return [parsed[1]]


def _equal_values(got: Expr, want: Expr, tol: Tolerance) -> tuple[bool, str]:
    """Two written values: base-n numerals, percent signs and decimals as documented."""
    g, w = got.value, want.value
    if want.base and not got.base:
        # A bare numeral answering a base-n reference is read in that base ("204" for 204_5).
        if not (g.is_Integer and g >= 0):
            return False, f"expected a base-{want.base} numeral"
        try:
            g = sympy.Integer(int(str(g), want.base))
        except ValueError:
            return False, f"not a base-{want.base} numeral"
    readings = [w]
    if want.percent and not got.percent and tol.percent:
        readings.append(w / 100)  # 28% is also 0.28
    if got.percent and not want.percent:
        # "28%" is 0.28; it also answers a reference written as the percent number (28),
        # but only one of at least 1: "0.28%" is not 0.28.
        g = g / 100
        if tol.percent and abs(_number(w) or 0) >= 1:
            readings.append(w / 100)
    decimal = got.approx != want.approx and not (w.is_Integer and got.approx)
    for reading in readings:
        ok, method = equal_exprs(g, reading, tol, decimal=decimal)
        if ok:
            return True, method
    return False, "not equal"


def _rel_pairs(value: tuple[list[Any], tuple[str, ...]]) -> list[tuple[Any, str]]:
    """A relation chain as ``(d, op)`` pairs meaning ``d op 0``, op in ``< ≤ ≠``."""
    sides, ops = value
    out = []
    for left, op, right in zip(sides, ops, sides[1:], strict=False):
        if op in "<≤≠":
            out.append((left - right, op))
        else:
            out.append((right - left, "<" if op == ">" else "≤"))
    return out


def _proportional(a: Any, b: Any, positive: bool) -> bool:
    """``a = c * b`` for a constant ``c`` (``c > 0`` when ``positive``): the same equation or
    inequality written at another scale or rearranged."""
    if _is_matrix(a) or _is_matrix(b):
        return False
    if a == b:
        return True
    symbols = sorted(a.free_symbols | b.free_symbols, key=lambda s: s.name)
    if not symbols:
        return False
    ratio: complex | None = None
    checked = 0
    for point in _points(symbols):
        va, vb = _number(a, point), _number(b, point)
        if va is None or vb is None or abs(vb) < 1e-12:
            continue
        r = va / vb
        if ratio is None:
            if abs(r) < 1e-12 or abs(r.imag) > 1e-9 * abs(r):
                return False
            if positive and r.real <= 0:
                return False
            ratio = r
        elif abs(r - ratio) > 1e-9 * abs(ratio):
            return False
        checked += 1
        if checked >= 6:
            return True
    return checked >= 3


def _relation_set(value: tuple[list[Any], tuple[str, ...]]) -> Parsed | None:
    """A one-unknown relation as the set of its solutions (``x > 2`` -> ``(2, oo)``)."""
    return _relation_set_cached(tuple(value[0]), tuple(value[1]))


@functools.lru_cache(maxsize=1024)
def _relation_set_cached(sides_in: tuple[Any, ...], ops: tuple[str, ...]) -> Parsed | None:
    """Cached per worker: sympy's inequality solver costs tenths of a second on ``|z|`` or
    a quadratic, and a GRPO group repeats its reference many times."""
    sides = list(sides_in)
    symbols = set().union(*(side.free_symbols for side in sides))
    if not symbols:
        return None
    if len(symbols) > 1:
        # "0 < f(x) < 1": one named side holds every symbol; it is the unknown.
        named = [side for side in sides if side.free_symbols]
        if len(named) != 1 or not _is_name(named[0]):
            return None
        t = sympy.Symbol("_t", real=True)
        sides = [t if side is named[0] else side for side in sides]
        symbol = t
    else:
        (plain,) = symbols
        symbol = sympy.Symbol(plain.name, real=True)
        sides = [side.subs(plain, symbol) for side in sides]
    linear = _linear_set(sides, ops, symbol)
    if linear is not None:
        return linear
    if not all(_solvable(side) for side in sides):
        return None  # sympy's solver on x^200 > sin(x) runs for half a minute
    build = {"<": sympy.Lt, ">": sympy.Gt, "≤": sympy.Le, "≥": sympy.Ge, "≠": sympy.Ne}
    relations = [
        build[op](left, right) for left, op, right in zip(sides, ops, sides[1:], strict=False)
    ]
    condition = relations[0] if len(relations) == 1 else sympy.And(*relations)
    solved = condition.as_set()
    return _from_sympy_set(solved)


MAX_SOLVE_DEGREE = 4
"""Highest power in an inequality handed to sympy's solver (polynomials and ``|...|``)."""


def _solvable(side: Any) -> bool:
    if sympy.count_ops(side) > 30:
        return False
    if any(not isinstance(f, sympy.Abs) for f in side.atoms(sympy.Function)):
        return False
    return all(
        p.exp.is_Integer and abs(int(p.exp)) <= MAX_SOLVE_DEGREE for p in side.atoms(sympy.Pow)
    )


def _linear_set(sides: list[Any], ops: tuple[str, ...], symbol: Any) -> Parsed | None:
    """The solution set of a chain of *linear* relations in ``symbol``, without sympy's
    general inequality solver (which costs tenths of a second per call)."""
    lo, hi = -sympy.oo, sympy.oo
    lo_closed = hi_closed = False
    excluded: list[Any] = []
    for diff, op in _rel_pairs((sides, ops)):
        poly = diff.as_poly(symbol) if diff.free_symbols == {symbol} else None
        if poly is None or poly.degree() != 1:
            return None
        a, b = poly.all_coeffs()
        if not (a.is_number and b.is_number and a.is_real and a != 0):
            return None
        root = -b / a
        if op == "≠":
            excluded.append(root)
            continue
        closed = op == "≤"
        if a > 0:  # x < root
            if root < hi or (root == hi and not closed):
                hi, hi_closed = root, closed
        elif root > lo or (root == lo and not closed):
            lo, lo_closed = root, closed
    if excluded:
        if lo != -sympy.oo or hi != sympy.oo or len(excluded) != 1:
            return None
        return _from_sympy_set(sympy.S.Reals - sympy.FiniteSet(excluded[0]))
    if lo > hi or (lo == hi and not (lo_closed and hi_closed)):
        return ("set", [])
    if lo == hi:
        return ("set", [("expr", Expr(lo))])
    return (
        "interval",
        (("expr", Expr(lo)), ("expr", Expr(hi)), (lo_closed, hi_closed)),
    )


def _from_sympy_set(value: Any) -> Parsed | None:
    if value == sympy.S.Reals:
        return ("interval", (("expr", Expr(-sympy.oo)), ("expr", Expr(sympy.oo)), (False, False)))
    if isinstance(value, sympy.Interval):
        return (
            "interval",
            (
                ("expr", Expr(value.start)),
                ("expr", Expr(value.end)),
                (not value.left_open, not value.right_open),
            ),
        )
    if isinstance(value, sympy.FiniteSet):
        return ("set", [("expr", Expr(v)) for v in value.args])
    if value == sympy.S.EmptySet:
        return ("set", [])
    if isinstance(value, sympy.Union):
        members = [_from_sympy_set(arg) for arg in value.args]
        if any(m is None for m in members):
            return None
        return ("union", members)
    return None


_SETS = ("interval", "union", "set")


def equal_pieces(got: Parsed, want: Parsed, tol: Tolerance) -> tuple[bool, str]:
    """Whether a parsed answer equals a parsed reference, and a reason when it does not."""
    got_kind, got_value = got
    want_kind, want_value = want
    if got_kind in ("list", "system") and len(got_value) == 1:
        return equal_pieces(got_value[0], want, tol)
    if want_kind in ("list", "system") and len(want_value) == 1:
        return equal_pieces(got, want_value[0], tol)
    if got_kind == "eq" and want_kind != "eq":
        value = _eq_value(got, tol)
        if value is None:
            return False, "expected a value, got an equation"
        return equal_pieces(value, want, tol)
    if want_kind == "eq" and got_kind != "eq":
        lhs, rhs = want_value
        if not (tol.named and _lhs_is_name(lhs)):
            return False, "expected an equation"
        return equal_pieces(got, rhs, tol)
    if got_kind == "rel" and want_kind == "tuple" and len(want_value) == 2:
        want_kind, want_value = "interval", (want_value[0], want_value[1], (False, False))
    if want_kind == "rel" and got_kind == "tuple" and len(got_value) == 2:
        got_kind, got_value = "interval", (got_value[0], got_value[1], (False, False))
    if got_kind == "rel" and want_kind in _SETS:
        if not tol.relation_for_set:
            return False, f"expected {_describe(want_kind)} (interval notation), got an inequality"
        as_set = _relation_set(got_value)
        if as_set is None:
            return False, "expected a set of values, got an inequality"
        return equal_pieces(as_set, want, tol)
    if want_kind == "rel" and got_kind in _SETS:
        as_set = _relation_set(want_value)
        if as_set is None:
            return False, "expected an inequality"
        return equal_pieces(got, as_set, tol)
    if {got_kind, want_kind} == {"tuple", "interval"}:
        # "(1, 3)" is both a pair and an open interval: read it as the interval here.
        if got_kind == "tuple" and len(got_value) == 2:
            got_kind, got_value = "interval", (got_value[0], got_value[1], (False, False))
        if want_kind == "tuple" and len(want_value) == 2:
            want_kind, want_value = "interval", (want_value[0], want_value[1], (False, False))
    if {got_kind, want_kind} == {"system", "tuple"}:
        # "x = 1, y = 2" against "(1, 2)": the values in order.
        system, other = (got_value, want_value) if got_kind == "system" else (want_value, got_value)
        if len(system) != len(other):
            return False, f"expected {len(want_value)} components, got {len(got_value)}"
        pairs = [(eq[1][1], o) for eq, o in zip(system, other, strict=True)]
        for sys_value, o in pairs:
            g, w = (sys_value, o) if got_kind == "system" else (o, sys_value)
            if not equal_pieces(g, w, tol)[0]:
                return False, "components differ"
        return True, "tuple"
    unordered = {"set", "list", "union", "system"}
    if tol.sets_tuples and {got_kind, want_kind} == {"tuple", "set"}:
        # Math-Verify's reading: the set's elements as written, against the tuple in order.
        got_kind = want_kind = "tuple"
    if got_kind in unordered and want_kind in unordered:
        return _match_unordered(got_value, want_value, tol)
    if {got_kind, want_kind} == {"union", "interval"}:
        return False, "expected " + _describe(want_kind)
    if got_kind == "text" or want_kind == "text":
        return _equal_text(got, want)
    if got_kind != want_kind:
        return False, f"expected {_describe(want_kind)}, got {_describe(got_kind)}"
    if got_kind == "expr":
        ok, method = _equal_values(got_value, want_value, tol)
        return ok, method if ok else "not equal"
    if got_kind == "eq":
        (gl, gr), (wl, wr) = got_value, want_value
        if tol.named and _lhs_is_name(gl) and _lhs_is_name(wl):
            if equal_pieces(gl, wl, tol)[0]:
                return equal_pieces(gr, wr, tol)
            if not (gl[0] == wl[0] == "expr"):
                return False, "the equations name different unknowns"
        if gl[0] == gr[0] == wl[0] == wr[0] == "expr":
            diff_got = gl[1].value - gr[1].value
            diff_want = wl[1].value - wr[1].value
            if _proportional(diff_got, diff_want, positive=False):
                return True, "equation"
        return False, "equations differ"
    if got_kind == "rel":
        got_pairs, want_pairs = _rel_pairs(got_value), _rel_pairs(want_value)
        if len(got_pairs) == len(want_pairs):
            for order in (want_pairs, list(reversed(want_pairs))):
                if all(
                    g_op == w_op and _proportional(g, w, positive=g_op != "≠")
                    for (g, g_op), (w, w_op) in zip(got_pairs, order, strict=True)
                ):
                    return True, "inequality"
        same_unknowns = set().union(*(v.free_symbols for v in got_value[0])) == set().union(
            *(v.free_symbols for v in want_value[0])
        )
        got_set = _relation_set(got_value) if same_unknowns else None
        want_set = _relation_set(want_value) if same_unknowns else None
        if got_set is not None and want_set is not None:
            ok, _ = equal_pieces(got_set, want_set, tol)
            if ok:
                return True, "inequality"
        return False, "inequalities differ"
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


def _equal_text(got: Parsed, want: Parsed) -> tuple[bool, str]:
    """Text answers compare as normalised words; a one-letter choice also as a symbol."""

    def words(parsed: Parsed) -> str | None:
        kind, value = parsed
        if kind == "text":
            return str(value)
        if kind == "expr" and isinstance(value.value, sympy.Symbol):
            return str(value.value.name).lower()
        return None

    g, w = words(got), words(want)
    if g is None or w is None:
        return False, f"expected {_describe(want[0])}, got {_describe(got[0])}"
    return (g == w), "text" if g == w else "different text"


def _distinct(items: list[Parsed]) -> list[Parsed]:
    """Elements written twice count once (a set, or solutions listed with a repeat)."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = show(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _match_unordered(got: list[Parsed], want: list[Parsed], tol: Tolerance) -> tuple[bool, str]:
    got, want = _distinct(got), _distinct(want)
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
        "rel": "an inequality",
        "tuple": "a tuple",
        "set": "a set",
        "list": "a list",
        "system": "several equations",
        "interval": "an interval",
        "union": "a union of intervals",
        "text": "a text answer",
    }.get(kind, kind)


def show(parsed: Parsed) -> str:
    """A short text form of a parsed answer for feedback and details."""
    kind, value = parsed
    if kind == "expr":
        text = str(sympy.sstr(value.value))
        if value.percent:
            text += "%"
        return text if len(text) <= 200 else text[:197] + "..."
    if kind == "text":
        return str(value)[:200]
    if kind == "interval":
        lo, hi, closed = value
        return f"{'[' if closed[0] else '('}{show(lo)}, {show(hi)}{']' if closed[1] else ')'}"
    if kind == "eq":
        return f"{show(value[0])} = {show(value[1])}"
    if kind == "rel":
        sides, ops = value
        out = str(sympy.sstr(sides[0]))
        for op, side in zip(ops, sides[1:], strict=False):
            out += f" {op} {sympy.sstr(side)}"
        return out[:200]
    inner = ", ".join(show(v) for v in value)
    return {"set": "{%s}", "tuple": "(%s)"}.get(kind, "%s") % inner
