"""The dependence test (``domains/finance/_dependence.py``): per cell, near the data, bounded."""

from __future__ import annotations

from collections.abc import Mapping

from verifiers.domains.finance._dependence import MAX_PAIRS, dependence


def test_quotations_of_one_cell_change_together() -> None:
    values = {"a": 1496.5, "b": 1496.5, "c": 24.41}

    def compute(changed: Mapping[str, float]) -> float:
        v = {**values, **changed}
        return v["a"] - v["b"] + v["c"]

    same = dependence(compute, values, 24.41, 0.005, cell={"a": 0, "b": 0, "c": 1}.__getitem__)
    assert same.dead == ["a", "b"]
    # Two different cells printing the same value cancel just the same: padding, since the
    # result moves only with c.
    apart = dependence(compute, values, 24.41, 0.005)
    assert apart.dead == ["a", "b"]


def test_a_ratio_of_equal_figures_is_not_padding() -> None:
    values = {"a": 442262.0, "b": 442262.0}

    def compute(changed: Mapping[str, float]) -> float:
        v = {**values, **changed}
        return v["a"] / v["b"]

    assert dependence(compute, values, 1.0, 0.001).dead == []


def test_an_honest_zero_change_keeps_its_base() -> None:
    values = {"a": 21.0, "b": 21.0, "c": 21.0}

    def compute(changed: Mapping[str, float]) -> float:
        v = {**values, **changed}
        return (v["a"] - v["b"]) / v["c"] * 100

    found = dependence(compute, values, 0.0, 0.005, cell={"a": 0, "b": 1, "c": 1}.__getitem__)
    assert found.dead == []


def test_a_kink_lost_by_a_wide_margin_stays_dead() -> None:
    values = {"o": 44.1, "b": 1496.5}

    def compute(changed: Mapping[str, float]) -> float:
        v = {**values, **changed}
        return max(v["o"] / 2, v["b"])

    assert dependence(compute, values, 1496.5, 0.05).dead == ["o"]
    # A bare candidate of a selection is used by being compared.
    assert dependence(compute, values, 1496.5, 0.05, candidates={"o"}).dead == []


def test_work_is_bounded_by_the_figures_not_their_product() -> None:
    """120 dead figures beside 120 live ones: the neighbourhood step stops early."""
    n = 120
    values = {f"d{i}": float(i + 1) for i in range(n)} | {f"l{i}": float(i + 1) for i in range(n)}
    calls = 0

    def compute(changed: Mapping[str, float]) -> float:
        nonlocal calls
        calls += 1
        v = {**values, **changed}
        return sum(v[f"l{i}"] for i in range(n)) + 0 * sum(v[f"d{i}"] for i in range(n))

    found = dependence(compute, values, compute({}), 0.5)
    assert found.dead == ["d0"]
    assert calls <= 1 + 2 * (2 * n) + 6 * MAX_PAIRS, calls
