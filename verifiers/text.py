"""Getting at the text a verifier judges.

The completion, the last fenced code block, and the text as a reader sees it
(:func:`visible_text`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Any

from .types import Message, Trajectory

__all__ = ["completion_text", "last_code_block", "message_text", "prompt_text", "visible_text"]

_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*\n(.*?)^\1?\2[ \t]*$", re.M | re.S)


def message_text(content: str | list[Any] | None) -> str:
    """Text of a message's content: a string, or the ``text`` parts of a parts list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "".join(parts)


def _last_of_role(messages: list[Message], role: str) -> str:
    for msg in reversed(messages):
        if msg.role == role:
            return message_text(msg.content)
    return ""


def completion_text(trajectory: Trajectory) -> str:
    """The completion as text; for chat, the last assistant message."""
    completion = trajectory.completion
    if isinstance(completion, str):
        return completion
    return _last_of_role(completion, "assistant")


def prompt_text(trajectory: Trajectory) -> str:
    """The prompt as text; for chat, the last user message."""
    prompt = trajectory.prompt
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return _last_of_role(prompt, "user")


_FENCE_LINE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\n]*)", re.M)
_CLOSE_REST = re.compile(r"[ \t]*")
_TAG = re.compile(r"[ \t]*([^\s`]*)")


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    r"""``(tag, body)`` of every fenced block, as ``_FENCE.finditer`` reads them.

    In O(n log n): the regex rescans the rest of the text from every unclosed opening fence
    (``"```a\n" * n`` is quadratic), this looks each closing line up in an index.

    An opening line ``<indent><fence><info>`` (fence: 3+ backticks or tildes) closes at the
    first later line that is ``<indent or nothing><the same fence>`` plus spaces; a fence
    of k characters may also open as any shorter one (the regex backtracks into it).
    """
    fences = list(_FENCE_LINE.finditer(text))
    closes: dict[tuple[str, str], list[int]] = {}
    for index, match in enumerate(fences):
        if _CLOSE_REST.fullmatch(match.group(3)):
            closes.setdefault((match.group(1), match.group(2)), []).append(index)

    def first_close(indent: str, fence: str, after: int) -> int | None:
        best: int | None = None
        for key in {(indent, fence), ("", fence)}:
            found = closes.get(key)
            if found:
                at = bisect.bisect_right(found, after)
                if at < len(found) and (best is None or found[at] < best):
                    best = found[at]
        return best

    blocks: list[tuple[str, str]] = []
    index = 0
    size_text = len(text)
    while index < len(fences):
        match = fences[index]
        if match.end() >= size_text:  # an opening line needs its newline
            break
        indent, fence = match.group(1), match.group(2)
        found: tuple[int, str] | None = None
        for size in range(len(fence), 2, -1):
            close = first_close(indent, fence[:size], index)
            if close is not None:
                tag = _TAG.match(fence[size:] + match.group(3))
                found = (close, tag.group(1) if tag else "")
                break
        if found is None:
            index += 1
            continue
        close, tag_text = found
        blocks.append((tag_text.lower(), text[match.end() + 1 : fences[close].start()]))
        index = close + 1
    return blocks


def last_code_block(text: str, language: str | None = None) -> str | None:
    r"""The body of the last fenced block (``` or ~~~), preferring blocks tagged ``language``.

    Untagged blocks count as a match for any language. Returns None when there is no
    fenced block at all (callers then usually fall back to the whole text).

    Example:
        >>> text = "```python\nprint(1)\n```\nand\n```bash\nls\n```"
        >>> last_code_block(text, "python")
        'print(1)\n'
        >>> last_code_block("no code here") is None
        True
    """
    blocks = _fenced_blocks(text)
    if not blocks:
        # An unterminated final fence (the model ran out of tokens): take what follows it.
        open_fence = re.search(
            r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*\n(.*)\Z", text, re.M | re.S
        )
        if open_fence is None:
            return None
        return open_fence.group(3)
    if language:
        lang = language.lower()
        aliases = {lang, {"python": "py", "py": "python"}.get(lang, lang)}
        tagged = [body for tag, body in blocks if tag in aliases]
        if tagged:
            return tagged[-1]
        untagged = [body for tag, body in blocks if not tag]
        if untagged:
            return untagged[-1]
    return blocks[-1][1]


# -- what a reader sees ------------------------------------------------------------------------

DASHES = (
    "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u02d7\u2796\ufe58\ufe63\uff0d\u2e3a\u2e3b"
)
"""Hyphens, dashes and minus signs that read as ``-`` (U+2010 hyphen, en/em dash, minus ...)."""


def _script_table(ranges: list[tuple[int, int]], tag: str) -> dict[int, str]:
    table: dict[int, str] = {}
    for low, high in ranges:
        for code in range(low, high + 1):
            decomposition = unicodedata.decomposition(chr(code))
            if decomposition.startswith(tag):
                plain = unicodedata.normalize("NFKC", chr(code))
                table[code] = "-" if plain == "\u2212" else plain
    return table


_SUP = _script_table(
    [(0xB2, 0xB9), (0x2B0, 0x2B8), (0x2E0, 0x2E4), (0x1D2C, 0x1D6A), (0x1D78, 0x1D78),
     (0x1D9B, 0x1DBF), (0x2070, 0x207F), (0x2C7D, 0x2C7D), (0xA69C, 0xA69D), (0xA770, 0xA770),
     (0xA7F8, 0xA7F9), (0xAB5C, 0xAB5F)],
    "<super>",
)  # fmt: skip
_SUB = _script_table([(0x1D62, 0x1D6A), (0x2080, 0x209C), (0x2C7C, 0x2C7C)], "<sub>")
_SCRIPT_RUN = re.compile(
    "([" + "".join(map(chr, _SUP)) + "]+)|([" + "".join(map(chr, _SUB)) + "]+)"
)
"""Superscript and subscript characters (digits, signs, letters such as ``ˣ`` and ``ⁿ``),
from their Unicode ``<super>``/``<sub>`` decompositions."""

_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]+"
)
"""Drawn as nothing: the format characters (``Cf``: zero-width space/joiners, soft hyphen,
bidi controls, word joiner, invisible operators, BOM, tag characters) other than the visible
Arabic number signs, plus the combining grapheme joiner, Hangul fillers, Khmer inherent vowels
and variation selectors. One C-level regex pass."""

_VULGAR = re.compile("(?<=\\d)([\u00bc-\u00be\u2150-\u215e\u2189])")

# Latin look-alikes in Cyrillic and Greek, folded only inside a word that also has Latin
# letters or consists of look-alikes only ("аnswer" with a Cyrillic а is "answer" to a reader;
# "привет" stays as it is).
_CONFUSABLE = str.maketrans(
    "аеорсуххіјѕԁԛԝһӏАВЕКМНОРСТХУІЈЅοονιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxxijsdqwhlABEKMHOPCTXYIJSoovlABEZHIKMNOPTYX",
)
_CONFUSABLE_CHARS = frozenset("аеорсухіјѕԁԛԝһӏАВЕКМНОРСТХУІЈЅονιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_WORD = re.compile(r"[^\W\d_]+")

MAX_VISIBLE_CHARS = 2_000_000
""":func:`visible_text` reads at most this many characters (the head is kept); it is linear."""


def _scripts(match: re.Match[str]) -> str:
    sup, sub = match.group(1), match.group(2)
    run = "".join((_SUP if sup else _SUB)[ord(c)] for c in (sup or sub))
    mark = "^" if sup else "_"
    return f"{mark}{run}" if len(run) == 1 else f"{mark}{{{run}}}"


def _fold_word(match: re.Match[str]) -> str:
    word = match.group(0)
    if not any(c in _CONFUSABLE_CHARS for c in word):
        return word
    latin = any("a" <= c.lower() <= "z" for c in word)
    if latin or all(c in _CONFUSABLE_CHARS for c in word):
        return word.translate(_CONFUSABLE)
    return word


def visible_text(text: str, *, confusables: bool = False) -> str:
    """``text`` as a reader sees it: the one normalisation answer verifiers share.

    - invisible characters are dropped (format characters such as zero-width spaces and
      joiners, soft hyphens, bidi controls, tag characters; variation selectors; fillers), so
      ``ans\u200bwer`` cannot dodge a forbidden pattern or split a number;
    - every hyphen, dash and minus sign reads as ``-`` (U+2010 ``‐5`` is minus five);
    - superscripts and subscripts stay exponents and indices: ``2⁵`` reads ``2^5`` (not 25),
      ``10⁻³`` reads ``10^{-3}``, ``x₁`` reads ``x_1``;
    - then NFKC (full-width digits and letters, ligatures, non-breaking spaces; ``½`` becomes
      ``1/2``);
    - with ``confusables``, Cyrillic/Greek letters drawn like Latin ones are read as Latin
      inside a word that mixes them with Latin letters (or is made only of them).

    ASCII text is returned unchanged at the cost of one check. Linear in ``len(text)``.
    """
    if text.isascii():
        return text
    if len(text) > MAX_VISIBLE_CHARS:
        text = text[:MAX_VISIBLE_CHARS]
    text = _INVISIBLE.sub("", text)
    text = text.translate(_DASH_MAP)
    text = _VULGAR.sub(r" \1", text)  # "12½" is twelve and a half, never "121/2"
    text = _SCRIPT_RUN.sub(_scripts, text)
    text = unicodedata.normalize("NFKC", text).replace("\u2044", "/")
    if confusables and not text.isascii():
        text = _WORD.sub(_fold_word, text)
    return text


_DASH_MAP = dict.fromkeys(map(ord, DASHES), "-")
