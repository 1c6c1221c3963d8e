from __future__ import annotations

import time

import pytest
from verifiers.domains.finance import (
    FormulaError,
    evaluate,
    parse_formula,
    parse_program,
    run_program,
)


def ev(text: str, **values: float) -> float:
    return evaluate(parse_formula(text), values)


def test_arithmetic_and_functions() -> None:
    assert ev("(a - b) / b * 100", a=1496.5, b=1202.9) == pytest.approx(24.4077, rel=1e-5)
    assert ev("avg(a, b, 3)", a=1, b=2) == 2
    assert ev("sum([a, b]) + max(a, b) - min(a, b) + abs(-a)", a=1, b=2) == 5
    assert ev("round(a / 3, 2)", a=1) == 0.33
    assert ev("(end / start) ** (1 / 5) - 1", end=161.05, start=100) == pytest.approx(0.1, rel=1e-4)
    assert ev("-a + +b", a=1, b=3) == 2


def test_literals_are_recorded() -> None:
    formula = parse_formula("(a + 1496.5) / 2")
    assert formula.names == {"a"}
    assert (1496.5, 1) in formula.literals


HOSTILE = [
    ("__import__('os').system('echo pwned')", "name '__import__' not allowed"),
    ("().__class__.__bases__", "__class__|attribute"),
    ("getattr(a, 'x')", "function 'getattr' not allowed"),
    ("a.__class__", "attribute access"),
    ("(lambda: 1)()", "lambdas"),
    ("[x for x in range(10)]", "comprehensions"),
    ("open('/etc/passwd')", "open"),
    ("a[0]", "subscripts"),
    ("'abc' * 3", "only numbers"),
    ("a if a else b", "conditional"),
    ("max(a, key=b)", "keyword"),
    ("exec('1')", "exec"),
    ("__builtins__", "name '__builtins__' not allowed"),
    ("1; 2", "not valid arithmetic"),
    ("a == b", "comparisons"),
]


@pytest.mark.parametrize(("text", "reason"), HOSTILE)
def test_hostile_formulas_are_rejected(text: str, reason: str) -> None:
    with pytest.raises(FormulaError, match=reason):
        parse_formula(text)


def test_resource_bombs_fail_fast() -> None:
    start = time.perf_counter()
    with pytest.raises(FormulaError, match="exponent"):
        ev("9**9**9")
    with pytest.raises(FormulaError, match="exponent|out of range"):
        ev("10**300")
    with pytest.raises(FormulaError, match="characters long"):
        parse_formula("1+" * 500_000 + "1")
    with pytest.raises(FormulaError, match="nest"):
        parse_formula("(" * 150 + "1" + ")" * 150)
    with pytest.raises(FormulaError, match="nest|terms"):
        parse_formula("-" * 1500 + "1")
    with pytest.raises(FormulaError, match="nest"):
        parse_formula("+".join(["a"] * 900))
    with pytest.raises(FormulaError, match="terms"):
        parse_formula("max(" + ",".join(["a"] * 600) + ")")
    with pytest.raises(FormulaError, match="out of range"):
        ev("a*a*a*a*a*a*a", a=1e10)
    assert time.perf_counter() - start < 1.0


def test_evaluation_errors() -> None:
    with pytest.raises(FormulaError, match="division by zero"):
        ev("a / (b - b)", a=1, b=2)
    with pytest.raises(FormulaError, match="unknown operand"):
        ev("a + c", a=1)
    with pytest.raises(FormulaError, match="fractional exponent"):
        ev("a ** 0.5", a=-4)


def test_finqa_program() -> None:
    program = parse_program("subtract(5829, 5735), divide(#0, 5735), multiply(#1, const_100)")
    assert program.literals == ("5829", "5735", "5735")
    result = run_program(program, {}, lambda _row: None)
    assert result == pytest.approx(1.639058, rel=1e-6)
    rows = {"net revenue": [10.0, 20.0, 30.0]}
    assert run_program(parse_program("table_average(net revenue, none)"), {}, rows.get) == 20
    assert (
        run_program(parse_program("table_max(net revenue, none), add(#0, const_m1)"), {}, rows.get)
        == 29
    )
    assert run_program(parse_program("greater(a, b)"), {"a": 2, "b": 1}, rows.get) is True
    assert run_program(parse_program("exp(const_2, const_10)"), {}, rows.get) == 1024


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("subtract(1, 2), divide(#3, 2)", "earlier step"),
        ("system(1, 2)", "unknown operation"),
        ("add(1)", "two arguments"),
        ("add(1, 2) junk", "op\\(arg, arg\\)"),
        ("add(__import__, 1)", "cannot read argument"),
        ("exp(9, 999)", "exponent"),
    ],
)
def test_bad_programs(text: str, reason: str) -> None:
    with pytest.raises(FormulaError, match=reason):
        run_program(parse_program(text), {}, lambda _row: None)
