"""Getting at the text a verifier judges: the completion, the last fenced code block."""

from __future__ import annotations

import re
from typing import Any

from .types import Message, Trajectory

__all__ = ["completion_text", "last_code_block", "message_text", "prompt_text"]

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


def last_code_block(text: str, language: str | None = None) -> str | None:
    """The body of the last fenced block (``` or ~~~), preferring blocks tagged ``language``.

    Untagged blocks count as a match for any language. Returns None when there is no
    fenced block at all (callers then usually fall back to the whole text).
    """
    blocks = [(m.group(3).lower(), m.group(4)) for m in _FENCE.finditer(text)]
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
