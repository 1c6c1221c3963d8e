"""``verifiers.answers``: its public names, pinned."""

from __future__ import annotations

from api_pins import assert_pinned

import verifiers.answers as answers


def test_public_api_is_pinned() -> None:
    assert_pinned(
        answers,
        [
            "ExactAnswer",
            "ExactSpec",
            "FormatRegex",
            "FormatSpec",
            "MathAnswer",
            "MathSpec",
            "NumericAnswer",
            "NumericSpec",
            "PatternRule",
            "equivalent",
            "extract_answer",
            "extract_choice",
            "extract_number",
            "normalize_text",
        ],
    )
