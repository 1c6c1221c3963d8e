"""Fail fast: infra errors that no retry can fix are not retried and stop a run early.

Real causes only: ``--sandbox none`` (the engine's own refusal), a Docker engine that is not
there (``DOCKER_HOST`` at a dead socket, through the real docker SDK), and a runtime that is
not built (the local backend over an empty runtime cache). Each must be classified where it is
raised (``retryable=False``), give one attempt, and after ``fail_fast_after`` identical ones in
a row stop the CLI with one message, its fix, and a ``--resume`` command that continues.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifiers import Engine, EngineSettings, Result
from verifiers.errors import InfraError, MissingDependency, RunAborted, SandboxUnavailable

SCRIPT = Path(sys.executable).parent / "verifiers"

CODE_TASK = {
    "verifier": "code.tests",
    "spec": {
        "tests": {
            "kind": "assert",
            "entry_point": "f",
            "code": "def check(c):\n    assert c(1) == 2\n",
        }
    },
}


def code_item(ident: str) -> dict[str, object]:
    return {
        "id": ident,
        "completion": "```python\ndef f(x):\n    return x + 1\n```",
        "task": CODE_TASK,
    }


def exact_item(ident: str) -> dict[str, object]:
    return {"id": ident, "completion": "4", "task": {"verifier": "answer.exact", "reference": "4"}}


def cli(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "VERIFIERS_CACHE_DIR": str(cwd), **(env or {})},
        timeout=300,
    )


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_retryable_is_decided_by_the_class_and_where_raised() -> None:
    assert InfraError("pipe broke").retryable is True
    assert SandboxUnavailable("container start timed out").retryable is True
    assert SandboxUnavailable("no engine", retryable=False).retryable is False
    assert MissingDependency("docker", "sandbox").retryable is False
    assert RunAborted("x", hint=None, count=3).retryable is False


async def _stream(
    items: list[dict[str, object]], **settings: object
) -> tuple[list[Result], BaseException | None]:
    out: list[Result] = []
    async with Engine(EngineSettings(sandbox="none", **settings)) as engine:  # type: ignore[arg-type]
        try:
            async for result in engine.stream(items):
                out.append(result)
        except RunAborted as exc:
            return out, exc
    return out, None


def test_unretryable_infra_error_gets_one_attempt_and_says_so() -> None:
    started = time.perf_counter()
    results, aborted = asyncio.run(_stream([code_item("c1")], retries=3, retry_backoff_s=1.0))
    assert aborted is None
    [result] = results
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "infra"
    assert result.error.attempts == 1  # not retried: 3 retries with 1 s backoff would be 7 s
    assert time.perf_counter() - started < 5
    infra = result.details["infra"]
    assert infra["retryable"] is False and "--sandbox" in infra["hint"]


def test_engine_stops_after_the_streak_and_yields_only_judged_results() -> None:
    items = [exact_item("a"), exact_item("b")] + [code_item(f"c{i}") for i in range(6)]
    results, aborted = asyncio.run(_stream(items, fail_fast_after=3))
    assert [r.id for r in results] == ["a", "b"]  # the streak was not judged: not yielded
    assert isinstance(aborted, RunAborted) and aborted.count == 3
    assert "sandboxes are disabled" in aborted.message and aborted.hint


def test_a_different_result_breaks_the_streak_and_releases_it() -> None:
    items = [code_item("c1"), code_item("c2"), exact_item("a"), code_item("c3"), code_item("c4")]
    results, aborted = asyncio.run(_stream(items, fail_fast_after=3))
    assert aborted is None
    assert [r.id for r in results] == ["c1", "c2", "a", "c3", "c4"]
    assert [r.status for r in results] == ["error", "error", "pass", "error", "error"]


def test_the_library_default_never_stops() -> None:
    assert EngineSettings().fail_fast_after == 0
    results, aborted = asyncio.run(_stream([code_item(f"c{i}") for i in range(25)]))
    assert aborted is None and len(results) == 25


def test_cli_stops_once_with_the_fix_when_docker_is_unreachable(tmp_path: Path) -> None:
    rows = [exact_item("a"), exact_item("b")] + [code_item(f"c{i}") for i in range(30)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    dead = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    proc = cli("score", src, "-o", out, "--sandbox", "docker", "--no-cache", env=dead, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 3, proc.stderr  # the error, its fix, what is kept and how to continue
    assert "stopped after 10 identical errors" in lines[0]
    assert "Docker engine not reachable" in lines[0]
    assert lines[1].startswith("verifiers: fix: ") and "dockerd" in lines[1]
    assert "2 results kept" in lines[2]
    kept = [Result.model_validate_json(x) for x in out.read_text().splitlines()]
    assert [r.id for r in kept] == ["a", "b"]
    # The printed command continues the run: every line gets exactly one result, in order.
    command = shlex.split(lines[2].split("continue with: ", 1)[1])
    assert command[0] == "verifiers" and "--resume" in command
    again = cli(*command[1:], "--fail-fast-after", "0", "-q", env=dead, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    done = [Result.model_validate_json(x) for x in out.read_text().splitlines()]
    assert [r.id for r in done] == [r["id"] for r in rows]
    assert all(r.error is not None and r.error.attempts == 1 for r in done[2:])


@pytest.mark.bwrap
def test_cli_stops_once_when_the_runtime_is_not_built(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [code_item(f"c{i}") for i in range(15)])
    out = tmp_path / "out.jsonl"
    empty = tmp_path / "runtime-cache"
    empty.mkdir()
    proc = cli(
        "score",
        src,
        "-o",
        out,
        "--sandbox",
        "local",
        "--no-cache",
        "--fail-fast-after",
        "4",
        "--no-build",  # else the pre-flight builds python into the empty cache first
        env={"VERIFIERS_SANDBOX_CACHE": str(empty)},
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 3, proc.stderr
    assert "stopped after 4 identical errors" in lines[0] and "is not built" in lines[0]
    assert "verifiers sandbox build python" in lines[1]
    assert out.read_text() == ""


def test_quiet_silences_per_item_warnings(tmp_path: Path) -> None:
    task = {**CODE_TASK, "spec": {**CODE_TASK["spec"], "timeout_s": 60}}  # type: ignore[dict-item]
    rows = [{**code_item(f"c{i}"), "task": task} for i in range(3)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    args = (
        "score",
        src,
        "--sandbox",
        "none",
        "--no-cache",
        "--timeout",
        "5",
        "--fail-fast-after",
        "0",
    )
    loud = cli(*args, "-o", tmp_path / "a.jsonl", cwd=tmp_path)
    assert loud.returncode == 0, loud.stderr
    assert "verifiers: warning: verifier code.tests allows up to" in loud.stderr
    quiet = cli(*args, "-o", tmp_path / "b.jsonl", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""


def test_in_process_main_leaves_logging_as_it_was(tmp_path: Path) -> None:
    import logging

    from verifiers.cli import main

    logger = logging.getLogger("verifiers")
    before = (logger.level, logger.propagate, list(logger.handlers))
    src = write_jsonl(tmp_path / "in.jsonl", [code_item("c1")])
    argv = ["score", str(src), "-o", str(tmp_path / "o.jsonl"), "--sandbox", "none", "-q"]
    assert main([*argv, "--no-cache"]) == 0
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
