"""A workspace's files on the host: path rules, the agent's changes, diffs and snapshots.

Everything here is trusted code working on untrusted text, on the host. Nothing is executed:
a unified diff is applied by :func:`apply_diff` (pure Python, exact context, a bounded offset
search, so linear in the diff and the files it touches), a file map is validated as data, and
an episode's final tree comes back from the sandbox as a tar stream that :func:`parse_tar`
reads in memory (regular files only: a symlink, hard link or device the agent made is dropped,
never followed, so a link to where the hidden tests will land carries nothing).

The one representation of "what the agent did" is a :data:`Changes` map, path -> new text
(``None`` = deleted), applied over the starting tree after the task's setup commands. An
episode's final state and an offline trajectory (a diff or a file map) both become one, so the
same work gets the same reward live and on re-verification.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Mapping

from verifiers.errors import InvalidOutput

__all__ = [
    "MAX_FILES",
    "MAX_PATH_BYTES",
    "MAX_TREE_BYTES",
    "RESERVED_DIR",
    "Changes",
    "apply_diff",
    "changes_between",
    "check_path",
    "parse_changes",
    "parse_tar",
]

Changes = dict[str, str | None]
"""Path -> new text of that file, or ``None`` for a deleted file."""

MAX_FILES = 2000
"""Most files one workspace change set may touch."""
MAX_TREE_BYTES = 16 << 20
"""Most bytes of file content one change set (or snapshot) may carry."""
MAX_PATH_BYTES = 1024
"""Longest path (UTF-8 bytes) a change set may write; each name at most ``NAME_MAX`` (255).
A longer one would fail the sandbox's write (``ENAMETOOLONG``): refused here as the model's
fail, never left to become a runner error (an abstain)."""
RESERVED_DIR = ".verifiers"
"""Where the judge's own files live in the verification sandbox; the agent may not write it."""
_SKIPPED = (".tmp", RESERVED_DIR, "__pycache__", ".pytest_cache")
"""Top-level (and, for caches, any-level) names a snapshot ignores: the runner's scratch dir,
the judge's files, bytecode caches."""
_OFFSET_WINDOW = 60
"""How far (lines) a hunk may have moved from the line its header names."""


def check_path(path: str, *, where: str = "path") -> str:
    """``path`` normalised (``a/./b`` -> ``a/b``); refuses what could leave the tree.

    Raises:
        InvalidOutput: absolute, empty, ``..``, NUL, a backslash or the reserved judge dir.
    """
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise InvalidOutput(f"{where} {path!r} is not a usable relative file path")
    if path.startswith("/"):
        raise InvalidOutput(f"{where} {path!r} is absolute; write paths relative to the tree")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InvalidOutput(f"{where} {path!r} leaves the workspace tree ('..')")
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidOutput(f"{where} {path[:80]!r} is not valid UTF-8 text") from None
    if size > MAX_PATH_BYTES or any(len(p.encode("utf-8")) > 255 for p in parts):
        raise InvalidOutput(
            f"{where} {path[:80]!r}... is too long (at most {MAX_PATH_BYTES} bytes, 255 per name)"
        )
    if parts[0] == RESERVED_DIR:
        raise InvalidOutput(f"{where} {path!r} is inside {RESERVED_DIR}/, reserved for the judge")
    return "/".join(parts)


def _check_shape(changes: Mapping[str, str | None]) -> None:
    """Refuse a change set that writes a file at a path another of its files needs as a
    directory (``a`` and ``a/b``)."""
    written = [p for p, v in changes.items() if v is not None]
    dirs = {"/".join(p.split("/")[:i]) for p in written for i in range(1, p.count("/") + 1)}
    clash = sorted(p for p in written if p in dirs)
    if clash:
        raise InvalidOutput(f"{clash[0]!r} is written both as a file and as a directory")


def _check_size(changes: Mapping[str, str | None]) -> None:
    _check_shape(changes)
    if len(changes) > MAX_FILES:
        raise InvalidOutput(f"the change set touches {len(changes)} files (at most {MAX_FILES})")
    total = 0
    for path, text in changes.items():
        if text:
            try:
                total += len(text.encode("utf-8"))
            except UnicodeEncodeError as exc:
                # a lone surrogate cannot be written as a file: the model's output, its fail
                raise InvalidOutput(
                    f"file {path!r} is not valid UTF-8 text (character {exc.start})"
                ) from None
    if total > MAX_TREE_BYTES:
        raise InvalidOutput(f"the change set holds {total} bytes (at most {MAX_TREE_BYTES})")


def parse_changes(text: str, tree: Mapping[str, str]) -> tuple[Changes, str]:
    """The agent's changes from a completion: a JSON file map or a unified diff.

    A file map is ``{"path": "new text" | null}`` (``null`` deletes), optionally wrapped as
    ``{"files": {...}}``. Anything else that looks like a unified diff (``---``/``+++``/``@@``,
    also inside a fenced ``diff`` block) is applied to ``tree`` (the starting files).

    Returns:
        The changes and which form they came in (``"files"`` or ``"diff"``).

    Raises:
        InvalidOutput: neither form, a bad path, or a diff that does not apply (the message
            says which hunk and why): the model's fail.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise InvalidOutput(f"the completion starts with '{{' but is not JSON: {exc}") from None
        if isinstance(data, dict) and set(data) == {"files"} and isinstance(data["files"], dict):
            data = data["files"]
        if not isinstance(data, dict):
            raise InvalidOutput("a file map must be a JSON object of path -> text (or null)")
        changes: Changes = {}
        for raw, value in data.items():
            path = check_path(raw, where="file map path")
            if value is not None and not isinstance(value, str):
                raise InvalidOutput(f"file map entry {raw!r} must be text or null")
            changes[path] = value
        _check_size(changes)
        return changes, "files"
    diff = _diff_text(text)
    if diff is None:
        raise InvalidOutput(
            "the completion is neither a unified diff (--- a/x, +++ b/x, @@ hunks) nor a JSON "
            'file map ({"path": "text"}); submit one of the two'
        )
    return apply_diff(diff, tree), "diff"


_FENCE = re.compile(r"```(?:diff|patch)[^\n]*\n(.*?)```", re.DOTALL)


def _diff_text(text: str) -> str | None:
    blocks = _FENCE.findall(text)
    candidate = blocks[-1] if blocks else text
    if "\n+++ " in "\n" + candidate and "@@" in candidate:
        return candidate
    return None


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _header_path(line: str) -> str | None:
    name = line[4:].split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return check_path(name, where="diff path")


def apply_diff(diff: str, tree: Mapping[str, str]) -> Changes:
    """Apply a unified diff to ``tree`` (path -> text) and return the changed files.

    Each hunk must match its context exactly, at its header's line or within
    ``_OFFSET_WINDOW`` lines of it (what ``patch`` calls an offset; no fuzz). Binary patches,
    renames, mode changes to symlinks and paths outside the tree are refused.

    Raises:
        InvalidOutput: the diff does not apply; the message names the file and hunk.
    """
    lines = diff.splitlines()
    changes: Changes = {}
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("GIT binary patch") or line.startswith("Binary files "):
            raise InvalidOutput("binary patches are not supported; change text files only")
        if line.startswith(("new file mode 120000", "new mode 120000", "deleted file mode 120000")):
            raise InvalidOutput("the diff creates or changes a symlink; only regular files count")
        if line.startswith(("rename from", "rename to", "copy from", "copy to")):
            raise InvalidOutput("the diff renames or copies files; write it as delete + add")
        if not (line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old_path = _header_path(line)
        new_path = _header_path(lines[i + 1])
        i += 2
        path = new_path or old_path
        if path is None:
            raise InvalidOutput("a diff section names /dev/null on both sides")
        if old_path is None:
            if path in tree and changes.get(path, tree[path]) is not None:
                raise InvalidOutput(f"the diff creates {path!r}, which already exists")
            source: list[str] = []
        else:
            current = changes.get(old_path, tree.get(old_path))
            if current is None:
                raise InvalidOutput(f"the diff changes {old_path!r}, which does not exist")
            source = current.splitlines()
        ends_with_newline = True
        out: list[str] = []
        pos = 0  # next unconsumed source line
        hunk_no = 0
        while i < n and lines[i].startswith("@@"):
            hunk_no += 1
            match = _HUNK.match(lines[i])
            if match is None:
                raise InvalidOutput(f"{path}: hunk {hunk_no} has a malformed header {lines[i]!r}")
            old_start = int(match.group(1))
            old_len = int(match.group(2)) if match.group(2) is not None else 1
            new_len = int(match.group(4)) if match.group(4) is not None else 1
            i += 1
            old_lines: list[str] = []
            new_lines: list[str] = []
            while i < n and (len(old_lines) < old_len or len(new_lines) < new_len):
                body = lines[i]
                if body.startswith("\\"):  # "\ No newline at end of file"
                    i += 1
                    continue
                tag, text = (body[:1], body[1:]) if body else (" ", "")
                if tag == " ":
                    old_lines.append(text)
                    new_lines.append(text)
                elif tag == "-":
                    old_lines.append(text)
                elif tag == "+":
                    new_lines.append(text)
                else:
                    raise InvalidOutput(
                        f"{path}: hunk {hunk_no} ends early (line {body[:60]!r}); the counts "
                        "in its @@ header do not match its body"
                    )
                i += 1
            while i < n and lines[i].startswith("\\"):
                ends_with_newline = False
                i += 1
            if len(old_lines) != old_len or len(new_lines) != new_len:
                raise InvalidOutput(f"{path}: hunk {hunk_no} is truncated")
            want = max(old_start - 1, 0) if old_len else old_start
            at = _locate(source, old_lines, want, pos)
            if at is None:
                raise InvalidOutput(
                    f"{path}: hunk {hunk_no} (@@ -{old_start},{old_len}) does not apply: its "
                    "context and removed lines do not match the file; diff against the "
                    "starting tree"
                )
            out.extend(source[pos:at])
            out.extend(new_lines)
            pos = at + len(old_lines)
        if hunk_no == 0:
            raise InvalidOutput(f"{path}: the diff section has no @@ hunks")
        out.extend(source[pos:])
        if new_path is None:
            if out:
                raise InvalidOutput(f"the diff deletes {path!r} but leaves lines in it")
            changes[path] = None
        else:
            changes[path] = "\n".join(out) + ("\n" if out and ends_with_newline else "")
    if not changes:
        raise InvalidOutput("the diff changes no file (no ---/+++ sections with @@ hunks)")
    _check_size(changes)
    return changes


def _locate(source: list[str], old: list[str], want: int, floor: int) -> int | None:
    """Where ``old`` matches ``source``: at ``want``, else the nearest within the window."""
    size = len(old)
    for delta in range(_OFFSET_WINDOW + 1):
        for at in (want - delta, want + delta) if delta else (want,):
            if at < floor or at + size > len(source):
                continue
            if source[at : at + size] == old:
                return at
    return None


def parse_tar(data: bytes, *, max_bytes: int = MAX_TREE_BYTES) -> tuple[dict[str, str], list[str]]:
    """The regular text files of a tar stream of the work dir, and what was left out.

    Symlinks, hard links, devices and FIFOs are dropped (named in the second list), as are
    files that are not UTF-8 text and the scratch/judge/cache directories.

    Raises:
        InvalidOutput: the tree holds more than ``MAX_FILES`` files or ``max_bytes`` bytes.
    """
    files: dict[str, str] = {}
    dropped: list[str] = []
    total = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        for member in archive:
            name = member.name[2:] if member.name.startswith("./") else member.name
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if not parts or parts[0] in _SKIPPED or any(p in _SKIPPED[2:] for p in parts):
                continue
            if member.isdir():
                continue
            if not member.isreg():
                dropped.append(f"{name} (not a regular file)")
                continue
            if ".." in parts:
                dropped.append(f"{name} (path leaves the tree)")
                continue
            total += member.size
            if len(files) >= MAX_FILES or total > max_bytes:
                raise InvalidOutput(
                    f"the workspace holds more than {MAX_FILES} files or {max_bytes} bytes"
                )
            handle = archive.extractfile(member)
            raw = handle.read() if handle is not None else b""
            try:
                files["/".join(parts)] = raw.decode("utf-8")
            except UnicodeDecodeError:
                dropped.append(f"{name} (not UTF-8 text)")
    return files, dropped


def changes_between(before: Mapping[str, str], after: Mapping[str, str]) -> Changes:
    """The change set that turns ``before`` into ``after`` (sorted by path)."""
    changes: Changes = {}
    for path in sorted(set(before) | set(after)):
        new = after.get(path)
        if before.get(path) != new:
            changes[path] = new
    return changes
