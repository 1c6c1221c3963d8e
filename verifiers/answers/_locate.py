"""Finding the final answer inside a model's completion.

Models wrap their final answer in many ways: ``\\boxed{42}``, ``<answer>42</answer>``,
"The answer is 42.", "**Final Answer:** 42", or just a last line. Every answer verifier
shares these helpers so that one trajectory is read the same way by all of them.

All functions here are linear-time over the text (no backtracking-prone patterns): they run
on untrusted model output inside the engine's event loop.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

__all__ = [
    "CHAT_TURN_TOKENS",
    "Extract",
    "answer_phrase",
    "answer_tag",
    "boxed_all",
    "boxed_spans",
    "boxes_side_by_side",
    "end_of_turn",
    "extract_answer",
    "final_answer_after",
    "last_line",
    "strip_thinking",
    "tags_side_by_side",
    "unwrap_latex",
]

Extract = Literal["auto", "boxed", "answer_tag", "answer_phrase", "last_line", "full"]
"""Where the answer is taken from: ``auto`` tries ``answer_tag``, ``boxed``, ``answer_phrase``
and ``last_line`` in that order; the others use one place only; ``full`` takes the whole text."""

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*")
# "The final answer is: X", "Answer: X", "**Final Answer**: X", "答案: X". The value runs to
# the end of its line; callers trim sentence punctuation.
_PHRASE = re.compile(
    r"(?:answer|option|choice)(?![\w])(?:[ \t]*\*\*)?"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be)\b[ \t]*[:：]?|[ \t]*[:：=])"
    r"[ \t]*(?:\*\*)?[ \t]*(?P<value>[^\n]*)",
    re.I,
)
"""Matched at a keyword found by :func:`answer_phrase` ("answer", or "option"/"choice" after
"correct"), so the scan costs one ``str.rfind`` per occurrence instead of a regex attempt at
every position of a long chain of thought."""
_THINK_END = re.compile(r"</\s*think(?:ing)?\s*>", re.I)
_THINK_OPEN = re.compile(r"<\s*think(?:ing)?(?:\s[^<>]{0,200})?>", re.I)


def strip_thinking(text: str) -> str:
    """The text after the last ``</think>``; the whole text when there is no think block.

    Reasoning models put scratch work (with many candidate answers) in a think block; the
    answer is what follows it. ``<think>``, ``<thinking>`` and any letter case count, with
    spaces or attributes inside the tag (``<THINK>``, ``<Thinking>``, ``< think >``).

    A think block that was opened and never closed means the model ran out of tokens while
    thinking (or hopes its scratch work is read as the answer): only what came before the
    opening tag counts, usually nothing, so no answer is found and the item fails. A closed
    block with nothing after it is read instead of the empty tail: the model put its answer
    inside. Linear: one pass per tag pattern.
    """
    last = None
    for match in _THINK_END.finditer(text):
        last = match
    start = -1
    for match in _THINK_OPEN.finditer(text, last.end() if last is not None else 0):
        start = match.start()
        break
    if start >= 0:
        return text[:start] if last is None else text[last.end() : start]
    if last is None:
        return text
    tail = text[last.end() :]
    return tail if tail.strip() else text[: last.start()]


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` / ``\\fbox{...}`` in order, braces balanced.

    ``\\boxed 5`` (no braces, one token) is also accepted. An unbalanced box (the model ran
    out of tokens) yields what follows it, and ends the scan: every later box is inside it.
    One pass over the text (``"\\boxed{" * n`` and ``"\\boxed x " * n`` are linear).
    """
    return [content for _, _, content in boxed_spans(text)]


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of every top-level box, in order (see :func:`boxed_all`).

    ``start`` is the backslash of ``\\boxed``; ``end`` the closing brace (or the end of the
    one-token content, or ``len(text)`` for an unclosed box). A box inside a box is part of
    the outer one's content. Linear: each character is visited once.
    """
    found: list[tuple[int, int, str]] = []
    pos = 0
    size = len(text)
    while True:
        match = _BOXED.search(text, pos)
        if match is None:
            return found
        start = match.end()
        if start < size and text[start] == "{":
            depth = 0
            end = size
            for brace in _BRACE_OR_ESCAPE.finditer(text, start):
                char = brace.group(0)[0]
                if char == "{":
                    depth += 1
                elif char == "}":
                    depth -= 1
                    if depth == 0:
                        end = brace.start()
                        break
            found.append((match.start(), end, text[start + 1 : end]))
            if end >= size:
                return found
            pos = end + 1
        else:
            token = _BOX_TOKEN.match(text, start)
            if token is not None:
                found.append((match.start(), token.end(), token.group(0)))
            pos = start + 1


def boxes_side_by_side(text: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """The contents of the run of boxes that ends with the last one, each joined to the next
    by nothing but a connective; empty unless the run has two boxes or more.

    ``\\boxed{2} or \\boxed{3}``, ``$\\boxed{A}$, $\\boxed{B}$``, ``\\boxed{2}\\boxed{3}``:
    final answers offered side by side are a hedge, and reading the last one would give the
    credit of whichever is right. Any other word between two boxes ("Wait, actually",
    "(b)") ends the run. ``spans`` is :func:`boxed_spans` of ``text``; linear (the text
    between two boxes is read only when short).
    """
    items = [
        (start, end + 1 if text.startswith("}", end) else end, content)
        for start, end, content in spans
    ]
    return _joined_run(text, items)


def _joined_run(text: str, items: list[tuple[int, int, str]]) -> list[str]:
    """Contents of the trailing run of ``(start, end, content)`` items joined by connectives."""
    run = 1
    while run < len(items):
        between = text[items[-run - 1][1] : items[-run][0]]
        if len(between) > MAX_BOX_JOINER or _BOX_JOINER.fullmatch(between) is None:
            break
        run += 1
    return [content for _, _, content in items[-run:]] if run > 1 else []


MAX_BOX_JOINER = 40
"""Longest text between two boxes that can still be a mere connective."""
_BOX_JOINER = re.compile(
    r"[\s$,;/&|.]*(?:(?:or|and|and/or|vs\.?|either|maybe|perhaps|\\(?:quad|qquad|text\{\s*or\s*\}))"
    r"[\s$,;/&|.]*)*",
    re.IGNORECASE,
)

_BOX_TOKEN = re.compile(r"[^\s$\\]+")
_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.S)
"""A brace, or a backslash with the character it escapes (``\\{`` is not a brace)."""


def answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>...</answer>`` (or of an unclosed final ``<answer>``).

    Pairs are read left to right as a lazy regex would (each ``<answer>`` closes at the next
    ``</answer>``), from the tag positions alone: linear, where ``<answer>(.*?)</answer>``
    rescans to the end of the text from every unclosed tag.
    """
    opens = [m.end() for m in _OPEN_TAG.finditer(text)]
    if not opens:
        return None
    pairs = _tag_pairs(text, opens)
    if pairs:
        return text[pairs[-1][0] : pairs[-1][1]].strip()
    return text[opens[0] :].strip()


def _tag_pairs(text: str, opens: list[int]) -> list[tuple[int, int]]:
    """``(content start, content end)`` of every closed ``<answer>`` pair, in order."""
    closes = [m.start() for m in _CLOSE_TAG.finditer(text)]
    pairs: list[tuple[int, int]] = []
    ci = 0
    oi = 0
    while oi < len(opens):
        start = opens[oi]
        while ci < len(closes) and closes[ci] < start:
            ci += 1
        if ci == len(closes):
            break
        pairs.append((start, closes[ci]))
        after = closes[ci] + len("</answer>")
        while oi < len(opens) and opens[oi] - len("<answer>") < after:
            oi += 1
    return pairs


def tags_side_by_side(text: str) -> list[str]:
    """The contents of the trailing run of ``<answer>`` pairs joined only by connectives
    (``<answer>2</answer> or <answer>3</answer>``), as :func:`boxes_side_by_side`."""
    opens = [m.end() for m in _OPEN_TAG.finditer(text)]
    pairs = _tag_pairs(text, opens) if len(opens) > 1 else []
    items = [
        (start - len("<answer>"), end + len("</answer>"), text[start:end].strip())
        for start, end in pairs
    ]
    return _joined_run(text, items)


_OPEN_TAG = re.compile(r"<answer>", re.I)
_CLOSE_TAG = re.compile(r"</answer>", re.I)


def final_answer_after(text: str, after: int) -> str | None:
    """The value of the last "final answer" phrase after position ``after`` (the end of the
    last box), when it holds a value; else None.

    "\\boxed{255} ... Final Answer: The final answer is $10,455$.": the later word is the
    answer. Only that phrase counts ("let me check my answer: 3 gives 9" after a box is not a
    final one), and only with a digit, ``$`` or a LaTeX command in it. Every answer verifier
    reads ``auto`` through this, so one completion has one answer in all of them.
    """
    at = text.lower().rfind("final answer", after)
    if at < 0:
        return None
    phrase = answer_phrase(text[at:])
    return phrase if phrase is not None and _VALUE_HINT.search(phrase) else None


def answer_phrase(text: str) -> str | None:
    """The value after the last "answer is" / "Answer:" phrase that has a value on its line.

    Also "the correct option/choice is ...". "Final Answer: The final answer is $x$." gives
    ``$x$``; "The answer is 5. Let me check my answer." gives ``5``.
    """
    lowered = text.lower()
    best: tuple[int, str] | None = None
    for keyword in ("answer", "option", "choice"):
        end = len(lowered)
        while True:
            at = lowered.rfind(keyword, 0, end)
            if at < 0 or (best is not None and at < best[0]):
                break
            end = at
            if at > 0 and lowered[at - 1].isalnum():
                continue
            if keyword != "answer" and not re.search(r"correct\s+$", lowered[max(0, at - 12) : at]):
                continue
            match = _PHRASE.match(text, at)
            if match is None:
                continue
            value = match.group("value").strip()
            if value:
                best = (at, value)
                break
    hashes = text.rfind("####")
    if hashes >= 0 and (best is None or hashes > best[0]):
        # GSM8K style: "#### 72" closes the solution.
        value = text[hashes + 4 :].split("\n", 1)[0].strip()
        if value:
            best = (hashes, value)
    if best is None:
        return None
    return _trim_sentence(best[1])


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def last_line(text: str) -> str | None:
    """The last non-blank line. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only: a form feed or
    another control character inside an answer (``"\\f"`` from an unescaped ``\\frac``) is no
    line break to a reader, though ``str.splitlines`` treats it as one."""
    for line in reversed(_LINE_BREAK.split(text)):
        if line.strip():
            return line.strip()
    return None


_MATH_LEAD = re.compile(r"^(\$\$?)(.+?)\1")
_SENTENCE_END = re.compile(r"[.!?。]\s+(?=[A-Z])")


def _trim_sentence(value: str) -> str:
    """Cut a one-line answer down to the answer: leading ``$math$``, first sentence, no
    trailing full stop or Markdown emphasis."""
    value = value.strip()
    nested = answer_phrase(value)
    if nested:
        # "Final Answer: The final answer is $x$. I hope it is correct."
        return nested
    math = _MATH_LEAD.match(value)
    if math is not None:
        return math.group(0)
    end = _SENTENCE_END.search(value)
    if end is not None:
        value = value[: end.start()]
    value = re.sub(r"^(?:\*\*|__)(.*?)(?:\*\*|__)(?=$|[\s.,;:!])", r"\1", value)
    value = value.strip().rstrip(".;:!。").strip()
    value = value.strip("*_").strip()
    for quote in ('\\"', '"', "“"):
        # 'The final answer is "$12$ and $13$".': quotes around the answer are not in it.
        close = "”" if quote == "“" else quote
        if value.startswith(quote) and value.endswith(close) and len(value) > 2 * len(quote):
            value = value[len(quote) : len(value) - len(close)].strip()
    return value


CHAT_TURN_TOKENS: dict[str, tuple[str, ...]] = {
    "ChatML (Qwen, Yi, OpenHermes)": ("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
    "Llama 3": ("<|start_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"),
    "Llama 4": ("<|header_start|>", "<|eot|>", "<|eom|>"),
    "Phi-3 / Phi-4": ("<|user|>", "<|system|>", "<|assistant|>", "<|end|>"),
    "gpt-oss (harmony)": ("<|start|>", "<|return|>", "<|call|>"),
    "Gemma": ("<start_of_turn>", "<end_of_turn>"),
    "Mistral / Llama 2": ("[INST]",),
    "Command R (Cohere)": ("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
    "Granite": ("<|start_of_role|>",),
    "DeepSeek": (
        "<｜User｜>",
        "<｜Assistant｜>",
        "<｜end▁of▁sentence｜>",
        "<｜begin▁of▁sentence｜>",
    ),
}
"""The turn tokens of each major chat-template family, written out as text: the model's turn
ended at any of them, and what follows is a turn it made up ("... is 2/3. <|im_start|>user",
"\\boxed{5}<end_of_turn><start_of_turn>user ... \\boxed{6}"), never its answer. One table for
every family, so a template the list misses is one line here, not a hedge that pays. Generic
end-of-sequence marks that are also ordinary text are not turn tokens: ``</s>`` closes HTML
strikethrough, ``<eos>`` is a word in prose."""

_CHAT_TOKEN = re.compile(
    "|".join(
        sorted(
            {
                re.escape(form)
                for tokens in CHAT_TURN_TOKENS.values()
                for token in tokens
                for form in (token, unicodedata.normalize("NFKC", token))
            }
        )
    )
)
"""Any token of :data:`CHAT_TURN_TOKENS`, as written or as :func:`verifiers.text.visible_text`
reads it (NFKC folds DeepSeek's full-width bars to ``|``). Literal alternatives: linear."""


_TURN_HEADER = re.compile(
    r"\s*(?:(?:<\|(?:im_start|start_header_id|header_start|start|start_of_role)\|>\s*assistant"
    r"\s*(?:<\|(?:end_header_id|header_end|end_of_role)\|>)?"
    r"|<\|assistant\|>|<start_of_turn>\s*model|<[｜|]Assistant[｜|]>|\[/INST\]"
    r"|<\|START_OF_TURN_TOKEN\|>\s*<\|CHATBOT_TOKEN\|>)\s*)+"
)
"""A template header that opens the model's own turn ("<|im_start|>assistant",
"<start_of_turn>model", "<｜Assistant｜>", ...): kept out of the cut, so an honest completion
that repeats its header is read in full."""


def end_of_turn(text: str) -> str:
    """``text`` up to the first chat-template special token (all of it when there is none);
    a header opening the assistant's own turn at the start is skipped first."""
    header = _TURN_HEADER.match(text)
    start = header.end() if header is not None and header.end() > 0 else 0
    match = _CHAT_TOKEN.search(text, start)
    return text[start:] if match is None else text[start : match.start()]


_VALUE_HINT = re.compile(r"[\d$\\]")


def extract_answer(text: str, how: Extract, *, thinking: bool = True) -> tuple[str | None, str]:
    """The answer in ``text`` and where it was found.

    Args:
        text: The completion text.
        how: Where to look (see :data:`Extract`).
        thinking: Drop the ``<think>`` block first (see :func:`strip_thinking`).

    Returns:
        ``(answer, source)``; ``answer`` is None when nothing was found, ``source`` names the
        place (``"boxed"``, ``"answer_phrase"`` ...) for feedback and details.
    """
    if thinking:
        text = strip_thinking(text)
    text = end_of_turn(text)
    if how == "full":
        stripped = text.strip()
        return (stripped or None), "full"
    order: tuple[Extract, ...] = (
        ("answer_tag", "boxed", "answer_phrase", "last_line") if how == "auto" else (how,)
    )
    for place in order:
        found: str | None
        if place == "answer_tag":
            found = answer_tag(text)
            if found is not None:
                boxed = boxed_all(found)
                found = boxed[-1] if boxed else found
        elif place == "boxed":
            spans = boxed_spans(text)
            found = spans[-1][2].strip() if spans else None
            if spans and how == "auto":
                phrase = final_answer_after(text, spans[-1][1])
                if phrase is not None:
                    return phrase, "answer_phrase"
        elif place == "answer_phrase":
            found = answer_phrase(text)
            if found is not None:
                boxed = boxed_all(found)
                found = boxed[-1] if boxed else found
        else:
            found = last_line(text)
        if found:
            return found, place
    return None, how


_TEXT_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|mbox|operatorname|textnormal)\s*\{([^{}]*)\}"
)


MAX_UNWRAP_LAYERS = 16
"""Wrappers peeled off an answer at most (``$\\boxed{\\text{5}}$`` is three). Each layer
costs a pass over what is left, so layers also stop once they have scanned four times the
answer's length (plus 4 KiB): hostile nesting stays linear. A deeper answer keeps its
remaining wrappers and does not compare equal."""


def unwrap_latex(value: str) -> str:
    """Remove presentation wrappers a model puts around a short answer.

    ``$...$``, ``\\(...\\)``, ``\\[...\\]``, ``\\boxed{...}``, ``\\text{...}`` and Markdown
    bold are dropped, keeping their content. The result is meant for string comparison, not
    for math parsing (see :mod:`verifiers.answers._latex`).
    """
    if "\\" not in value and "$" not in value and "*" not in value:
        return value.strip()
    previous = None
    budget = 4 * len(value) + 4096  # characters all layers may scan together
    for _ in range(MAX_UNWRAP_LAYERS):
        if previous == value or budget < 0:
            break
        budget -= len(value)
        previous = value
        boxes = boxed_all(value)
        if boxes and value.strip().startswith(("\\boxed", "\\fbox")):
            value = boxes[-1]
        value = _TEXT_WRAPPERS.sub(r"\1", value)
        value = value.strip()
        for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), ("**", "**")):
            if (
                value.startswith(left)
                and value.endswith(right)
                and len(value) >= len(left) + len(right)
            ):
                value = value[len(left) : len(value) - len(right)].strip()
    return value
