from __future__ import annotations

from decimal import Decimal

import pytest
from verifiers.domains.finance import parse_number


@pytest.mark.parametrize(
    ("text", "value", "decimals", "percent", "scale"),
    [
        ("$1,496.5", 1496.5, 1, False, ""),
        ("(1,234)", -1234.0, 0, False, ""),
        ("$(1,234)", -1234.0, 0, False, ""),
        ("\u221212.5%", -12.5, 1, True, ""),
        ("\u2013 3.0", -3.0, 1, False, ""),
        ("12.5 percent", 12.5, 1, True, ""),
        ("12.5 %", 12.5, 1, True, ""),
        ("1.2 billion", 1.2, 1, False, "billion"),
        ("$45m", 45.0, 0, False, "million"),
        ("US$ 3.4bn", 3.4, 1, False, "billion"),
        ("€ 0.50", 0.5, 2, False, ""),
        ("1,234(a)", 1234.0, 0, False, ""),
        ("1,234 (1)", 1234.0, 0, False, ""),
        ("1,234*", 1234.0, 0, False, ""),
        ("2,766\u00b9", 2766.0, 0, False, ""),
        ("1\u00a0234.00", None, 0, False, ""),
        ("4.00", 4.0, 2, False, ""),
        (".5", 0.5, 1, False, ""),
        ("(12.5)%", -12.5, 1, True, ""),
        ("32,137 thousand", 32137.0, 0, False, "thousand"),
    ],
)
def test_printed_figures(
    text: str, value: float | None, decimals: int, percent: bool, scale: str
) -> None:
    number = parse_number(text)
    if value is None:
        assert number is None
        return
    assert number is not None
    assert number.value == pytest.approx(value)
    assert (number.decimals, number.percent, number.scale) == (decimals, percent, scale)


@pytest.mark.parametrize(
    "text", ["abc", "1,2,3", "", "12 apples", "1.2.3", "(12", "--5x", "x" * 100]
)
def test_not_numbers(text: str) -> None:
    assert parse_number(text) is None


def test_dash_is_nil_only_for_cells() -> None:
    assert parse_number("—") is None
    cell = parse_number("—", dash_is_zero=True)
    assert cell is not None and cell.value == 0 and cell.dash


def test_json_numbers_keep_printed_decimals() -> None:
    number = parse_number(Decimal("24.410"))
    assert number is not None and number.decimals == 3
    assert parse_number(True) is None
    assert parse_number(float("nan")) is None


def test_base_applies_scale_and_percent() -> None:
    assert parse_number("12.5%").base == pytest.approx(0.125)  # type: ignore[union-attr]
    assert parse_number("$1.5 million").base == pytest.approx(1.5e6)  # type: ignore[union-attr]
