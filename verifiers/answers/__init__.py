"""Built-in answer verifiers: answer.exact, answer.numeric, answer.math, format.regex.

Importing this package registers them; the registry imports it lazily the first time a name
starting with ``answer.`` or ``format.`` is looked up. sympy is imported only inside the
``answer.math`` worker, so importing this package stays cheap. See ``docs/answers.md``.
"""

from __future__ import annotations

from ._exact import ExactAnswer, ExactSpec, extract_choice, normalize_text
from ._format import FormatRegex, FormatSpec, PatternRule
from ._locate import extract_answer
from ._math import MathAnswer, MathSpec, equivalent
from ._numeric import NumericAnswer, NumericSpec, extract_number

__all__ = [
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
]
