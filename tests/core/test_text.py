"""verifiers.text: the fenced-block reader and visible_text."""

from __future__ import annotations

import random
import re

import pytest

from verifiers.text import _FENCE, _fenced_blocks, visible_text

PIECES = [
    "```", "````", "~~~", "```py", "``` python x", "  ```", "  ````", "code", "", "x = 1",
    "````a`b", "~~~~", " ``` ", "```\t", "\t~~~",
]  # fmt: skip


def test_fenced_blocks_read_exactly_as_the_regex() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        text = "\n".join(rng.choice(PIECES) for _ in range(rng.randint(0, 9)))
        if rng.random() < 0.5:
            text += "\n"
        expected = [(m.group(3).lower(), m.group(4)) for m in _FENCE.finditer(text)]
        assert _fenced_blocks(text) == expected, repr(text)


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("\u20105", "-5"),
        ("\u22123", "-3"),
        ("\u20137", "-7"),
        ("2\u2075", "2^5"),
        ("10\u207b\u00b3", "10^{-3}"),
        ("2\u02e3", "2^x"),
        ("x\u2081", "x_1"),
        ("ans\u200bwer", "answer"),
        ("so\u00adrry", "sorry"),
        ("a\U000e0041b", "ab"),
        ("\uff14\uff12", "42"),
        ("12\u00bd", "12 1/2"),
        ("\u0430nswer", "answer"),
        ("\u043f\u0440\u0438\u0432\u0435\u0442", "\u043f\u0440\u0438\u0432\u0435\u0442"),
        ("plain ascii", "plain ascii"),
    ],
)
def test_visible_text_reads_what_a_reader_sees(text: str, seen: str) -> None:
    assert visible_text(text, confusables=True) == seen


def test_visible_text_is_idempotent() -> None:
    for text in ("\u20105 2\u2075 ans\u200bwer 12\u00bd \u0430b", "x\u00b2\u00b3"):
        once = visible_text(text, confusables=True)
        assert visible_text(once, confusables=True) == once
    assert re.fullmatch(r"[ -~]*", visible_text("\u2010\u2011\u2012\u2013\u2014\u2015\u2212"))
