"""The ``score`` summary says why lines errored: first errors with line numbers, and the likely
cause when most lines are ``bad_input`` (a JSON array, pretty-printed JSON, UTF-16).

The CLI runs in this process (``verifiers.cli.main``, the console script's own function):
an interpreter start per case cost more than the cases; the console script itself is run as a
subprocess by test_cli_score.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from verifiers.cli import main
from verifiers.cli._hints import diagnose_input

ROWS = [
    {"id": f"r{i}", "completion": str(i), "task": {"verifier": "answer.exact", "reference": "2"}}
    for i in range(4)
]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("VERIFIERS_CACHE_DIR", str(cwd))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    return run


def jsonl() -> str:
    return "".join(json.dumps(r) + "\n" for r in ROWS)


BROKEN = {
    "array": (json.dumps(ROWS, indent=2).encode(), "one JSON array", "jq -c '.[]'"),
    "array-compact": (json.dumps(ROWS).encode(), "one JSON array", "jq -c '.[]'"),
    "pretty": (
        "".join(json.dumps(r, indent=2) + "\n" for r in ROWS).encode(),
        "pretty-printed",
        "jq -c .",
    ),
    "utf16": (jsonl().encode("utf-16"), "UTF-16", "iconv -f UTF-16"),
    "utf16-le-no-bom": (jsonl().encode("utf-16-le"), "UTF-16", "iconv"),
    "utf16-be-no-bom": (jsonl().encode("utf-16-be"), "UTF-16", "iconv"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_mostly_bad_input_names_the_cause_and_the_fix(tmp_path: Path, case: str, cli: Any) -> None:
    data, cause, fix = BROKEN[case]
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    summary = tmp_path / "s.json"
    proc = cli("score", src, "-o", tmp_path / "out.jsonl", "--summary-json", summary, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # every line still got its result
    [warning] = [x for x in proc.stderr.splitlines() if "lines are bad_input" in x]
    assert cause in warning and fix in warning
    assert cause in json.loads(summary.read_text())["hint"]
    assert "first errors" in proc.stdout and "line 1" in proc.stdout


@pytest.mark.parametrize(
    "data",
    [jsonl().replace("\n", "\r\n").encode(), b"\xef\xbb\xbf" + jsonl().encode(), jsonl().encode()],
    ids=["crlf", "utf8-bom", "plain"],
)
def test_good_files_get_no_warning(tmp_path: Path, data: bytes, cli: Any) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    proc = cli("score", src, "-o", tmp_path / "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "pass" in proc.stdout and "first errors" not in proc.stdout


def test_first_errors_are_listed_with_line_numbers(tmp_path: Path, cli: Any) -> None:
    lines = [
        json.dumps(ROWS[0]),
        "{broken",
        json.dumps(ROWS[2]),
        "",
        json.dumps({"id": "u", "completion": "x", "task": {"verifier": "answer.exactt"}}),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    summary = tmp_path / "s.json"
    proc = cli("score", src, "-o", tmp_path / "o.jsonl", "--summary-json", summary, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "line 2: bad_input: line is not valid JSON" in proc.stdout
    assert "line 5 id 'u': bad_input: unknown verifier 'answer.exactt'" in proc.stdout
    assert proc.stderr == ""  # 2 of 4 is not "most": no warning
    first = json.loads(summary.read_text())["first_errors"]
    assert [(e["line"], e["kind"]) for e in first] == [(2, "bad_input"), (5, "bad_input")]


def test_diagnose_never_reads_a_pipe_or_raises(tmp_path: Path) -> None:
    assert "JSON Lines" in diagnose_input(tmp_path / "missing.jsonl")
    assert "JSON Lines" in diagnose_input(Path("-"))
    assert "JSON Lines" in diagnose_input(tmp_path)


def test_unknown_verifier_suggests_the_closest_name() -> None:
    from verifiers import get_verifier
    from verifiers.errors import UnknownVerifier

    with pytest.raises(UnknownVerifier) as info:
        get_verifier("answer.exakt")
    assert "did you mean 'answer.exact'?" in str(info.value)
    with pytest.raises(UnknownVerifier) as info:
        get_verifier("zzzz")
    assert "did you mean" not in str(info.value)
