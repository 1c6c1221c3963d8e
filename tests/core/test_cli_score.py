"""The installed ``verifiers`` console script, end to end, in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_process import SCRIPT, run_cli

from verifiers import Result
from verifiers.cli import main

cli = run_cli


def exact(ident: str, completion: str, reference: str) -> str:
    task = {"verifier": "answer.exact", "reference": reference}
    return json.dumps({"id": ident, "completion": completion, "task": task})


@pytest.fixture
def scored_input(tmp_path: Path) -> Path:
    lines = [
        exact("a", "The answer is 4", "4"),
        exact("b", "The answer is 5", "4"),
        "",
        '{"id": "c", "completion": "x", "task": {"verif',
        exact("d", "4", "4"),
        json.dumps({"id": "e", "completion": "4", "task": {"verifier": "no.such"}}),
        '{"id": "f", "completion": 4, "task": {"verifier": "answer.exact"}}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_scored(path: Path) -> list[Result]:
    return [Result.model_validate_json(line) for line in path.read_text().splitlines()]


def test_score_writes_one_result_per_line_in_order(scored_input: Path, tmp_path: Path) -> None:
    summary_path = tmp_path / "summary.json"
    proc = cli("score", scored_input, "--summary-json", summary_path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "in.scored.jsonl"  # the default output name
    results = read_scored(out)
    assert [r.id for r in results] == ["a", "b", "c", "d", "e", "f"]
    assert [r.status for r in results] == ["pass", "fail", "error", "pass", "error", "error"]
    assert results[0].reward == 1.0 and results[1].reward == 0.0
    bad = {r.id: r.error for r in results if r.error is not None}
    assert bad["c"] is not None and bad["c"].kind == "bad_input" and bad["c"].line == 4
    assert bad["e"] is not None and "unknown verifier 'no.such'" in bad["e"].message
    assert "answer.exact" in bad["e"].message  # lists what is installed
    assert bad["e"].line == 6
    assert bad["f"] is not None and "field 'completion'" in bad["f"].message
    summary = json.loads(summary_path.read_text())
    assert summary["results"] == 6
    assert summary["status"] == {"pass": 2, "fail": 1, "error": 3, "skipped": 0}
    assert summary["verifiers"]["answer.exact@1"]["mean_reward"] == pytest.approx(2 / 3)
    assert summary["latency_s"]["p50"] is not None and summary["throughput_per_s"] > 0
    # the human table went to stdout
    assert "pass" in proc.stdout and "answer.exact@1" in proc.stdout and "p95" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_score_parquet_output(scored_input: Path, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    out = tmp_path / "out.parquet"
    proc = cli("score", scored_input, "-o", out, "-q", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_parquet(out)
    assert frame["id"].tolist() == ["a", "b", "c", "d", "e", "f"]
    assert proc.stdout == ""  # --quiet


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["score", "missing.jsonl"], "input file 'missing.jsonl' not found"),
        (["score", "."], "is a directory"),
        (["score", "in.jsonl", "-o", "nodir/out.jsonl"], "does not exist"),
        (["score", "in.jsonl", "-o", "in.jsonl"], "the output file is the input file"),
        (["score", "in.jsonl", "-o", "."], "is a directory"),
        (["score", "in.jsonl", "--concurrency", "0"], "invalid setting"),
        (["report", "missing.jsonl", "--html", "r.html"], "not found"),
        (["score", "in.jsonl", "-o", "/dev/full"], "No space left on device"),
        (["score", "in.jsonl", "--summary-json", "nodir/s.json"], "does not exist"),
        (["score", "in.jsonl", "--resume", "--format", "parquet"], "--resume needs a JSONL"),
    ],
)
def test_user_fixable_problems_are_one_line(
    scored_input: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unwritable_output(scored_input: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores file modes; a path under a regular file is unwritable for anyone
        target = scored_input / "out.jsonl"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "out.jsonl"
    proc = cli("score", scored_input, "-o", target, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("verifiers: error: ")
    assert "Traceback" not in proc.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    proc = cli("score", cwd=tmp_path)
    assert proc.returncode == 2 and "required" in proc.stderr
    assert cli("frobnicate", cwd=tmp_path).returncode == 2
    assert cli("--version", cwd=tmp_path).stdout.startswith("verifiers ")


def test_list_shows_verifiers(tmp_path: Path) -> None:
    proc = cli("list", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    names = {v["name"] for v in doc["verifiers"]}
    assert {"answer.exact", "answer.numeric"} <= names
    assert isinstance(doc["plugin_problems"], dict)
    human = cli("list", cwd=tmp_path)
    assert human.returncode == 0 and "answer.exact" in human.stdout


def test_cache_is_used_on_a_second_run(scored_input: Path, tmp_path: Path) -> None:
    env = {"VERIFIERS_CACHE_DIR": str(tmp_path / "cache")}
    summary = tmp_path / "s.json"
    args = ("score", scored_input, "-o", tmp_path / "o.jsonl", "--summary-json", summary, "-q")
    args += ("--force",)  # the second run overwrites the first one's output on purpose
    assert cli(*args, cwd=tmp_path, env=env).returncode == 0
    assert cli(*args, cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / "cache" / "results.sqlite").exists()
    # answer.exact is an InlineVerifier: cheaper to recompute than to look up, never cached
    assert json.loads(summary.read_text())["cached"] == 0
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not sqlite" * 500)
    proc = cli(*args, "--cache-path", broken, cwd=tmp_path)
    assert proc.returncode == 1 and "--no-cache" in proc.stderr


def test_report_html_embeds_plots(scored_input: Path, tmp_path: Path) -> None:
    out = tmp_path / "scored.jsonl"
    assert cli("score", scored_input, "-o", out, "-q", cwd=tmp_path).returncode == 0
    html = tmp_path / "report.html"
    proc = cli("report", out, "--html", html, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = html.read_text()
    assert text.count('<svg class="bar"') == 3  # one status bar per verifier row
    for title in ("reward distribution", "statuses", "latency distribution"):
        assert title in text
    assert "answer.exact@1" in text
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = cli("report", empty, "--html", html, cwd=tmp_path)
    assert proc.returncode == 1 and "holds no results" in proc.stderr


def test_progress_bar_only_on_a_terminal(scored_input: Path, tmp_path: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [str(SCRIPT), "score", str(scored_input), "-o", str(tmp_path / "o.jsonl")],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=120,
            env={**os.environ, "VERIFIERS_CACHE_DIR": str(tmp_path)},
        )
    finally:
        os.close(follower)
    os.set_blocking(leader, False)
    try:
        tty_output = os.read(leader, 65536).decode(errors="replace")
    except BlockingIOError:
        tty_output = ""
    os.close(leader)
    assert proc.returncode == 0
    assert "scoring" in tty_output  # the bar was drawn on the terminal
    assert "scoring" not in proc.stdout  # and never into the pipe


def test_delegated_verbs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import types

    seen: list[list[str]] = []
    fake = types.ModuleType("verifiers.sandbox.cli")

    def fake_main(argv: list[str]) -> int:
        seen.append(argv)
        return 3

    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verifiers.sandbox.cli", fake)
    assert main(["sandbox", "build", "--help"]) == 3
    assert seen == [["build", "--help"]]
    monkeypatch.setitem(sys.modules, "verifiers.rl_adapters.server", None)
    assert main(["serve", "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("verifiers serve: not available") and len(err.splitlines()) == 1


def test_score_parquet_input_in_process(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "id": ["p1", "p2"],
            "completion": ["The answer is 4", "5"],
            "task": [json.dumps({"verifier": "answer.exact", "reference": "4"})] * 2,
        }
    )
    src = tmp_path / "in.parquet"
    frame.to_parquet(src)
    summary = tmp_path / "s.json"
    assert main(["score", str(src), "-q", "--no-cache", "--summary-json", str(summary)]) == 0
    results = read_scored(tmp_path / "in.scored.jsonl")
    assert [(r.id, r.status) for r in results] == [("p1", "pass"), ("p2", "fail")]
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + b"\0" * 100)
    assert main(["score", str(broken), "-q", "--no-cache"]) == 1


def test_score_reads_a_pipe(scored_input: Path, tmp_path: Path) -> None:
    out = tmp_path / "piped.jsonl"
    proc = subprocess.run(
        [str(SCRIPT), "score", "/dev/stdin", "-o", str(out), "-q", "--no-cache"],
        input=scored_input.read_text(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert [r.id for r in read_scored(out)] == ["a", "b", "c", "d", "e", "f"]
