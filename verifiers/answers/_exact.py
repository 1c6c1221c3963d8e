"""``answer.exact``: normalised string match, regex match, or multiple-choice letter."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import ClassVar, Literal

from ..errors import BadInput
from ..protocol import InlineVerifier
from ..registry import register
from ..text import completion_text, visible_text
from ..types import Result, Trajectory
from ._common import AnswerSpec, RegexTimeout, compile_pattern, quote, references_as_text
from ._locate import (
    Extract,
    answer_phrase,
    answer_tag,
    boxed_spans,
    boxes_side_by_side,
    end_of_turn,
    extract_answer,
    last_line,
    strip_thinking,
    tags_side_by_side,
    unwrap_latex,
)

__all__ = ["ExactAnswer", "ExactSpec", "extract_choice", "normalize_text"]

NAME = "answer.exact"


class ExactSpec(AnswerSpec):
    """Settings of ``answer.exact``. Every field has a default: ``task.spec`` may be omitted."""

    extract: Extract = "auto"
    """Where the answer is read from: ``auto`` (``<answer>`` tag, then the last ``\\boxed{}``,
    then "The answer is ..." / "Answer: ...", then the last line), ``boxed``, ``answer_tag``,
    ``answer_phrase``, ``last_line`` or ``full`` (the whole completion). Not used in
    ``choice`` mode, which has its own search (see :func:`extract_choice`)."""
    mode: Literal["string", "regex", "choice"] = "string"
    """``string``: normalised equality with any reference; ``regex``: each reference is a
    pattern the extracted answer must match; ``choice``: multiple choice, the reference is a
    letter (``"B"``) and the model's chosen letter is found in its text."""
    ignore_case: bool = True
    """Compare case-insensitively (also makes regex patterns case-insensitive)."""
    ignore_punctuation: bool = True
    """Drop punctuation except inside a token (``3.5``, ``U.S``) and a sign before a digit."""
    ignore_articles: bool = False
    """Drop the English articles *a*, *an*, *the* (SQuAD-style normalisation)."""
    regex_search: bool = False
    """In ``regex`` mode, search the answer instead of matching it in full."""
    regex_timeout_s: float = 0.05
    """Time budget per regex call; a pattern that backtracks past it is a bad task (error)."""
    choices: str = "ABCD"
    """In ``choice`` mode, the option letters (``"ABCDE"`` for five options)."""


_ARTICLES = re.compile(r"\b(?:a|an|the)\b", re.I)
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=65_536)
def normalize_text(
    text: str, *, ignore_case: bool, ignore_punctuation: bool, ignore_articles: bool
) -> str:
    """The canonical form compared in ``string`` mode.

    Text is read as a reader sees it (:func:`verifiers.text.visible_text`: invisible
    characters dropped, dashes as ``-``, superscripts as ``^n``, NFKC, Latin look-alikes
    folded), LaTeX/Markdown wrappers are dropped (``\\boxed{}``, ``\\text{}``, ``$``),
    whitespace is collapsed.
    """
    text = unwrap_latex(visible_text(text, confusables=True))
    if "\\" in text or "~" in text:
        text = text.replace("\\%", "%").replace("\\$", "$").replace("~", " ")
    if ignore_case:
        text = text.casefold()
    if ignore_punctuation and not text.replace(" ", "").isalnum():
        kept: list[str] = []
        last = len(text) - 1
        for index, char in enumerate(text):
            if unicodedata.category(char)[0] == "P":
                before = text[index - 1] if index > 0 else " "
                after = text[index + 1] if index < last else " "
                inside = before.isalnum() and after.isalnum()
                sign = char in "-.+" and after.isdigit() and not before.isalnum()
                if not (inside or sign):
                    kept.append(" ")
                    continue
            kept.append(char)
        text = "".join(kept)
    if ignore_articles:
        text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


# -- multiple choice ----------------------------------------------------------------------


def _choice_patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    cls = re.escape(letters.upper())
    low = re.escape(letters.lower())
    value = re.compile(
        rf"^\s*(?i:option|choice)?\s*[(\[]?\s*(?:(?P<up>[{cls}])|(?P<low>[{low}]))(?P<gap>\s*)"
        rf"(?P<close>[)\]])?(?P<rest>.*)$",
        re.S,
    )
    hedge = re.compile(
        # "A or B", "A/B", "A|B", "A; B", "A vs B", "A (or B)"
        rf"^\s*\(?\s*(?:,|/|&|\||;|\+|\band/or\b|\bor\b|\band\b|\bvs\b\.?)"
        rf"\s*[(\[]?\s*[{cls}{low}]\s*[)\]]?(?=$|[\s.,;)\]])"
        # "(A)(B)", "(A) [B]": a second option letter in brackets right after the first
        rf"|^\s*[(\[]\s*[{cls}]\s*[)\]]"
        # "A B": a second bare capital letter and nothing else
        rf"|^\s*[{cls}]\s*\.?\s*$"
    )
    bold = re.compile(rf"\*\*\s*(?i:option\s+|choice\s+)?\(?([{cls}])\)?[.):]?\s*\*\*")
    return value, hedge, bold


MAX_CHOICE_CHARS = 1_000
"""A place (tag, box, phrase, line) longer than this names no option letter: a choice is a
letter, and the cap keeps unwrapping a hostile box linear."""

_CHOICE_CACHE: dict[str, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}


def _letter_in_value(value: str, letters: str, strict: bool = False) -> tuple[str | None, bool]:
    """The option letter a short answer string names, and whether it hedges between several.

    ``"B"``, ``"(b)"``, ``"B) Paris"``, ``"Option C"`` name a letter; a lower-case letter counts
    only when it stands alone or is followed by ``)`` ("the answer is a bit ..." does not).
    ``strict`` (for a bare last line, where no "answer is" announces a letter): the letter must
    stand alone or be closed by ``)``, ``.`` or ``:``, so "A common mistake ..." is not A.
    """
    if len(value) > MAX_CHOICE_CHARS:
        return None, False
    pats = _CHOICE_CACHE.get(letters)
    if pats is None:
        pats = _CHOICE_CACHE[letters] = _choice_patterns(letters)
    value_re, hedge_re, _ = pats
    value = unwrap_latex(value).strip().strip("*_").strip()
    match = value_re.match(value)
    if match is None:
        return None, False
    rest = match.group("rest")
    if rest[:1] and unicodedata.category(rest[0]).startswith("M"):
        return None, False  # "A\u0338" shows a struck-through A: not a plain letter
    if match.group("up"):
        letter = match.group("up")
        if rest and rest[0].isalnum() and not (match.group("close") or match.group("gap")):
            return None, False
        closed = match.group("close") or not rest.strip(" *_") or rest[:1] in (".", ":")
        if strict and not closed:
            return None, False
    else:
        letter = match.group("low").upper()
        bare = not rest.strip(" .*_")
        if not (bare or match.group("close")):
            return None, False
    return letter, hedge_re.match(rest) is not None


def extract_choice(text: str, letters: str = "ABCD") -> tuple[str | None, str, bool]:
    """The option letter a completion chose: ``(letter, source, hedged)``.

    Looks, in order, at ``<answer>`` tags, the last ``\\boxed{}``, the last "answer is" /
    "Answer:" phrase, the last bold letter (``**C**``), and the last line (``B``, ``(B)``,
    ``B) text``, or the last ``(B)`` on it).
    """
    _choice_patterns_ready(letters)
    spans = boxed_spans(text)
    for source, value in (
        ("answer_tag", answer_tag(text)),
        ("boxed", spans[-1][2] if spans else None),
        ("answer_phrase", answer_phrase(text)),
    ):
        if value:
            letter, hedged = _letter_in_value(value, letters)
            if letter is not None:
                if not hedged and source in ("boxed", "answer_tag"):
                    # "\boxed{A} or \boxed{B}": two letters side by side are a hedge.
                    run = (
                        boxes_side_by_side(text, spans)
                        if source == "boxed"
                        else tags_side_by_side(text)
                    )
                    if any(_letter_in_value(other, letters)[0] != letter for other in run):
                        hedged = True
                return letter, source, hedged
    _, _, bold_re = _CHOICE_CACHE[letters]
    bolds = bold_re.findall(text)
    if bolds:
        return str(bolds[-1]), "bold", False
    line = last_line(text)
    if line:
        letter, hedged = _letter_in_value(line, letters, strict=True)
        if letter is not None:
            return letter, "last_line", hedged
        parens = re.findall(rf"\(([{re.escape(letters.upper())}])\)", line)
        if parens:
            return str(parens[-1]), "last_line", len(set(parens)) > 1
    return None, "none", False


@register(NAME)
class ExactAnswer(InlineVerifier[ExactSpec]):
    """Exact answers: normalised strings, regexes, or multiple-choice letters.

    ``task.reference`` is the expected answer or a list of acceptable answers (patterns in
    ``regex`` mode, letters in ``choice`` mode).
    """

    Spec = ExactSpec
    version: ClassVar[str] = "1"
    reference_required: ClassVar[bool] = True

    def check(self, trajectory: Trajectory, spec: ExactSpec) -> Result:
        references = references_as_text(trajectory.task.reference, NAME)
        text = completion_text(trajectory)
        if len(text) > spec.max_answer_chars * 10:
            # Keep the tail, where the final answer is; the cap bounds the inline work.
            text = text[-spec.max_answer_chars * 10 :]
        text = visible_text(text)
        if spec.mode == "choice":
            return self._choice(text, references, spec)
        answer, source = extract_answer(text, spec.extract, thinking=spec.strip_thinking)
        if answer is None:
            return Result.failed(
                "could not find an answer: end with 'The answer is X' or put it in \\boxed{}",
                details={"extract": spec.extract},
            )
        if len(answer) > spec.max_answer_chars:
            return Result.failed(
                f"answer is {len(answer)} characters long (limit {spec.max_answer_chars})",
                details={"source": source},
            )
        if source in ("boxed", "answer_tag"):
            other = _other_side_by_side(text, source, spec)
            if other is not None:
                return Result.failed(
                    f"two answers given side by side ({source}: {quote(other[0], 30)} and "
                    f"{quote(other[1], 30)}): give exactly one final answer",
                    details={"source": source, "hedged": True},
                )
        if spec.mode == "regex":
            return self._regex(answer, source, references, spec)
        return self._string(answer, source, references, spec)

    def _string(self, answer: str, source: str, references: list[str], spec: ExactSpec) -> Result:
        opts = {
            "ignore_case": spec.ignore_case,
            "ignore_punctuation": spec.ignore_punctuation,
            "ignore_articles": spec.ignore_articles,
        }
        got = normalize_text(answer, **opts)
        details: dict[str, object] = {"answer": answer, "source": source, "normalized": got}
        for reference in references:
            if normalize_text(reference, **opts) == got:
                details["matched"] = reference
                return Result.scored(1.0, feedback="correct", details=details)
        return Result.failed(
            f"{_expected(references, spec)}got {quote(answer)} (from {source})", details=details
        )

    def _regex(self, answer: str, source: str, references: list[str], spec: ExactSpec) -> Result:
        flags = re.I if spec.ignore_case else 0
        candidate = unwrap_latex(answer)
        details: dict[str, object] = {"answer": candidate, "source": source}
        timed_out: list[str] = []
        for pattern in references:
            compiled = compile_pattern(pattern, flags, spec.regex_timeout_s, NAME)
            try:
                hit = (
                    compiled.search(candidate)
                    if spec.regex_search
                    else compiled.fullmatch(candidate)
                )
            except RegexTimeout:
                # Model text that makes the pattern backtrack past the budget has not matched:
                # a fail, never an abstain the model could aim for.
                timed_out.append(pattern)
                details["timed_out"] = timed_out
                continue
            if hit is not None:
                details["matched"] = pattern
                return Result.scored(1.0, feedback="correct", details=details)
        how = "contain a match of" if spec.regex_search else "match"
        shown = (
            " or ".join(quote(p) for p in references) if spec.reveal_reference else "the pattern"
        )
        return Result.failed(
            f"answer {quote(candidate)} (from {source}) does not {how} {shown}", details=details
        )

    def _choice(self, text: str, references: list[str], spec: ExactSpec) -> Result:
        letters = spec.choices.upper()
        if not letters.isalpha() or len(set(letters)) != len(letters):
            raise BadInput(f"{NAME}: choices must be distinct letters, got {spec.choices!r}")
        wanted: list[str] = []
        for reference in references:
            letter = reference.strip().strip("()[].").strip().upper()
            if len(letter) != 1 or letter not in letters:
                raise BadInput(
                    f"{NAME}: choice reference {quote(reference)} is not one of {letters}"
                )
            wanted.append(letter)
        if spec.strip_thinking:
            text = strip_thinking(text)
        # The same turn as every answer verifier reads: a letter after a chat-template token
        # belongs to a turn the model made up.
        chosen, source, hedged = extract_choice(end_of_turn(text), letters)
        details: dict[str, object] = {"choice": chosen, "source": source}
        if chosen is None:
            return Result.failed(
                f"could not find a choice among {', '.join(letters)}: answer like 'The answer is (B)'",
                details=details,
            )
        if hedged:
            details["hedged"] = True
            return Result.failed(
                f"several choices given ({source}); give exactly one letter", details=details
            )
        if chosen in wanted:
            return Result.scored(1.0, feedback="correct", details=details)
        expected = (
            f"expected {' or '.join(wanted)}, " if spec.reveal_reference else "wrong answer: "
        )
        return Result.failed(f"{expected}got {chosen} (from {source})", details=details)


def _other_side_by_side(text: str, source: str, spec: ExactSpec) -> tuple[str, str] | None:
    """An earlier box (or ``<answer>`` tag) side by side with the last that says something
    else, with the last: ``("Paris", "London")`` for ``\\boxed{Paris} or \\boxed{London}``.
    Read in the same turn as :func:`extract_answer` (thinking stripped, ended at a turn
    token); a repeat of the same answer is one answer."""
    if spec.strip_thinking:
        text = strip_thinking(text)
    text = end_of_turn(text)
    run = (
        tags_side_by_side(text)
        if source == "answer_tag"
        else boxes_side_by_side(text, boxed_spans(text))
    )
    if not run:
        return None
    opts = {
        "ignore_case": spec.ignore_case,
        "ignore_punctuation": spec.ignore_punctuation,
        "ignore_articles": spec.ignore_articles,
    }
    last = normalize_text(run[-1], **opts)
    for other in run[:-1]:
        if normalize_text(other, **opts) != last:
            return other, run[-1]
    return None


def _choice_patterns_ready(letters: str) -> None:
    if letters not in _CHOICE_CACHE:
        _CHOICE_CACHE[letters] = _choice_patterns(letters)


def _expected(references: list[str], spec: AnswerSpec) -> str:
    if not spec.reveal_reference:
        return "wrong answer: "
    if len(references) == 1:
        return f"expected {quote(references[0])}, "
    return f"expected one of {', '.join(quote(r) for r in references[:5])}, "
