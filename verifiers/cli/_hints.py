"""Why most lines of an input were ``bad_input``: a look at the file's first bytes.

A new user's first broken file is rarely broken line by line: it is a JSON array, a
pretty-printed object per record, or a UTF-16 file saved by an editor. The reader turns each
such line into its own ``bad_input`` result (nothing is dropped), which is right, but 26 errors
and exit 0 do not say what happened. :func:`diagnose_input` reads at most
:data:`PEEK_BYTES` from the start of a regular file (never a pipe: it cannot be read twice)
and names the likely cause with the command that fixes it. CRLF line ends and a UTF-8 BOM are
fine (the reader accepts both) and are never reported.
"""

from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["BAD_INPUT_SHARE", "PEEK_BYTES", "diagnose_input"]

PEEK_BYTES = 64 * 1024
"""Bytes read from the start of the input, at most."""

BAD_INPUT_SHARE = 0.5
"""The summary warns when more than this share of the results are ``bad_input``."""


def diagnose_input(path: Path) -> str:
    """The likely reason most lines of ``path`` did not parse, with the fix.

    Never raises: an unreadable file gets the generic advice.
    """
    generic = (
        "each line must be one JSON object (JSON Lines); the first errors in the summary "
        "(and each result's error.message) say what is wrong"
    )
    try:
        if not path.is_file():
            return generic
        with path.open("rb") as handle:
            head = handle.read(PEEK_BYTES)
    except OSError:
        return generic
    quoted = shlex.quote(str(path))
    fixed = shlex.quote(str(path.with_name(path.stem + ".fixed.jsonl")))
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (
        len(head) >= 4 and (head[1:4:2] == b"\x00\x00" or head[0:3:2] == b"\x00\x00")
    ):
        return (
            "the file looks UTF-16 encoded (JSONL must be UTF-8); convert it: "
            f"iconv -f UTF-16 -t UTF-8 {quoted} > {fixed}"
        )
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"["):
        return (
            "the file looks like one JSON array, not JSON Lines (one object per line); "
            f"convert it: jq -c '.[]' {quoted} > {fixed}"
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and (lines[0] == b"{" or (lines[0].startswith(b"{") and not lines[0].endswith(b"}"))):
        return (
            "the file looks pretty-printed (one object spans several lines); JSONL needs one "
            f"object per line: jq -c . {quoted} > {fixed}"
        )
    return generic
