"""``format.regex``: format rewards (required tags, patterns that must match, counts)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import BadInput
from ..protocol import InlineVerifier, Spec
from ..registry import register
from ..text import completion_text, visible_text
from ..types import Result, Trajectory
from ._common import RegexTimeout, SafePattern, compile_pattern, quote

__all__ = ["FormatRegex", "FormatSpec", "PatternRule"]

NAME = "format.regex"

Flag = Literal["IGNORECASE", "MULTILINE", "DOTALL"]
_FLAGS = {"IGNORECASE": re.I, "MULTILINE": re.M, "DOTALL": re.S}

PRESETS: dict[str, list[str]] = {
    "think_answer": ["think", "answer"],
}
"""Named tag sequences usable as ``preset``."""


class PatternRule(BaseModel):
    """One regex the completion must satisfy."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    pattern: str
    """The regular expression (Python syntax)."""
    mode: Literal["search", "fullmatch", "match"] = "search"
    """``search``: found anywhere; ``fullmatch``: the whole text; ``match``: at the start."""
    flags: list[Flag] = Field(default_factory=list)
    """Regex flags, e.g. ``["DOTALL", "IGNORECASE"]``."""
    min_count: int | None = Field(default=None, ge=0)
    """In ``search`` mode: fewest non-overlapping matches required; default 1, or 0 when
    ``max_count`` is 0."""
    max_count: int | None = Field(default=None, ge=0)
    """In ``search`` mode: most matches allowed (``0`` forbids the pattern)."""
    name: str | None = None
    """Name of this rule in ``components``; defaults to ``pattern_<n>``."""


class FormatSpec(Spec):
    """Settings of ``format.regex``. With no settings it checks ``<think>...</think>
    <answer>...</answer>`` (the ``think_answer`` preset)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    tags: list[str] | None = None
    """Tags that must each appear exactly once as ``<tag>...</tag>`` with non-blank content,
    in this order, with nothing but whitespace outside them when ``strict_tags``."""
    preset: Literal["think_answer"] | None = None
    """A named tag list (``think_answer`` = ``["think", "answer"]``); used when neither
    ``tags`` nor ``patterns`` nor ``fullmatch`` is given."""
    strict_tags: bool = True
    """Only whitespace may appear outside the required tags."""
    patterns: list[PatternRule | str] = Field(default_factory=list)
    """Further rules; a bare string is a ``search`` rule."""
    fullmatch: str | None = None
    """A pattern the whole (stripped) completion must match (``DOTALL`` on)."""
    reward: Literal["all", "share"] = "all"
    """``all``: 1 when every rule passes, else 0; ``share``: the fraction of rules passed."""
    strip: bool = True
    """Strip surrounding whitespace from the completion before matching."""
    timeout_s: float = Field(default=0.05, gt=0.0)
    """Time budget per regex call; a pattern that backtracks past it is a bad task (error)."""
    max_chars: int = Field(default=200_000, gt=0)
    """A longer completion fails all rules (a format reward must not be farmed by volume)."""

    @model_validator(mode="after")
    def _valid_tags(self) -> Self:
        for tag in self.tags or []:
            if not re.fullmatch(r"[A-Za-z][\w.-]{0,63}", tag):
                raise ValueError(f"invalid tag name {tag!r}")
        return self


def _rules(spec: FormatSpec) -> tuple[list[str], list[tuple[str, PatternRule]]]:
    tags = list(spec.tags or [])
    if not tags and not spec.patterns and spec.fullmatch is None:
        tags = PRESETS[spec.preset or "think_answer"]
    rules: list[tuple[str, PatternRule]] = []
    for index, rule in enumerate(spec.patterns):
        parsed = PatternRule(pattern=rule) if isinstance(rule, str) else rule
        rules.append((parsed.name or f"pattern_{index + 1}", parsed))
    if spec.fullmatch is not None:
        rules.append(
            ("fullmatch", PatternRule(pattern=spec.fullmatch, mode="fullmatch", flags=["DOTALL"]))
        )
    return tags, rules


def _check_tags(text: str, tags: list[str], strict: bool) -> tuple[bool, str]:
    """Each tag exactly once, non-empty, in order; only whitespace outside when strict."""
    position = 0
    outside: list[str] = []
    for tag in tags:
        opens = len(re.findall(rf"<{re.escape(tag)}>", text))
        closes = len(re.findall(rf"</{re.escape(tag)}>", text))
        if opens != 1 or closes != 1:
            return (
                False,
                f"<{tag}>...</{tag}> must appear exactly once (found {opens} open, {closes} close)",
            )
        start = text.find(f"<{tag}>")
        end = text.find(f"</{tag}>")
        if start < position or end < start:
            return False, f"<{tag}> is out of order"
        if not text[start + len(tag) + 2 : end].strip():
            return False, f"<{tag}> is empty"
        outside.append(text[position:start])
        position = end + len(tag) + 3
    outside.append(text[position:])
    if strict and any(part.strip() for part in outside):
        return False, "text outside the required tags " + ", ".join(f"<{t}>" for t in tags)
    return True, ""


@register(NAME)
class FormatRegex(InlineVerifier[FormatSpec]):
    """Format rewards: required tags in order, regex rules with counts, a full-match pattern.

    Needs no reference. Reward is 1/0 (``reward="all"``) or the share of rules passed; each
    rule is a component so trainers can log which part of the format the model misses.
    """

    Spec = FormatSpec
    version: ClassVar[str] = "1"

    def check(self, trajectory: Trajectory, spec: FormatSpec) -> Result:
        tags, rules = _rules(spec)
        text = completion_text(trajectory)
        too_long = len(text) > spec.max_chars
        if not too_long:
            # What a reader sees: a zero-width space or a Cyrillic look-alike must not dodge
            # a forbidden pattern (nor fake a required one).
            text = visible_text(text, confusables=True)
        if spec.strip:
            text = text.strip()
        components: dict[str, float] = {}
        problems: list[str] = []
        if tags:
            ok, why = (
                (False, "completion too long")
                if too_long
                else _check_tags(text, tags, spec.strict_tags)
            )
            components["tags"] = 1.0 if ok else 0.0
            if not ok:
                problems.append(why)
        for name, rule in rules:
            flags = 0
            for flag in rule.flags:
                flags |= _FLAGS[flag]
            compiled = compile_pattern(rule.pattern, flags, spec.timeout_s, NAME)
            if too_long:
                ok, why = False, "completion too long"
            else:
                try:
                    ok, why = _apply(compiled, rule, text)
                except RegexTimeout:
                    # The text is the model's: an output that makes the check blow up has not
                    # shown the format. A fail, never an abstain the model could aim for.
                    ok, why = False, f"output not checkable within {spec.timeout_s}s"
            components[name] = 1.0 if ok else 0.0
            if not ok:
                problems.append(f"{name}: {why}")
        if not components:
            raise BadInput(f"{NAME}: nothing to check (give tags, patterns or fullmatch)")
        passed = sum(components.values())
        if spec.reward == "all":
            reward = 1.0 if passed == len(components) else 0.0
        else:
            reward = passed / len(components)
        feedback = "format ok" if not problems else "format: " + "; ".join(problems)
        return Result.scored(
            reward,
            components=components,
            feedback=feedback,
            details={"rules": len(components), "passed": int(passed)},
        )


def _apply(compiled: SafePattern, rule: PatternRule, text: str) -> tuple[bool, str]:
    shown = quote(rule.pattern, 40)
    if rule.mode == "fullmatch":
        ok = compiled.fullmatch(text) is not None
        return ok, "" if ok else f"the whole answer must match {shown}"
    if rule.mode == "match":
        ok = compiled.match(text) is not None
        return ok, "" if ok else f"the answer must start with {shown}"
    least = rule.min_count if rule.min_count is not None else (0 if rule.max_count == 0 else 1)
    limit = max(least, rule.max_count or 0) + 1
    count = compiled.count(text, limit=limit)
    if count < least:
        return False, f"{shown} found {count} times, need at least {least}"
    if rule.max_count is not None and count > rule.max_count:
        return False, f"{shown} found more than {rule.max_count} times"
    return True, ""
