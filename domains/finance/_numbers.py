"""Printed figures for the finance domain: the one number parser of ``verifiers.answers``.

The grammar (currency, thousands separators, accounting negatives, unicode minus signs,
percent and scale words, footnote markers, a lone dash as nil in table cells) lives in
:mod:`verifiers.answers._numbers`, shared with ``answer.numeric``; this module keeps the names
the finance code has always used.
"""

from __future__ import annotations

from verifiers.answers._numbers import MAX_DECIMALS, SCALE_FACTORS, scale_factor
from verifiers.answers._numbers import Figure as Number
from verifiers.answers._numbers import parse_figure as parse_number
from verifiers.answers._numbers import parse_figure_text as _parse_text

__all__ = ["MAX_DECIMALS", "SCALE_FACTORS", "Number", "_parse_text", "parse_number", "scale_factor"]
