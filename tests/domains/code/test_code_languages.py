"""code.tests in C, C++, JavaScript, TypeScript, Java, Go and Rust (issue 17).

The corpora (``datasets/code/languages/<lang>.jsonl``, written by ``gen_language_corpora.py``)
hold honest solutions that must pass and wrong programs, compile failures, crashes and hacks
that must score exactly 0 with status ``fail`` (never ``error``: an abstain is a hack too).
Each corpus goes through ONE engine run per backend (real bubblewrap, real Docker), shared by
the module's tests, so the compile-heavy rows cost one batch per language, not one engine each.

Bubblewrap scores every row. Docker scores every row but those of :data:`JUDGE_ONLY`: wrong
answers, compile and type errors, warnings as errors, a call harness's own refusals, whose
verdict the judge and the compiler decide from the program's output and exit status alone (the
sandbox only runs them, and the same runtime definition builds both backends' compilers). Docker
still scores every honest row (each toolchain, harness and type under its limits) and every row
that acts on the sandbox (fork, background, network, files, memory, output, time, the judge),
which is where the two backends differ.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _lang_helpers import REAL_BACKENDS, SANDBOX_MARKS
from verifiers.domains.code import LANGUAGES, CodeTests, extract_code, language_for
from verifiers.domains.code._callgen import harness_source, parse_type

import verifiers
from verifiers.errors import BadInput
from verifiers.types import Result

CORPORA = Path(__file__).resolve().parents[3] / "datasets" / "code" / "languages"
LANGS = ["c", "cpp", "javascript", "typescript", "java", "go", "rust"]
ROWS: list[dict[str, Any]] = [
    json.loads(line)
    for lang in LANGS
    for line in (CORPORA / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
BY_ID = {r["id"]: r for r in ROWS}
JUDGE_ONLY = frozenset(
    {"wrong", "wrong-raise", "compile", "werror", "type-error", "any-launder", "harness-error"}
)
"""Families scored on bubblewrap only (see the module docstring)."""
ON_BACKEND = {
    "local": ROWS,
    "docker": [r for r in ROWS if r["metadata"]["family"] not in JUDGE_ONLY],
}


def test_corpora_cover_every_language_and_family() -> None:
    assert len(BY_ID) == len(ROWS)
    for lang in LANGS:
        rows = [r for r in ROWS if r["task"]["spec"]["language"] == lang]
        assert len(rows) >= 20, lang
        fams = {r["metadata"]["family"] for r in rows}
        assert {
            "honest",
            "wrong",
            "compile",
            "crash",
            "read-expected",
            "early-exit",
            "fork",
            "background",
            "write-outside",
            "network",
            "huge-output",
            "infinite-loop",
            "memory-bomb",
        } <= fams, (lang, fams)
        if lang != "c":
            assert {"crash-harness", "forge-record", "kill-judge"} <= fams, lang
            assert any(
                r["task"]["spec"]["tests"]["kind"] == "call" and r["metadata"]["expect"] == "pass"
                for r in rows
            )


class Scored:
    """Corpus results on one backend: its rows (:data:`ON_BACKEND`) of every language in ONE
    engine run (one warm pool, concurrency 2: the CI machine has 2 cores), scored on first use
    and shared by every test that reads a row; each row's verdict is still asserted by its own
    test."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.results: dict[str, Result] = {}

    def __getitem__(self, rid: str) -> Result:
        if not self.results:
            rows = ON_BACKEND[self.backend]
            # retries off: an infra error must show, not be retried away
            results = verifiers.score(
                rows, sandbox=self.backend, concurrency=2, retries=0, timeout_s=300
            )
            self.results = {r["id"]: res for r, res in zip(rows, results, strict=True)}
        return self.results[rid]


_SCORED: dict[str, Scored] = {}


def _scored(backend: str) -> Scored:
    return _SCORED.setdefault(backend, Scored(backend))


@pytest.fixture(scope="module", params=REAL_BACKENDS)
def scored(request: pytest.FixtureRequest) -> Scored:
    """The corpus on each real backend (tests of rows that both backends score)."""
    return _scored(str(request.param))


@pytest.fixture(scope="module")
def local_scored() -> Scored:
    """The corpus on bubblewrap (tests of :data:`JUDGE_ONLY` rows)."""
    return _scored("local")


@pytest.mark.timeout(1800)  # the first row's test scores the whole corpus (~2 min quiet)
@pytest.mark.parametrize(
    ("backend", "rid"),
    [
        pytest.param(backend, r["id"], marks=SANDBOX_MARKS[backend], id=f"{backend}-{r['id']}")
        for backend in SANDBOX_MARKS
        for r in ON_BACKEND[backend]
    ],
)
def test_corpus_row(backend: str, rid: str) -> None:
    row = BY_ID[rid]
    res = _scored(backend)[rid]
    if row["metadata"]["expect"] == "pass":
        assert (res.status, res.reward) == ("pass", 1.0), (rid, res.feedback, res.error)
    else:
        assert res.status == "fail", (rid, row["metadata"]["attack"], res.status, res.error)
        assert res.reward == 0.0, (rid, res.feedback)
        res.model_dump_json().encode("utf-8")


_LINE = {
    "c": "solution.c:4",
    "cpp": "solution.cpp:4",
    "javascript": "solution.js:2",
    "typescript": "solution.ts(2,",
    "java": "Main.java:3",
    "go": "solution.go:6",
    "rust": "solution.rs:2",
}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.bwrap
def test_compile_errors_point_at_the_line(local_scored: Scored, lang: str) -> None:
    res = local_scored[f"{lang}-compile"]
    assert _LINE[lang] in (res.feedback or ""), res.feedback


@pytest.mark.parametrize("lang", ["c", "cpp", "java", "rust"])
@pytest.mark.bwrap
def test_warnings_as_errors(local_scored: Scored, lang: str) -> None:
    res = local_scored[f"{lang}-werror"]
    assert "Compilation failed" in (res.feedback or ""), res.feedback
    # The same program without the flag passes: the warning alone failed it.
    assert local_scored[f"{lang}-werror-plain"].status == "pass"


@pytest.mark.parametrize("rid", ["typescript-type-error", "typescript-call-type-error"])
@pytest.mark.bwrap
def test_typescript_type_errors_fail_the_build_with_the_line(
    local_scored: Scored, rid: str
) -> None:
    """tsc's verdict: a type error is a compile error (io and call builds alike), with the
    line and tsc's code; the same program with ``typecheck: false`` runs and passes."""
    res = local_scored[rid]
    assert "Compilation failed" in (res.feedback or ""), res.feedback
    assert "solution.ts(2," in (res.feedback or "") and "error TS2322" in (res.feedback or "")
    assert local_scored["typescript-type-error-unchecked"].status == "pass"


@pytest.mark.parametrize("lang", ["cpp", "rust", "c", "typescript"])
def test_infinite_compile_is_the_models_fail(scored: Scored, lang: str) -> None:
    res = scored[f"{lang}-infinite-compile" if lang != "typescript" else f"{lang}-template-bomb"]
    assert res.status == "fail" and "Compilation" in (res.feedback or ""), res.feedback


def test_a_stopped_judge_holds_its_sandbox_only_to_the_tests_deadline(scored: Scored) -> None:
    """SIGSTOP to the judge after the build: the sample ends at timeout_s + grace, not after
    the compile allowance as well (one exec with both deadlines summed held it 60 s longer)."""
    row = BY_ID["c-stop-judge"]
    res = scored["c-stop-judge"]
    assert res.status == "fail" and res.duration_s is not None
    spec = CodeTests.Spec.model_validate(row["task"]["spec"])
    assert res.duration_s < spec.compile_timeout_s, res.duration_s


# -- host-side logic (no sandbox) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "tags"),
    [
        ("cpp", ["cpp", "c++", "cc", "cxx"]),
        ("javascript", ["js", "javascript", "node"]),
        ("typescript", ["ts", "typescript"]),
        ("java", ["java"]),
        ("go", ["go", "golang"]),
        ("rust", ["rs", "rust"]),
        ("c", ["c"]),
    ],
)
def test_extraction_picks_the_block_tagged_with_the_language(lang: str, tags: list[str]) -> None:
    language = language_for(lang)
    for tag in tags:
        text = f"```python\nprint(1)\n```\n```{tag}\nREAL\n```\n```\nuntagged\n```\n"
        assert extract_code(text, language).strip() == "REAL", tag
        assert language_for(tag) is language
    assert extract_code("```\nonly\n```", language).strip() == "only"


def test_every_language_names_its_runtime_and_kinds() -> None:
    for lang in LANGS:
        language = LANGUAGES[lang]
        assert language.image == "languages"
        assert "io" in language.kinds
        assert lang == "c" or "call" in language.kinds


def test_typed_call_needs_a_signature_and_fitting_values() -> None:
    with pytest.raises(BadInput, match="signature"):
        harness_source("cpp", "f", [[1]], None)
    with pytest.raises(BadInput, match="does not fit"):
        harness_source("java", "f", [[2**40]], [parse_type("int")])
    with pytest.raises(BadInput, match="identifier"):
        harness_source("go", "f(); os.Exit(0); g", [[1]], [parse_type("int")])
    with pytest.raises(BadInput, match="unknown type"):
        parse_type("map[str]int")
    for bad in ("dict[int,int]", "tuple[]", "&&str", "list[int", "list[" * 9 + "int" + "]" * 9):
        with pytest.raises(BadInput, match="unknown type"):
            parse_type(bad)
    assert parse_type("&list[tuple[int,str]]") == ("ref", ("list", ("tuple", ("int", "str"))))
    assert parse_type("dict[str, list[float]]") == ("dict", ("list", "float"))
    with pytest.raises(BadInput, match="tuple types need C"):
        harness_source("java", "f", [[[1, "a"]]], [parse_type("tuple[int,str]")])
    with pytest.raises(BadInput, match="must be an object"):
        harness_source("go", "f", [[[1]]], [parse_type("dict[str,int]")])
    with pytest.raises(BadInput, match="list of 2"):
        harness_source("rust", "f", [[[1]]], [parse_type("tuple[int,str]")])
    with pytest.raises(BadInput, match="does not fit"):
        harness_source("cpp", "f", [[{"k": 2**40}]], [parse_type("dict[str,int]")])
    with pytest.raises(ValueError, match="unknown type"):
        CodeTests.Spec.model_validate(
            {
                "language": "rust",
                "tests": {
                    "kind": "call",
                    "entry_point": "f",
                    "signature": {"params": ["vec<i32>"]},
                    "cases": [{"args": [1], "expected": 1}],
                },
            }
        )


@pytest.mark.bwrap
def test_missing_toolchain_is_infra_before_any_candidate_code(
    local_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime without the compiler is the verifier's failure (abstain), never the model's."""
    from verifiers.domains.code import _verifier

    from verifiers.errors import InfraError

    cpp = LANGUAGES["cpp"]
    assert cpp.toolchain is not None
    broken = replace(cpp, toolchain=replace(cpp.toolchain, tools=("g++-not-installed",)))
    monkeypatch.setattr(_verifier, "language_for", lambda name: broken)
    row = BY_ID["cpp-sum"]
    with pytest.raises(InfraError, match="toolchain not installed"):
        local_backend.score(row)


def test_unbuilt_runtime_is_infra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The languages runtime not built for its definition: ``error/infra`` from the engine."""
    monkeypatch.setenv("VERIFIERS_SANDBOX_CACHE", str(tmp_path))
    [res] = verifiers.score([BY_ID["go-sum"]], sandbox="local", retries=0)
    assert res.status == "error" and res.error is not None and res.error.kind == "infra"
    assert "verifiers sandbox build languages" in res.error.message


@pytest.mark.parametrize("lang", ["go", "rust", "c"])
def test_raises_cases_need_a_language_with_exceptions(lang: str) -> None:
    """Go and Rust panics are not exceptions (and C has no call): a ``raises`` case there is the
    task's error, said before anything runs, never a silent 0."""
    from verifiers.domains.code._verifier import _program

    kind = "io" if lang == "c" else "call"
    spec = CodeTests.Spec.model_validate(
        {
            "language": lang,
            "tests": {
                "kind": "call",
                "entry_point": "f",
                "signature": {"params": ["int"]},
                "cases": [{"args": [1], "raises": "ValueError"}],
            },
        }
    )
    if kind == "io":
        assert "call" not in LANGUAGES[lang].kinds
        return
    with pytest.raises(BadInput, match="'raises' cases need a language with exceptions"):
        _program(spec, LANGUAGES[lang], "fn f() {}")


def test_typecheck_off_is_for_typescript_only() -> None:
    """``typecheck: false`` elsewhere would do nothing: an error naming the key, not a no-op."""
    io = {"kind": "io", "cases": [{"stdin": "", "stdout": ""}]}
    with pytest.raises(ValueError, match="typecheck: false applies to TypeScript only"):
        CodeTests.Spec.model_validate({"language": "cpp", "typecheck": False, "tests": io})
    from verifiers.domains.code._verifier import _program

    for tag, mode in (("ts", "transpile"), ("typescript", "transpile")):
        spec = CodeTests.Spec.model_validate({"language": tag, "typecheck": False, "tests": io})
        [step] = _program(spec, LANGUAGES["typescript"], "")[0]["compile"]
        assert step[3:5] == [mode, "solution.ts"], step
    spec = CodeTests.Spec.model_validate({"language": "ts", "tests": io})
    assert _program(spec, LANGUAGES["typescript"], "")[0]["compile"][0][3] == "check"


def test_runtime_npm_packages_are_pinned(tmp_path: Path) -> None:
    from verifiers.sandbox._runtimes import _npm_tarball, load_runtime

    from verifiers.errors import InfraError

    for bad in ("typescript", "typescript@^5.9.3", "typescript@latest", "../x@1.0.0"):
        (tmp_path / "runtime.toml").write_text(f'[runtime]\nnpm = ["{bad}"]\n')
        with pytest.raises(InfraError, match="is not pinned"):
            load_runtime(tmp_path)
    (tmp_path / "runtime.toml").write_text('[runtime]\nnpm = ["@types/node@18.19.130"]\n')
    runtime = load_runtime(tmp_path)
    assert runtime is not None and runtime.npm == ("@types/node@18.19.130",)
    assert _npm_tarball("@types/node@18.19.130") == "types-node-18.19.130.tgz"
    assert _npm_tarball("typescript@5.9.3") == "typescript-5.9.3.tgz"


def test_runtime_setup_script_is_validated(tmp_path: Path) -> None:
    from verifiers.sandbox._runtimes import load_runtime

    from verifiers.errors import InfraError

    (tmp_path / "runtime.toml").write_text('[runtime]\napt = ["python3"]\nsetup = "missing.sh"\n')
    with pytest.raises(InfraError, match=r"\[runtime\]\.setup must name a file"):
        load_runtime(tmp_path)
    (tmp_path / "setup.sh").write_text("true\n")
    (tmp_path / "runtime.toml").write_text('[runtime]\napt = ["python3"]\nsetup = "setup.sh"\n')
    runtime = load_runtime(tmp_path)
    assert runtime is not None and runtime.setup == "setup.sh"


def test_runtime_commands_are_validated(tmp_path: Path) -> None:
    from verifiers.sandbox._runtimes import load_runtime

    from verifiers.errors import InfraError

    (tmp_path / "runtime.toml").write_text(
        '[runtime]\napt = ["python3"]\n[runtime.commands]\ngcc = { argv = "gcc --version" }\n'
    )
    with pytest.raises(InfraError, match=r"commands\]\.gcc"):
        load_runtime(tmp_path)


@pytest.mark.bwrap
def test_languages_runtime_check_runs_every_toolchain() -> None:
    from verifiers.sandbox._runtimes import check_rootfs, load_runtime, rootfs_path
    from verifiers.sandbox._settings import SandboxSettings

    runtime = load_runtime(Path(__file__).resolve().parents[3] / "sandbox/images/languages")
    assert runtime is not None
    versions = check_rootfs(runtime, rootfs_path(runtime, SandboxSettings()))
    for tool, text in {
        "gcc": "12.2",
        "gxx": "12.2",
        "node": "v18.",
        "tsc": "Version 5.9.3",
        "javac": "javac 17",
        "go": "go1.19",
        "rustc": "1.63",
    }.items():
        assert text in versions[tool], (tool, versions)


@pytest.mark.bwrap
@pytest.mark.parametrize("kind", ["io", "call"])
def test_cpp_compiles_use_the_runtimes_precompiled_headers(kind: str, tmp_path: Path) -> None:
    """The runtime's setup.sh precompiled <bits/stdc++.h> and the call harness's fixed part with
    the toolchain's exact g++ options: g++ must take the .gch (``-H`` marks it ``!``), not
    parse the headers again (a mismatch of options would silently make every compile slow)."""
    from verifiers.domains.code._verifier import _program
    from verifiers.sandbox._runtimes import _in_root, load_runtime, rootfs_path
    from verifiers.sandbox._settings import SandboxSettings

    runtime = load_runtime(Path(__file__).resolve().parents[3] / "sandbox/images/languages")
    assert runtime is not None
    row = BY_ID["cpp-max" if kind == "io" else "cpp-call-tally"]
    spec = CodeTests.Spec.model_validate(row["task"]["spec"])
    code = extract_code(row["completion"], LANGUAGES["cpp"])
    program, files = _program(spec, LANGUAGES["cpp"], code)
    for name, text in files.items():
        (tmp_path / name).write_text(str(text))
    (tmp_path / "build").mkdir()
    [step] = program["compile"]
    argv = [step[0], "-Winvalid-pch", "-H", *step[1:]]
    done = _in_root(
        rootfs_path(runtime, SandboxSettings()),
        ["/bin/sh", "-c", 'cd /work && exec "$@"', "sh", *argv],
        writable=False,
        extra=["--bind", str(tmp_path), "/work"],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    want = "stdc++.h.gch" if kind == "io" else "/opt/verifiers/cpp/verifiers_call.h.gch"
    first = done.stderr.splitlines()[0]
    assert first.startswith("! ") and first.endswith(want), done.stderr[:500]
