"""Strict comparisons for hidden tests: ``assert f(x) == 5`` must not trust the project's
``__eq__``.

The hidden tests run in a trusted process and see the project's values as decoded plain data
or as handles (``_pytest_run``), so a lying ``__eq__`` is never asked; this rewrite is the
second line: every ``==`` / ``!=`` inside an ``assert`` whose one side is a literal (``5``,
``"ok"``, ``[1, (2, 3)]``, ``{"a": 1}``) is rewritten (on the host, on the task author's trusted
source) into a call of :data:`HELPER_SOURCE`'s ``strict_eq``, which accepts only values of
exactly the builtin types the literal has (``int`` and ``float`` interchangeable, never
``bool``), compared element by element.

Comparisons of two non-literal values (``assert p == Point(1, 2)``, ``pytest.approx``) keep
Python's semantics here; on project objects the proxies decide them (never the project).
"""

from __future__ import annotations

import ast

__all__ = ["HELPER_MODULE", "HELPER_SOURCE", "harden_test_source"]

HELPER_MODULE = "_verifiers_strict"
_NAME = "__verifiers_strict_eq__"

HELPER_SOURCE = '''"""strict_eq: equality with a literal that never calls the project's methods."""

_NUMBERS = (int, float)


def _plain_key(value):
    t = type(value)
    if t in (int, float, str, bytes, bool, type(None), complex):
        return True
    if t in (tuple, frozenset):
        return all(_plain_key(v) for v in value)
    return False


def strict_eq(actual, expected):
    ta, te = type(actual), type(expected)
    if te in _NUMBERS and ta in _NUMBERS:
        return actual == expected
    if ta is not te:
        return False
    if te in (list, tuple):
        return len(actual) == len(expected) and all(
            strict_eq(a, e) for a, e in zip(actual, expected)
        )
    if te is dict:
        if len(actual) != len(expected) or not all(_plain_key(k) for k in actual):
            return False
        return all(k in actual and strict_eq(actual[k], v) for k, v in expected.items())
    if te in (set, frozenset):
        return all(_plain_key(v) for v in actual) and actual == expected
    return actual == expected
'''


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class _Harden(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False
        self.in_assert = False

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.in_assert = True
        node.test = self.visit(node.test)
        self.in_assert = False
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if (
            not self.in_assert
            or len(node.ops) != 1
            or not isinstance(node.ops[0], (ast.Eq, ast.NotEq))
        ):
            return node
        left, right = node.left, node.comparators[0]
        if _is_literal(right) and not _is_literal(left):
            actual, expected = left, right
        elif _is_literal(left) and not _is_literal(right):
            actual, expected = right, left
        else:
            return node
        self.changed = True
        call: ast.expr = ast.Call(
            func=ast.Name(id=_NAME, ctx=ast.Load()), args=[actual, expected], keywords=[]
        )
        if isinstance(node.ops[0], ast.NotEq):
            call = ast.UnaryOp(op=ast.Not(), operand=call)
        return ast.copy_location(call, node)


def harden_test_source(source: str) -> str:
    """``source`` with its literal comparisons in asserts made strict (unchanged if none).

    A file that does not parse is returned as is (its collection error is reported by the run).
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    transformer = _Harden()
    tree = transformer.visit(tree)
    if not transformer.changed:
        return source
    index = 0
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(getattr(body[0], "value", None), ast.Constant)
    ):
        index = 1
    while (
        index < len(body)
        and isinstance(body[index], ast.ImportFrom)
        and body[index].module == "__future__"
    ):  # type: ignore[attr-defined]
        index += 1
    body.insert(
        index,
        ast.ImportFrom(
            module=HELPER_MODULE, names=[ast.alias(name="strict_eq", asname=_NAME)], level=0
        ),
    )
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
