"""Moved to :mod:`verifiers.summary` (the core's ``report`` uses it too, and the core never
imports the CLI). This name stays importable for code written against it."""

from __future__ import annotations

from ..summary import FIRST_ERRORS, UNKNOWN, Reservoir, Summary, VerifierStats

__all__ = ["FIRST_ERRORS", "UNKNOWN", "Reservoir", "Summary", "VerifierStats"]
