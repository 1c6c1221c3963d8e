"""Pieces every answer verifier shares: the base spec, reference handling, safe regexes."""

from __future__ import annotations

import importlib
import re
from typing import Any

from pydantic import ConfigDict

from ..errors import BadInput
from ..protocol import Spec

__all__ = [
    "AnswerSpec",
    "RegexTimeout",
    "SafePattern",
    "compile_pattern",
    "quote",
    "references_as_text",
]

MAX_PATTERN_CHARS = 2_000
"""Longest regex a task may carry: task authors write patterns, not programs."""


class AnswerSpec(Spec):
    """Settings common to ``answer.*`` verifiers."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    strip_thinking: bool = True
    """Ignore everything up to the last ``</think>``: scratch work holds discarded answers."""
    reveal_reference: bool = True
    """Name the expected answer in the feedback. Turn off when feedback is shown to the model
    and must not leak the ground truth."""
    max_answer_chars: int = 10_000
    """A longer extracted answer is a model failure (no comparison is attempted).
    ``answer.numeric`` instead reads only the last ten times this many characters."""


def references_as_text(reference: Any, verifier: str) -> list[str]:
    """``task.reference`` as a non-empty list of strings.

    Raises:
        BadInput: the reference is missing, empty, or not a string/number (or a list of them).
    """
    if reference is None:
        raise BadInput(f"{verifier} needs task.reference (the expected answer)")
    items = reference if isinstance(reference, list) else [reference]
    out: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise BadInput(
                f"{verifier}: task.reference must be a string, a number, or a list of them; "
                f"got {type(item).__name__}"
            )
        text = item if isinstance(item, str) else repr(item)
        if not text.strip():
            raise BadInput(f"{verifier}: task.reference contains an empty answer")
        out.append(text)
    if not out:
        raise BadInput(f"{verifier}: task.reference is an empty list")
    return out


def quote(text: str, limit: int = 80) -> str:
    """``repr``-style quoting, shortened, for feedback lines."""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


class RegexTimeout(Exception):
    """A pattern ran past its time budget (catastrophic backtracking)."""


class SafePattern:
    """A compiled pattern with a matching time budget.

    Patterns come from task authors, text from the model: a careless pattern such as
    ``(a+)+$`` backtracks exponentially on a crafted completion. The ``regex`` package (a
    core dependency) supports a per-call timeout, after which the pattern is reported as the
    task's fault. Without it, plain ``re`` is used and has no timeout: text length caps are
    then the only guard, and a pathological pattern can still stall the event loop.
    """

    def __init__(self, pattern: str, flags: int, timeout_s: float) -> None:
        self.pattern = pattern
        self.timeout_s = timeout_s
        self._engine = _regex_module()
        if self._engine is not None:
            self._compiled: Any = self._engine.compile(pattern, flags)
        else:
            self._compiled = re.compile(pattern, flags)

    def _call(self, method: str, text: str) -> Any:
        fn = getattr(self._compiled, method)
        if self._engine is None:
            return fn(text)
        try:
            return fn(text, timeout=self.timeout_s)
        except TimeoutError:
            raise RegexTimeout(self.pattern) from None

    def search(self, text: str) -> Any:
        return self._call("search", text)

    def fullmatch(self, text: str) -> Any:
        return self._call("fullmatch", text)

    def match(self, text: str) -> Any:
        return self._call("match", text)

    def count(self, text: str, limit: int = 10_000) -> int:
        """Non-overlapping matches, counting at most ``limit``."""
        if self._engine is None:
            total = 0
            for _ in self._compiled.finditer(text):
                total += 1
                if total >= limit:
                    break
            return total
        try:
            total = 0
            for _ in self._compiled.finditer(text, timeout=self.timeout_s):
                total += 1
                if total >= limit:
                    break
            return total
        except TimeoutError:
            raise RegexTimeout(self.pattern) from None


_REGEX_MODULE: Any = None
_REGEX_LOOKED = False


def _regex_module() -> Any:
    global _REGEX_MODULE, _REGEX_LOOKED
    if not _REGEX_LOOKED:
        _REGEX_LOOKED = True
        try:
            _REGEX_MODULE = importlib.import_module("regex")
        except ImportError:  # pragma: no cover - regex ships with the core dependencies
            _REGEX_MODULE = None
    return _REGEX_MODULE


_PATTERN_CACHE: dict[tuple[str, int, float], SafePattern] = {}


def compile_pattern(pattern: str, flags: int, timeout_s: float, verifier: str) -> SafePattern:
    """Compile (and cache) a task author's pattern.

    ``flags`` are ``re`` flag values (``re.I`` ...); they have the same values in ``regex``.

    Raises:
        BadInput: the pattern is too long or does not compile.
    """
    key = (pattern, flags, timeout_s)
    cached = _PATTERN_CACHE.get(key)
    if cached is not None:
        return cached
    if len(pattern) > MAX_PATTERN_CHARS:
        raise BadInput(f"{verifier}: pattern longer than {MAX_PATTERN_CHARS} characters")
    try:
        compiled = SafePattern(pattern, flags, timeout_s)
    except Exception as exc:  # re.error / regex.error: a broken pattern from the task file
        raise BadInput(f"{verifier}: invalid regex {quote(pattern)}: {exc}") from None
    if len(_PATTERN_CACHE) > 4096:
        _PATTERN_CACHE.clear()
    _PATTERN_CACHE[key] = compiled
    return compiled
