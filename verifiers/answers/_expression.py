"""Is a number found in an answer the answer, or one operand of an expression?

``answer.numeric`` reads a number out of a place (a ``\\boxed{}``, an ``<answer>`` tag, the
"answer is" phrase, the last line) that may hold more than a number. A number with a unit or a
remark (``42 m^2``, ``3 apples``, ``42 (from 6 x 7)``) is that number; but the first (or
last) number of an *expression* is not what the expression is worth: ``\\sqrt{2}`` is not 2,
``2\\sqrt{3}``, ``4\\pi``, ``5!``, ``2x``, ``2 + 3`` are not 2, 4, 5, 2, 2; juxtaposed digit
groups (``1 000``, ``1'000``, ``1 1/2``, ``1,5``) are not 1 or 5; ``0x10``, ``0b101`` are not 0.
Reading them so was a live reward hack (``\\boxed{\\sqrt{2}}`` passed a reference of 2).

:func:`lone_number` looks only at the few characters either side of the number, in the text
as :func:`._numbers.normalize_numeric_text` leaves it (LaTeX fractions, ``\\times 10^k``,
powers of plain numbers and thousands separators already folded into the number), so it is
linear: each call reads a bounded window.

What may stand before the number: nothing, spaces, ``$``, ``~``, a text wrapper
(``\\text{``, ``\\mathrm{``, ``\\boxed{`` ...), or prose (a word that is not a function or
operator name). After it: nothing, spaces, closing braces, a unit or a remark (a word, a
``\\text{}``, a parenthesis opening with a word), a comma or full stop that is not followed
by a digit. Anything else (an operator, a function, a constant, a LaTeX command, another
digit group, a letter glued to the digits) makes it an expression.
"""

from __future__ import annotations

import re

__all__ = ["EXPRESSION", "MARKED", "QUALIFIED", "lone_number", "number_problem"]

EXPRESSION = "expression"
"""The number is one operand of an expression (``\\sqrt{2}``, ``4\\pi``, ``1 000``)."""
QUALIFIED = "qualified"
"""A word or mark next to the number takes the claim back or bounds it: ``not 2``, ``at least
2``, ``maybe 2``, ``2?``, ``2 or more``. The number is not stated as the answer."""
MARKED = "marked"
"""A combining mark sits on the digits (``2\u0338`` shows a struck-through 2, "not 2"):
what a reader sees is not the plain number."""

WINDOW = 80
"""Characters read either side of the number (the decision is local, so linear overall)."""

_OPERATOR_CHARS = frozenset("+-*/^!×·⋅∙∗÷√∛∜|_<>≤≥∞=‰‱&")
"""A number next to one of these is an operand (``=`` only after it: "x = 5" states 5;
``‰`` and ``‱`` are per mille and per ten thousand, not percent; ``&`` joins two)."""

_RELATIONS = frozenset("=≈≃")
_RELATION_COMMANDS = frozenset(("approx", "simeq", "sim"))
"""What may stand before a stated value ("x = 5", "x \\approx 5")."""

_FUNCTION_WORDS = frozenset(
    (
        "pi e i sqrt cbrt root ln log lg exp sin cos tan cot sec csc arcsin arccos arctan "
        "sinh cosh tanh inf infty infinity nan factorial squared cubed choose binom"
    ).split()
)
"""Words that make the number next to them part of an expression (``2 pi``, ``2e``,
``log 2``, ``5 squared``, ``5 choose 2``)."""

_OPERATOR_WORDS = frozenset("x times plus minus over divided by mod modulo".split())
"""Words that are operators between two numbers (``2 x 3``, ``6 divided by 2``)."""

_VARIABLES = frozenset("x y z".split())
"""Letters that, after a number, make it a coefficient (``2 x``), not a unit."""

_TEXT_COMMANDS = frozenset(
    (
        "text textrm textbf textit textnormal textsf mathrm mathbf mathit mathsf mbox "
        "boxed fbox displaystyle textstyle rm bf"
    ).split()
)
"""Commands that wrap a number or a unit without changing its value."""

_SPACING_COMMANDS = frozenset(("quad", "qquad", ";", ":", " ", "!", ",", "degree"))
"""Spacing (and the degree sign), which change nothing about the number."""

_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
"""Combining marks (diacritics, overlays such as U+0338 and U+20E5, enclosing marks)."""
_QUALIFIER_BEFORE = re.compile(
    r"(?:\b(?:not|no|never|least|most|than|maybe|perhaps|possibly|probably|except|unless)"
    r"|n't|[≠≥≤]|(?:^|(?<=\s))[<>]|\\(?:neq?|not|[gl]eq?q?|[gl]t|geqslant|leqslant))\s*[$(\[{]?\s*$",
    re.IGNORECASE,
)
"""A word or sign right before the number that takes it back or bounds it."""
_QUALIFIER_AFTER = re.compile(
    r"(?:[\s}$~(]|\\(?:text|mathrm|mbox|textbf)\s*\{)*(?:\?|or\s+(?:more|less|fewer|greater|higher|lower|above|below|so)\b"
    r"|at\s+(?:most|least)\b|(?:maybe|perhaps|possibly|probably)\b)",
    re.IGNORECASE,
)
_CLOSER = re.compile(r"\s*[)\]]")
_DIGIT_GROUP = re.compile(r"\d{3}")
_TAG_BEFORE = re.compile(r"</?[A-Za-z][\w-]{0,20}\s*>$")
_TAG_AFTER = re.compile(r"</?[A-Za-z][\w-]{0,20}\s*>")
"""An HTML/XML tag (``<answer>42``, ``42</b>``) bounds the number like a space."""
_EMPHASIS_BEFORE = re.compile(r"(?:^|(?<=[\s(]))[*_]{1,3}$")
_EMPHASIS_AFTER = re.compile(r"[*_]{1,3}(?=$|[\s.,;:!?)])")
"""Markdown emphasis around the number (``**42**``, ``_42_``) is not a product."""
_COMMAND_BEFORE = re.compile(r"\\([A-Za-z]+|.)\s*$")
_COMMAND_AFTER = re.compile(r"\\([A-Za-z]+|.)")
_WORD_BEFORE = re.compile(r"([^\W\d_]+)\s*$")
_WORD_AFTER = re.compile(r"[^\W\d_]+")
_ALNUM_AFTER = re.compile(r"[^\W_]+")


def lone_number(text: str, start: int, end: int) -> bool:
    """Whether the number at ``text[start:end]`` stands alone (see the module docstring)."""
    return number_problem(text, start, end) is None


def number_problem(text: str, start: int, end: int) -> str | None:
    """Why the number at ``text[start:end]`` is not the answer, or None when it stands alone.

    ``text`` is normalised answer text; ``start``/``end`` are the span of one number match
    (sign, currency, accounting parentheses, percent and scale word included). Returns
    :data:`EXPRESSION`, :data:`QUALIFIED` or :data:`MARKED`."""
    # A window cut inside the text starts with a mark that no rule reads as a boundary, so
    # "^" in a pattern means the start of the answer, never a cut mid-tag ("b><b>5").
    lead = ("\x00" if start > WINDOW else "") + text[max(0, start - WINDOW) : start]
    tail = text[end : end + WINDOW]
    matched = text[start:end]
    if _COMBINING.match(tail) or _COMBINING.search(matched):
        return MARKED
    if _QUALIFIER_BEFORE.search(_without_tags(lead)) or _QUALIFIER_AFTER.match(tail):
        return QUALIFIED
    if not (_lead_ok(lead, matched, tail) and _tail_ok(tail, matched)):
        return EXPRESSION
    return None


def _without_tags(lead: str) -> str:
    """``lead`` without the HTML/XML tags that end it (``<answer>`` is not a ``>`` sign)."""
    while True:
        stripped = lead.rstrip()
        tag = _TAG_BEFORE.search(stripped)
        if tag is None:
            return lead
        lead = stripped[: tag.start()]


def _lead_ok(lead: str, matched: str, tail: str) -> bool:
    while True:
        stripped = lead.rstrip(" \t~$")
        if _TAG_BEFORE.search(stripped):
            return True  # "<answer>42", "41</s>42": a tag ends what came before
        wrapper = _EMPHASIS_BEFORE.search(stripped)
        if wrapper is not None:
            lead = stripped[: wrapper.start()]
            continue
        if stripped[-1:] in ("(", "[") and _CLOSER.match(tail):
            # "[[42]]", "(42)": a bracketed number; what stands before the brackets decides
            # (``\sqrt[3]{8}`` is still a root).
            lead = stripped.rstrip("([ \t")
            if not lead:
                return True
            continue
        if stripped.endswith("{"):
            # A group opened right before the number: a text wrapper, or a bare ``{``, is
            # harmless; ``\sqrt{``, ``\frac{..}{``, ``^{``, ``\underbrace{`` are not.
            before = stripped[:-1]
            command = _COMMAND_BEFORE.search(before)
            if command is not None and command.group(1) in _TEXT_COMMANDS:
                lead = before[: command.start()]
                continue
            if before.rstrip() and before.rstrip()[-1] in "}]^_)\\":
                return False
            if command is not None:
                return False
            lead = before
            continue
        command = _COMMAND_BEFORE.search(stripped)
        if command is not None and command.group(0).startswith("\\"):
            name = command.group(1)
            if name in _RELATION_COMMANDS:
                return True
            if name in _SPACING_COMMANDS or name in _TEXT_COMMANDS:
                lead = stripped[: command.start()]
                continue
            return False  # \sqrt2, \log 2, \pi 2, \cdot 3, \frac12 left unfolded
        break
    if not stripped:
        return True
    last = stripped[-1]
    signed = matched[:1] in "+-"
    if last in _RELATIONS:
        return True
    if last in _OPERATOR_CHARS or last in "([":
        return False
    if last == "}" and _closes_text_group(stripped):
        return True  # "\text{Answer: } 5": prose in a wrapper
    if last.isdigit():
        # "1 000", "1\u2009000": the number is a second digit group. Other numbers after a
        # number and a space are prose or a list ("9 9 9 42"), judged by their own place.
        return not (stripped == lead[:-1] and _DIGIT_GROUP.fullmatch(matched))
    if last in "}])":
        # "\sqrt{2} 3", "(a+b) 3", "x) - 3"
        return False
    if last in ",." and len(stripped) > 1 and stripped[-2].isdigit() and lead[-1:] in ",.":
        # "1,5" or "1.000.000": the number is the tail of a digit group, not a number
        return False
    if last == "'" or last in "’′":
        return not (len(stripped) > 1 and stripped[-2].isdigit())
    word = _WORD_BEFORE.search(stripped)
    if word is not None:
        name = word.group(1)
        if name.lower() in _FUNCTION_WORDS or name.lower() in _OPERATOR_WORDS:
            return False  # "log 2", "sqrt 2", "2 x 3", "6 divided by 3"
        if signed and (len(name) == 1 or matched[1:2].isspace()):
            return False  # "a - 3", "x + 3": the sign is a binary operator
        if matched.startswith("(") and lead[-1:] == name[-1:]:
            return False  # "f(3)": a function applied to 3
    return True


def _tail_ok(tail: str, matched: str) -> bool:
    attached = True  # nothing between the number and what follows
    pos = 0
    n = len(tail)
    while pos < n:
        ch = tail[pos]
        if ch in " \t~${}" or (ch == "," and tail.startswith("\\", pos + 1)):
            # spaces, braces, and "\," (a thin space, read as "," by the normaliser)
            attached = False
            pos += 1
            continue
        if _TAG_AFTER.match(tail, pos):
            return True  # "42</answer>", "42</s>41": a tag ends the answer
        wrapper = _EMPHASIS_AFTER.match(tail, pos)
        if wrapper is not None:
            attached = False
            pos = wrapper.end()
            continue
        if ch == "\\":
            command = _COMMAND_AFTER.match(tail, pos)
            assert command is not None
            name = command.group(1)
            if name in _SPACING_COMMANDS or name in _TEXT_COMMANDS:
                pos = command.end()
                if tail.startswith("{", pos):
                    pos += 1
                attached = False
                continue
            return False  # \pi, \sqrt, \cdot, \times, \frac, \approx, \pm ...
        break
    rest = tail[pos:]
    if not rest:
        return True
    first = rest[0]
    if first == "^":
        # A power left in the text belongs to what precedes it: a unit's (``5 m^2``, ``5m^2``)
        # is fine; a power of the number itself would have been folded or dropped, so a power
        # right after digits or a bracket (``(2)^x``) makes an expression.
        return not attached or matched[-1:].isalpha()
    if first in _OPERATOR_CHARS:
        if first == "-" and rest[1:2].isalpha() and attached:
            return True  # "5-fold", "3-digit": a compound word
        return False
    if first.isdigit():
        return False  # "1 000", "3 1/2", "2 3": juxtaposed digit groups
    if first in ",.'’′" and rest[1:2].isdigit():
        return False  # "1'000", "1.000.000", "2.3.4"
    if first in "([":
        inner = rest[1:].lstrip()
        word = _WORD_AFTER.match(inner)
        # "42 (from 6 x 7)" is a remark; "2(3)", "2(x+1)", "2 (3)" are products.
        return word is not None and len(word.group(0)) > 1 and not _is_math_word(word.group(0))
    alnum = _ALNUM_AFTER.match(rest)
    if alnum is None:
        return True  # "°", a quote, a colon: a mark, not an operand
    run = alnum.group(0)
    word = _WORD_AFTER.match(rest)
    letters = word.group(0) if word is not None else ""
    if not letters:
        return True
    if _is_math_word(letters):
        return False  # "2pi", "2 e", "2 sqrt 3", "5 factorial", "2π"
    if attached:
        if len(letters) == 1 or run != letters:
            return False  # "2x", "3e", "2i", "0x10", "0xff", "0b101", "2sqrt3"
        if matched.endswith("0") and letters[0] in "xXbBoO" and matched.lstrip("+-") == "0":
            return False  # "0xff", "0bff": hex/binary/octal prefixes
    if letters.lower() in _VARIABLES:
        return False  # "2 x", "3 n": a coefficient, not a unit
    if letters.lower() in _OPERATOR_WORDS:
        after = rest[len(letters) :].lstrip(" \t}$~")
        if after[:3].lower() == "by ":
            after = after[3:].lstrip()
        if after[:1].isdigit() or after[:1] in "+-(\\.":
            return False  # "2 times 3", "6 divided by 2", "5 mod 3"
    return True


def _closes_text_group(lead: str) -> bool:
    """Whether ``lead`` ends with a ``\\text{...}``-like group (matched within the window)."""
    depth = 0
    for pos in range(len(lead) - 1, -1, -1):
        ch = lead[pos]
        if ch == "}":
            depth += 1
        elif ch == "{":
            depth -= 1
            if depth == 0:
                command = _COMMAND_BEFORE.search(lead[:pos])
                return command is not None and command.group(1) in _TEXT_COMMANDS
    return False


def _is_math_word(word: str) -> bool:
    return word.lower() in _FUNCTION_WORDS
