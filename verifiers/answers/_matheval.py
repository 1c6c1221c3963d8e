"""Bounded-time numeric evaluation of the sympy trees the math parser builds.

``sympy.N`` / ``evalf`` pick their working precision from the size of the numbers involved:
``exp(factorial(exp(exp(exp(y)))))`` at ``y = 2`` asks mpmath for billions of bits and never
returns. Evaluating node by node with Python complex floats instead costs O(nodes); anything
that overflows a double is "cannot evaluate here" (the point is skipped), never a hang.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from typing import Any

import sympy

__all__ = ["Unsupported", "evaluate"]


class Unsupported(Exception):
    """The tree holds a node this evaluator does not know, or a value it cannot compute."""


def _gamma(z: complex) -> complex:
    if z.imag != 0:
        raise Unsupported("complex gamma")
    return complex(math.gamma(z.real))


def _real(fn: Callable[[float], float]) -> Callable[[complex], complex]:
    def call(z: complex) -> complex:
        if z.imag != 0:
            raise Unsupported("real-only function")
        return complex(fn(z.real))

    return call


_FUNCS: dict[type[Any], Callable[[complex], complex]] = {
    sympy.sin: cmath.sin,
    sympy.cos: cmath.cos,
    sympy.tan: cmath.tan,
    sympy.cot: lambda z: 1 / cmath.tan(z),
    sympy.sec: lambda z: 1 / cmath.cos(z),
    sympy.csc: lambda z: 1 / cmath.sin(z),
    sympy.asin: cmath.asin,
    sympy.acos: cmath.acos,
    sympy.atan: cmath.atan,
    sympy.sinh: cmath.sinh,
    sympy.cosh: cmath.cosh,
    sympy.tanh: cmath.tanh,
    sympy.exp: cmath.exp,
    sympy.log: cmath.log,
    sympy.Abs: lambda z: complex(abs(z)),
    sympy.factorial: lambda z: _gamma(z + 1),
    sympy.floor: _real(lambda x: float(math.floor(x))),
    sympy.ceiling: _real(lambda x: float(math.ceil(x))),
}


def _finite(value: complex) -> complex:
    if not (math.isfinite(value.real) and math.isfinite(value.imag)):
        raise Unsupported("not finite")
    return value


def evaluate(expr: Any, point: dict[Any, complex]) -> complex:
    """``expr`` at ``point`` (symbol -> value) in double-precision complex arithmetic.

    Raises:
        Unsupported: an unknown node, an overflow, a pole, a non-finite intermediate.
    """
    try:
        return _finite(_eval(expr, point))
    except (OverflowError, ZeroDivisionError, ValueError, RecursionError) as exc:
        raise Unsupported(type(exc).__name__) from None


def _eval(expr: Any, point: dict[Any, complex]) -> complex:
    if expr.is_Symbol:
        if expr not in point:
            raise Unsupported(f"no value for {expr}")
        return point[expr]
    if expr.is_Integer or expr.is_Rational:
        return complex(int(expr.p) / int(expr.q))
    if expr.is_Float:
        return complex(float(expr))
    if expr is sympy.pi:
        return complex(math.pi)
    if expr is sympy.E:
        return complex(math.e)
    if expr is sympy.I:
        return 1j
    if expr.is_Add:
        total = 0j
        for arg in expr.args:
            total += _eval(arg, point)
        return _finite(total)
    if expr.is_Mul:
        product = 1 + 0j
        for arg in expr.args:
            product *= _eval(arg, point)
        return _finite(product)
    if expr.is_Pow:
        base = _eval(expr.args[0], point)
        exponent = _eval(expr.args[1], point)
        if base == 0 and exponent.real <= 0:
            raise Unsupported("0 to a non-positive power")
        if exponent.imag == 0 and exponent.real.is_integer() and abs(exponent.real) <= 64:
            return _finite(base ** int(exponent.real))
        return _finite(base**exponent)
    if isinstance(expr, sympy.binomial):
        n, k = (_eval(a, point) for a in expr.args)
        return _finite(_gamma(n + 1) / (_gamma(k + 1) * _gamma(n - k + 1)))
    func = _FUNCS.get(type(expr))
    if func is not None and len(expr.args) == 1:
        return _finite(func(_eval(expr.args[0], point)))
    raise Unsupported(f"cannot evaluate {type(expr).__name__}")
