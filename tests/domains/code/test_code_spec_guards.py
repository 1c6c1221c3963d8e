"""Spec mistakes that would hand out free reward must be rejected as bad input."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from verifiers.domains.code._compare import short_repr, values_equal
from verifiers.domains.code._spec import CodeTestsSpec


def _spec(tests: dict[str, object]) -> CodeTestsSpec:
    return CodeTestsSpec.model_validate({"tests": tests})


def test_a_call_case_must_say_what_it_expects() -> None:
    # "expect" (typo) used to default expected to None: `def f(x): pass` then scored 1.0.
    with pytest.raises(ValidationError, match="expect"):  # strict specs: an unknown key
        _spec({"kind": "call", "entry_point": "f", "cases": [{"args": [1], "expect": 2}]})
    with pytest.raises(ValidationError, match="expected"):
        _spec({"kind": "call", "entry_point": "f", "cases": [{"args": [1]}]})
    explicit_none = _spec(
        {"kind": "call", "entry_point": "f", "cases": [{"args": [1], "expected": None}]}
    )
    assert explicit_none.tests.cases[0].expected is None  # type: ignore[union-attr]
    raising = _spec(
        {"kind": "call", "entry_point": "f", "cases": [{"args": [1], "raises": "ValueError"}]}
    )
    assert raising.tests.cases[0].raises == "ValueError"  # type: ignore[union-attr]


def test_pytest_expected_tests_cannot_be_zero() -> None:
    with pytest.raises(ValidationError):
        _spec({"kind": "pytest", "files": {"test_a.py": "def test_a(): pass"}, "expected_tests": 0})
    with pytest.raises(ValidationError):
        _spec(
            {"kind": "pytest", "files": {"test_a.py": "def test_a(): pass"}, "expected_tests": []}
        )


def test_huge_ints_compare_unequal_and_display_by_size() -> None:
    assert values_equal(10**400, 1.5, rel_tol=1e-9, abs_tol=0.0) is False
    assert values_equal(10**400, 10**400, rel_tol=1e-9, abs_tol=0.0) is True
    assert "digits" in short_repr(10**5000)
    assert "too large" in short_repr([10**5000])
