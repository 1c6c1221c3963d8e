"""Languages ``code.tests`` can run, and what each needs in the sandbox.

A language is a sandbox runtime, the file the candidate's code is written to, the argv that
starts the judge, and the test kinds its judge implements. Python has its own judge
(``_judge``: a judge process and a candidate process that answers calls over a pipe). Every
other language uses the *same* judge with a :class:`Toolchain`: the judge builds the program
(each compile step a child process with the job's limits, inside the job's time budget), then
runs it once per ``io`` case, or runs the generated ``call`` harness (``_callgen``) that calls
the candidate's function. All of them run in the one ``languages`` runtime
(``sandbox/images/languages/runtime.toml``); ``docs/code.md`` says why one runtime and how to
add a language.

Placeholders in a toolchain's argv, filled on the host: ``{src}`` the candidate's file,
``{mem}`` the job's memory in MB (VM heap flags), ``{harness}`` the call harness's file,
``{cls}`` a Java io program's class, ``{tsmode}`` ``check`` (type-check, the default) or
``transpile`` (the spec's ``typecheck: false``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from verifiers.errors import BadInput

from ._judge_record import JUDGE_MODULES

__all__ = ["LANGUAGES", "Language", "Toolchain", "judge_files", "language_for"]

JUDGE_DIR = ".judge"
BUILD_DIR = "build"
"""Where compile steps write (made by the judge in the job's work dir)."""

BUILD_MEMORY_MB = 768
"""Memory every compiled language's sandbox gets for its compiler (one value for all: the warm
pool keeps one set of containers per (runtime, memory, pids) profile, so per-language sizes
would keep a pool per language warm)."""
PIDS = 256
"""Processes and threads of a job in the languages runtime (a JVM or ``go build`` runs dozens of
threads; one value for all languages, for the same reason)."""

_GXX = ("-std=gnu++17", "-O2", "-pipe")
"""g++'s options: the runtime's precompiled headers (``sandbox/images/languages/setup.sh``:
``<bits/stdc++.h>`` and the call harness's fixed part) were built with exactly these; g++ uses a
``.gch`` only when the compile's options match, else it parses the header (slower, same result)."""
CPP_CALL_DIR = "/opt/verifiers/cpp"
"""Where the runtime keeps the C++ call harness's precompiled fixed part (``verifiers_call.h``)."""

_JAVA_VM = ("-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss16m")
JAVAC_ARCHIVE = "/opt/verifiers/java/javac.jsa"
"""javac's own classes, archived once per runtime (``setup.sh``): ~35% less CPU per compile.
``-Xlog:disable``: a JVM that cannot map the archive loads the classes itself and must not
print a CDS warning into the compiler's output."""
_JAVAC = (
    "javac",
    "-J-Xmx384m",
    "-J-XX:+UseSerialGC",
    "-J-XX:TieredStopAtLevel=1",
    "-J-Xshare:auto",
    f"-J-XX:SharedArchiveFile={JAVAC_ARCHIVE}",
    "-J-Xlog:disable",
)
TS_DIR = "/opt/verifiers/ts"
"""The runtime's TypeScript driver and its start-up snapshot (``sandbox/images/languages/tsc.js``
says why: a type check from the snapshot costs ~0.3 s of CPU instead of ~2.5 s)."""
_TSC = (
    "node",
    f"--snapshot-blob={TS_DIR}/tsc.blob",
    f"{TS_DIR}/tsc.js",
    "{tsmode}",
    "{src}",
    f"{BUILD_DIR}/solution.js",
)


@dataclass(frozen=True)
class Toolchain:
    """How the shared judge builds and runs a compiled or scripted language."""

    io_compile: tuple[tuple[str, ...], ...]
    """Compile steps of an ``io`` program (empty: interpreted)."""
    io_run: tuple[str, ...]
    """How an ``io`` program runs (stdin: the case's input)."""
    call_compile: tuple[tuple[str, ...], ...] = ()
    """Compile steps of the ``call`` harness with the candidate's code."""
    call_run: tuple[str, ...] = ()
    """How the ``call`` harness runs (the judge appends the first case's index)."""
    harness_file: str = ""
    """The generated call harness's file name in the work dir."""
    werror: tuple[str, ...] = ()
    """Flags the first compile step gets when the spec sets ``warnings_as_errors``."""
    vm: bool = False
    """Runs on a runtime that reserves address space up front (JVM, node, Go): no
    ``RLIMIT_AS`` (the job's memory cgroup, and the VM's own heap flag, limit memory)."""
    build_memory_mb: int = 0
    """Memory the compiler needs on top of the program's (the sandbox is sized for both)."""
    tools: tuple[str, ...] = ()
    """Executables that must exist before any candidate code runs (else ``error/infra``)."""


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
    toolchain: Toolchain | None = None
    """Build-and-run recipe of a non-Python language (None: the Python judge)."""
    pids: int = 64
    """Processes and threads the job may have (JVMs and ``go build`` need more than 64)."""

    def source_for(self, code: str, kind: str) -> str:
        """The candidate's file name for this code (Java: its public class decides)."""
        if self.name == "java" and kind == "io":
            match = _JAVA_PUBLIC.search(code)
            return f"{match.group(1)}.java" if match else "Main.java"
        return self.source_file


_JAVA_PUBLIC = re.compile(
    r"^[ \t]*public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]{0,100})\b", re.M
)
r"""``^[ \t]*``, not ``^\s*``: under ``re.M`` every line start of a run of blank lines rescanned
the whole run (40,000 newlines in the candidate's source took 4 s, quadratic, in the host)."""
_HERE = Path(__file__).parent
_PY_JUDGE = (
    (f"{JUDGE_DIR}/boot.py", _HERE / "_judge_boot.py"),
    *((f"{JUDGE_DIR}/{name}.py", _HERE / f"{name}.py") for name in JUDGE_MODULES),
)
_CALL = frozenset({"io", "call"})
_B = BUILD_DIR


def _compiled(
    name: str,
    aliases: tuple[str, ...],
    source: str,
    chain: Toolchain,
    *,
    kinds: frozenset[str] = _CALL,
    pids: int = PIDS,
) -> Language:
    return Language(
        name=name,
        aliases=aliases,
        image="languages",
        source_file=source,
        judge_sources=_PY_JUDGE,
        judge_argv=("python3", f"{JUDGE_DIR}/boot.py"),
        kinds=kinds,
        toolchain=chain,
        pids=pids,
    )


LANGUAGES: dict[str, Language] = {
    "python": Language(
        name="python",
        aliases=("py", "python3"),
        image="python",
        source_file="solution.py",
        judge_sources=_PY_JUDGE,
        # No interpreter flags: the sandbox runner then starts it from its warm zygote (a fork,
        # not a fresh interpreter). The boot strips its own directory from sys.path itself.
        judge_argv=("python3", f"{JUDGE_DIR}/boot.py"),
        kinds=frozenset({"assert", "io", "call", "pytest"}),
    ),
    "c": _compiled(
        "c",
        ("h",),
        "solution.c",
        Toolchain(
            io_compile=(("gcc", "-std=gnu17", "-O2", "-pipe", "-o", f"{_B}/prog", "{src}", "-lm"),),
            io_run=(f"./{_B}/prog",),
            werror=("-Wall", "-Wextra", "-Werror"),
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("gcc",),
        ),
        kinds=frozenset({"io"}),
    ),
    "cpp": _compiled(
        "cpp",
        ("c++", "cc", "cxx", "hpp"),
        "solution.cpp",
        Toolchain(
            io_compile=(("g++", *_GXX, "-o", f"{_B}/prog", "{src}"),),
            io_run=(f"./{_B}/prog",),
            call_compile=(
                (
                    "g++",
                    *_GXX,
                    f"-I{CPP_CALL_DIR}",
                    "-o",
                    f"{_B}/prog",
                    "{harness}",
                ),
            ),
            call_run=(f"./{_B}/prog",),
            harness_file="verifiers_harness.cpp",
            werror=("-Wall", "-Wextra", "-Werror"),
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("g++",),
        ),
    ),
    "javascript": _compiled(
        "javascript",
        ("js", "node", "nodejs", "mjs", "cjs"),
        "solution.js",
        Toolchain(
            # `node --check`: a syntax error fails the build with solution.js:LINE, instead of
            # a crash of every case whose stack trace hides the line.
            io_compile=(("node", "--check", "{src}"),),
            io_run=("node", "--max-old-space-size={mem}", "--stack-size=8192", "{src}"),
            call_compile=(("node", "--check", "{src}"),),
            call_run=("node", "--max-old-space-size={mem}", "{harness}", "{src}"),
            harness_file="verifiers_harness.js",
            vm=True,
            tools=("node",),
        ),
        pids=PIDS,
    ),
    "typescript": _compiled(
        "typescript",
        ("ts", "tsx", "mts"),
        "solution.ts",
        Toolchain(
            # Type-checked by default, as `tsc` does (docs/code.md "TypeScript" says why).
            io_compile=(_TSC,),
            io_run=("node", "--max-old-space-size={mem}", "--stack-size=8192", f"{_B}/solution.js"),
            call_compile=(_TSC,),
            call_run=("node", "--max-old-space-size={mem}", "{harness}", f"{_B}/solution.js"),
            harness_file="verifiers_harness.js",
            vm=True,
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("node",),
        ),
        pids=PIDS,
    ),
    "java": _compiled(
        "java",
        (),
        "Solution.java",
        Toolchain(
            io_compile=((*_JAVAC, "-encoding", "UTF-8", "-d", _B, "{src}"),),
            io_run=("java", "-Xmx{mem}m", *_JAVA_VM, "-cp", _B, "{cls}"),
            call_compile=((*_JAVAC, "-encoding", "UTF-8", "-d", _B, "{src}", "{harness}"),),
            call_run=("java", "-Xmx{mem}m", *_JAVA_VM, "-cp", _B, "VerifiersHarness"),
            harness_file="VerifiersHarness.java",
            werror=("-Xlint:all", "-Werror"),
            vm=True,
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("javac", "java"),
        ),
        pids=PIDS,
    ),
    "go": _compiled(
        "go",
        ("golang",),
        "solution.go",
        Toolchain(
            io_compile=(("go", "build", "-o", f"{_B}/prog", "{src}"),),
            io_run=(f"./{_B}/prog",),
            call_compile=(("go", "build", "-o", f"{_B}/prog", "{src}", "{harness}"),),
            call_run=(f"./{_B}/prog",),
            harness_file="verifiers_harness.go",
            werror=(),
            vm=True,  # the Go runtime reserves its heap arenas up front: RLIMIT_AS kills it
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("go",),
        ),
        pids=PIDS,
    ),
    "rust": _compiled(
        "rust",
        ("rs",),
        "solution.rs",
        Toolchain(
            io_compile=(
                ("rustc", "--edition", "2021", "-C", "opt-level=1", "-o", f"{_B}/prog", "{src}"),
            ),
            io_run=(f"./{_B}/prog",),
            call_compile=(
                (
                    "rustc",
                    "--edition",
                    "2021",
                    "-C",
                    "opt-level=1",
                    "-o",
                    f"{_B}/prog",
                    "{harness}",
                ),
            ),
            call_run=(f"./{_B}/prog",),
            harness_file="verifiers_harness.rs",
            werror=("-D", "warnings"),
            build_memory_mb=BUILD_MEMORY_MB,
            tools=("rustc", "cc"),
        ),
        pids=PIDS,
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

    The judge's modules ship precompiled (``_judge_boot.pack``: its boot script, ``harness.bin``
    and ``harness.py.z``). A language's trusted helpers (the TypeScript driver, C++ headers)
    live in its runtime instead.
    """
    from verifiers.sandbox._runner import rule_source

    from ._judge_boot import pack

    # The starvation rule ships as the runner's own source (one definition of it).
    return {
        **pack(dict(lang.judge_sources), {"_judge_starvation": rule_source()}),
    }
