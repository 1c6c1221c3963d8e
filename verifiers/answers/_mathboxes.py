"""Several ``\\boxed{}`` at the end of a math answer: one answer in parts, or a hedge.

Models box each part of a multi-part answer: ``\\boxed{2} and \\boxed{3}``,
``\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}``, ``\\boxed{k = 45}, \\boxed{n = 2}``.
Reading only the last box fails every such answer against its reference. Users coming from
Math-Verify expect the rule it applies, which this module follows in its own code: the last
box, plus each earlier box that is *close* to the group (fewer than 10 characters apart, or
fewer than 70 with a separator "and", "or", ``,`` or ``;`` between them and a different
content). The boxes of a group are joined with ``,``, so they are compared as a list: a hedge
(``\\boxed{2} or \\boxed{3}`` for reference ``2``) offers two values and fails. A box far from
the end (a discarded attempt earlier in the text) is not part of the answer.

Linear in the text: the boxes come from :func:`verifiers.answers._locate.boxed_spans`, the
one brace scanner every answer verifier shares (a box inside a box is part of the outer one's
content, not a separate part).
"""

from __future__ import annotations

import re

from ._locate import boxed_spans

__all__ = ["MAX_BOXES", "boxed_group", "last_math_segment", "sentence_number"]

MAX_BOXES = 50
"""Most boxes joined into one answer; the group keeps the last ones."""

_SEPARATOR = re.compile(r"\b(?:and|or)\b|[,;]")


def _boxes(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of every top-level box, in order, content stripped."""
    return [(start, end, content.strip()) for start, end, content in boxed_spans(text)]


def boxed_group(text: str) -> str | None:
    """The final group of boxes joined with ``", "``, or None when there is no box."""
    boxes = _boxes(text)
    if not boxes:
        return None
    group = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        if len(group) >= MAX_BOXES:
            break
        nxt = group[-1]
        between = text[box[1] + 1 : nxt[0]]
        close = len(between) < 10 or (
            len(between) < 70 and box[2] != nxt[2] and _SEPARATOR.search(between) is not None
        )
        if not close:
            break
        if box[2] != nxt[2]:
            group.append(box)
        else:
            group[-1] = box  # the same content boxed twice counts once
    contents = [content for _, _, content in reversed(group)]
    return ", ".join(contents)


_MATH_SEGMENT = re.compile(
    r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<!\\)\$((?:[^$\n\\]|\\.)+?)\$",
    re.S,
)
"""A ``$...$``, ``$$...$$``, ``\\(...\\)`` or ``\\[...\\]`` formula; ``\\$`` (a dollar sign
written in the math) is not a delimiter."""
MAX_REGION_CHARS = 4_000
_IS_VALUE = re.compile(r"^.*\b(?:is|are|equals|be)\s+([^\s][^\n]{0,200}?)\s*[.!]?\s*$", re.S)
"""Only the tail of a long region is searched for a formula (the search is linear anyway)."""


def _segments(text: str) -> list[tuple[int, str]]:
    out = []
    for match in _MATH_SEGMENT.finditer(text):
        inner = next(g for g in match.groups() if g is not None).strip()
        if inner:
            out.append((match.end(), inner))
    return out


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[$\\])|\n+")
_BOILERPLATE = re.compile(r"^\s*I hope (?:it|this) is correct\W*$", re.I)
_SENTENCE_NUMBER = re.compile(
    r"(?<![\w.,/^_{])-?\d+(?:,\d{3})*(?:[.,]\d+)?(?:\s*/\s*\d+)?(?:\s*\\?%)?"
)
_QUALIFIERS = re.compile(
    r"\b(?:not|no|never|except|least|most|than|about|around|approximately|roughly|nearly|"
    r"almost|between|or|either|neither|nor|maybe|perhaps|possibly|probably|if|unless|instead|"
    r"over|under|up to|wrong|incorrect|false|impossible|cannot|none|nothing|neq|ne)\b"
    r"|n't\b|[≠<>≤≥≈~?]",
    re.I,
)
"""Words (and signs) that make a sentence's number something other than the answer: a
negation, a bound, an approximation, an alternative, a condition, a doubt."""
MAX_SENTENCE_CHARS = 300
"""A sentence longer than this is not searched for its one number."""


def _last_sentence(text: str) -> str:
    sentences = [p for p in _SENTENCE_SPLIT.split(text[-MAX_REGION_CHARS:]) if p.strip()]
    for sentence in reversed(sentences):
        if not _BOILERPLATE.match(sentence):
            return sentence
    return ""


_CLAUSE_START = re.compile(r"[,;:.!?]|\b(?:which|that|so|therefore|thus|hence|then)\b", re.I)


def _clause(text: str, value_at: int) -> str:
    """The clause that states the value at ``value_at``: from the last clause boundary
    before it ("the number is not 10 which is 1,000.99": "which is 1,000.99")."""
    start = 0
    for match in _CLAUSE_START.finditer(text, max(0, value_at - MAX_SENTENCE_CHARS), value_at):
        start = match.end()
    return text[start:]


def _qualified(text: str) -> bool:
    """Whether the last sentence qualifies its value (see :data:`_QUALIFIERS`), formulas
    aside (``$x < 5$`` is an answer, not a bound on one)."""
    return _QUALIFIERS.search(_MATH_SEGMENT.sub(" ", _last_sentence(text))) is not None


def sentence_number(text: str) -> str | None:
    """The one number of the last sentence that has numbers ("Therefore, there are 12
    distinct sequences.", "Jane started growing it 3 hours ago."), as a reader takes it.

    Only a sentence with exactly one number and no word that qualifies it ("not 5", "at
    least 5", "5 or 6", "about 5", "x < 5") gives a value, so a hedge or a bound never reads
    as an answer. Boilerplate closers ("I hope it is correct.") are skipped. Linear: one
    split of the tail (:data:`MAX_REGION_CHARS`) and one scan of one sentence."""
    sentences = [p for p in _SENTENCE_SPLIT.split(text[-MAX_REGION_CHARS:]) if p.strip()]
    for sentence in reversed(sentences):
        if _BOILERPLATE.match(sentence):
            continue
        if not re.search(r"\d", sentence):
            return None
        if len(sentence) > MAX_SENTENCE_CHARS or _QUALIFIERS.search(sentence):
            return None
        found = _SENTENCE_NUMBER.findall(sentence)
        if len(found) != 1 or re.search(r"\d[A-Za-z]|[A-Za-z]\d", sentence):
            return None
        return str(found[0]).replace(" ", "")
    return None


def last_math_segment(answer: str, region: str, *, sentences: bool = False) -> list[str]:
    """The formula a reader takes as the answer of a sentence ("Therefore $x \\geq 5$ is
    the solution."): the one distinct ``$...$`` / ``$$...$$`` / ``\\(...\\)`` /
    ``\\[...\\]`` formula in ``answer``; or, when ``answer`` has none, the formula that ends
    ``region`` (the text the answer came from). Several different formulas in the answer
    ("$5$ or maybe $6$") are a hedge: no fallback. With ``sentences`` (an answer read from
    prose: the last line or an answer phrase, never a box), the one number of the last
    sentence is tried last (see :func:`sentence_number`). Empty when there is nothing to
    try."""
    out: list[str] = []
    answer = answer[-MAX_REGION_CHARS:]
    tail = _IS_VALUE.search(answer)
    if tail is not None and _qualified(_clause(answer, tail.start(1))):
        tail = None  # "I don't think it is 5.": a doubted value is no answer
    if tail is not None and re.search(r"[\d$]", tail.group(1)):
        # "The largest $n$ is 34.": the value after the sentence's last "is".
        out.append(tail.group(1).strip())
    found = _segments(answer)
    if found:
        distinct = {inner for _, inner in found}
        if len(distinct) == 1 and found[0][1] != answer.strip():
            out.append(found[0][1])
        number = sentence_number(answer) if sentences else None
        if number is not None:
            out.append(number)
        return out
    number = sentence_number(answer) if sentences else None
    if number is not None:
        out.append(number)
    tail_text = region[-MAX_REGION_CHARS:]
    found = _segments(tail_text)
    if found and len(tail_text[found[-1][0] :].strip(" \t\n.;:!")) == 0:
        out.append(found[-1][1])
    return out
