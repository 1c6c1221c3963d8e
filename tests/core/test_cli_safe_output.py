"""``verifiers score`` never loses results: no silent overwrite, a mismatched ``--resume``
refuses, Ctrl-C says how to continue, and ``-`` streams stdin to stdout."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import SCRIPT, run_cli

from verifiers import Result


def cli(*args: str | Path, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env={"VERIFIERS_CACHE_DIR": str(cwd)}, stdin=stdin, timeout=300)


def exact(ident: str, answer: str = "4") -> str:
    task = {"verifier": "answer.exact", "reference": "4"}
    return json.dumps({"id": ident, "completion": answer, "task": task})


def write(path: Path, ids: list[str]) -> Path:
    path.write_text("".join(exact(i) + "\n" for i in ids))
    return path


def ids_in(path: Path) -> list[str | None]:
    return [Result.model_validate_json(x).id for x in path.read_text().splitlines()]


def test_refuses_to_overwrite_results_without_resume_or_force(tmp_path: Path) -> None:
    src = write(tmp_path / "in.jsonl", ["a", "b"])
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    proc = cli("score", src, "-o", out, "-q", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "already exists and is not empty" in proc.stderr
    assert "--resume" in proc.stderr and "--force" in proc.stderr
    assert out.read_text() == "precious\n"
    # the default output name is protected the same way
    assert cli("score", src, "-q", cwd=tmp_path).returncode == 0
    assert cli("score", src, "-q", cwd=tmp_path).returncode == 1
    forced = cli("score", src, "-o", out, "-q", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert ids_in(out) == ["a", "b"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli("score", src, "-o", empty, "-q", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(
    ("first_input", "second_input"),
    [
        (["x1", "x2", "x3"], ["a", "b", "c"]),  # another file altogether
        (["a", "z", "b"], ["a", "b", "c"]),  # same first id, then an id this input lacks
        (["b", "c"], ["a", "b", "c"]),  # this input's lines, but not from its start
    ],
)
def test_resume_into_the_output_of_another_input_refuses(
    tmp_path: Path, first_input: list[str], second_input: list[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert (
        cli(
            "score", write(tmp_path / "one.jsonl", first_input), "-o", out, "-q", cwd=tmp_path
        ).returncode
        == 0
    )
    before = out.read_bytes()
    proc = cli(
        "score",
        write(tmp_path / "two.jsonl", second_input),
        "-o",
        out,
        "--resume",
        "-q",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "output of another input" in proc.stderr, proc.stderr
    assert out.read_bytes() == before  # nothing appended


def test_resume_of_a_prefix_continues(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert (
        cli(
            "score", write(tmp_path / "one.jsonl", ["a", "b"]), "-o", out, "-q", cwd=tmp_path
        ).returncode
        == 0
    )
    full = write(tmp_path / "two.jsonl", ["a", "b", "c", "d"])
    proc = cli("score", full, "-o", out, "--resume", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ids_in(out) == ["a", "b", "c", "d"]


def test_dash_reads_stdin_and_writes_stdout(tmp_path: Path) -> None:
    text = "".join(exact(i, answer) + "\n" for i, answer in [("a", "4"), ("b", "5")])
    proc = cli("score", "-", "-o", "-", cwd=tmp_path, stdin=text)
    assert proc.returncode == 0, proc.stderr
    results = [Result.model_validate_json(x) for x in proc.stdout.splitlines()]
    assert [(r.id, r.status) for r in results] == [("a", "pass"), ("b", "fail")]
    assert "scored 2 lines" in proc.stderr  # the human summary moved to stderr
    default = cli("score", "-", "-q", cwd=tmp_path, stdin=text)  # IN is -: OUT defaults to -
    assert default.returncode == 0 and len(default.stdout.splitlines()) == 2
    assert not (tmp_path / "-").exists() and not list(tmp_path.glob("*.scored.jsonl"))
    piped = tmp_path / "piped.jsonl"
    assert cli("score", "-", "-o", piped, "-q", cwd=tmp_path, stdin=text).returncode == 0
    assert ids_in(piped) == ["a", "b"]
    refused = cli("score", "-", "-o", "-", "--resume", cwd=tmp_path, stdin=text)
    assert refused.returncode == 1 and "--resume needs an output file" in refused.stderr


_DEFAULT_SIGINT_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs argv[1:] with SIGINT at its default disposition (which an exec keeps)."""

SLOW = "```python\nimport time\n\ndef f(x):\n    time.sleep(0.4)\n    return x + 1\n```"

CTRL_C_ROWS = 12
"""Enough rows that the run is still going when the Ctrl-C lands: at concurrency 2 and 0.4 s
a row, the rows after the first result need over 2 s, and the signal follows that result by
at most one 50 ms poll. A handler that let the run finish (kept == every row) fails the test.
40 rows cost 25 s in CI for the same check."""


@pytest.mark.bwrap
def test_ctrl_c_keeps_results_and_prints_the_resume_command(tmp_path: Path) -> None:
    spec = {
        "tests": {
            "kind": "assert",
            "entry_point": "f",
            "code": "def check(c):\n    assert c(1) == 2\n",
        }
    }
    rows = [
        {"id": f"s{i}", "completion": SLOW, "task": {"verifier": "code.tests", "spec": spec}}
        for i in range(CTRL_C_ROWS)
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    argv = [
        "score",
        str(src),
        "-o",
        str(out),
        "--sandbox",
        "local",
        "--no-cache",
        "--concurrency",
        "2",
        "-q",
    ]
    # A shell without job control starts background jobs with SIGINT ignored, and the
    # child would inherit that (a CI started by `nohup ... &` did): give it the default.
    proc = subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGINT_EXEC, str(SCRIPT), *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "VERIFIERS_CACHE_DIR": str(tmp_path)},
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or out.stat().st_size == 0):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    kept = len(out.read_text().splitlines())
    assert 0 < kept < len(rows)
    [line] = [x for x in err.splitlines() if "continue with:" in x]
    assert f"{kept:,} results kept in" in line
    command = shlex.split(line.split("continue with: ", 1)[1])
    assert command == ["verifiers", *argv, "--resume"]
    again = subprocess.run(
        [str(SCRIPT), *command[1:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "VERIFIERS_CACHE_DIR": str(tmp_path)},
    )
    assert again.returncode == 0, again.stderr
    results = [Result.model_validate_json(x) for x in out.read_text().splitlines()]
    assert [r.id for r in results] == [r["id"] for r in rows]
    assert all(r.status == "pass" for r in results)
