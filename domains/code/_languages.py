"""Languages ``code.tests`` can run, and what each needs in the sandbox.

A language is a sandbox image, the file name the candidate's code is written to, the argv
that starts the judge, and the test kinds its judge implements. Python is the only one today;
``docs/code.md`` says how to add another.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from verifiers.errors import BadInput

__all__ = ["LANGUAGES", "Language", "judge_files", "language_for"]

JUDGE_DIR = ".judge"


@dataclass(frozen=True)
class Language:
    """How to run one language's code and tests in the sandbox."""

    name: str
    aliases: tuple[str, ...]
    """Fence tags accepted for this language (besides ``name``)."""
    image: str
    """Sandbox image (``verifiers.sandbox`` name)."""
    source_file: str
    """Where the candidate's code is written in the work directory."""
    judge_sources: tuple[tuple[str, Path], ...]
    """Judge files copied read-only into the sandbox: (path in the work dir, source file)."""
    judge_argv: tuple[str, ...]
    """Command that starts the judge (reads its job on stdin)."""
    kinds: frozenset[str]
    """Test kinds this language's judge supports."""


LANGUAGES: dict[str, Language] = {
    "python": Language(
        name="python",
        aliases=("py", "python3"),
        image="python",
        source_file="solution.py",
        judge_sources=(
            (f"{JUDGE_DIR}/boot.py", Path(__file__).with_name("_judge_boot.py")),
            (f"{JUDGE_DIR}/harness.py", Path(__file__).with_name("_harness.py")),
        ),
        # No interpreter flags: the sandbox runner then starts it from its warm zygote (a fork,
        # not a fresh interpreter). The boot strips its own directory from sys.path itself.
        judge_argv=("python3", f"{JUDGE_DIR}/boot.py"),
        kinds=frozenset({"assert", "io", "call", "pytest"}),
    ),
}


def language_for(name: str) -> Language:
    """The language called ``name`` (or one of its aliases).

    Raises:
        BadInput: no such language is supported.
    """
    key = name.strip().lower()
    for lang in LANGUAGES.values():
        if key == lang.name or key in lang.aliases:
            return lang
    raise BadInput(f"code.tests does not support language {name!r}; supported: {sorted(LANGUAGES)}")


@cache
def judge_files(lang: Language) -> dict[str, bytes]:
    """The judge's files for the sandbox, compressed (they travel with every sample).

    Python's judge ships as its boot script, ``harness.bin`` (this interpreter's magic number +
    zlib-compressed marshalled code, used when the sandbox's Python has the same magic number)
    and ``harness.py.z`` (the compressed source, compiled otherwise).
    """
    if lang.name != "python":
        return {dest: src.read_bytes() for dest, src in lang.judge_sources}
    import importlib.util
    import marshal
    import zlib

    sources = dict(lang.judge_sources)
    harness = sources[f"{JUDGE_DIR}/harness.py"].read_text(encoding="utf-8")
    code = compile(harness, f"{JUDGE_DIR}/harness.py", "exec", dont_inherit=True)
    return {
        f"{JUDGE_DIR}/boot.py": sources[f"{JUDGE_DIR}/boot.py"].read_bytes(),
        f"{JUDGE_DIR}/harness.bin": importlib.util.MAGIC_NUMBER
        + zlib.compress(marshal.dumps(code), 9),
        f"{JUDGE_DIR}/harness.py.z": zlib.compress(harness.encode("utf-8"), 9),
    }
