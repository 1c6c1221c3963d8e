"""``verifiers score`` killed with SIGKILL midway, then ``--resume``: one result per line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifiers import Result

SCRIPT = Path(sys.executable).parent / "verifiers"


def make_input(path: Path, n: int) -> list[tuple[str | None, int]]:
    """Write ``n`` lines (some without id, some broken, some repeated ids); return the
    expected (id, line number) of every result, in order."""
    expected: list[tuple[str | None, int]] = []
    with path.open("w") as handle:
        for i in range(n):
            line = i + 1
            task = {"verifier": "answer.exact", "reference": str(i % 7)}
            if i % 997 == 0:
                handle.write(f'{{"id": "broken-{i}", "completion": \n')
                expected.append((f"broken-{i}", line))
            elif i % 101 == 0:  # no id: matched by position on resume
                handle.write(json.dumps({"completion": str(i % 5), "task": task}) + "\n")
                expected.append((None, line))
            elif i % 503 == 0:  # an id used twice
                handle.write(json.dumps({"id": "dup", "completion": "1", "task": task}) + "\n")
                expected.append(("dup", line))
            else:
                ident = f"t{i}"
                handle.write(json.dumps({"id": ident, "completion": str(i % 5), "task": task}))
                handle.write("\n")
                expected.append((ident, line))
    return expected


def run_score(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(SCRIPT), "score", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "VERIFIERS_CACHE_DIR": str(cwd)},
    )


@pytest.mark.slow
def test_resume_after_kill_9_gives_exactly_one_result_per_line(tmp_path: Path) -> None:
    n = 60_000
    src = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    expected = make_input(src, n)

    proc = run_score([str(src), "-o", str(out), "-q", "--no-cache"], tmp_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and out.stat().st_size > 2_000_000:
            break
        assert proc.poll() is None, "finished before it could be killed: make the input larger"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes its stderr pipe
    assert proc.returncode == -signal.SIGKILL
    partial = out.read_bytes()
    complete_lines = partial.count(b"\n")
    assert 0 < complete_lines < n, "the kill must land midway"

    resumed = run_score([str(src), "-o", str(out), "-q", "--resume", "--no-cache"], tmp_path)
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err.decode()

    lines = out.read_text().splitlines()
    assert len(lines) == n
    results = [Result.model_validate_json(line) for line in lines]
    assert [r.id for r in results] == [ident for ident, _ in expected]
    for result, (ident, line) in zip(results, expected, strict=True):
        if ident is not None and ident.startswith("broken-"):
            assert result.status == "error" and result.error is not None
            assert result.error.line == line
        else:
            assert result.status in ("pass", "fail")
    # the lines written before the kill were kept byte for byte (a partial tail was cut)
    kept = partial[: partial.rfind(b"\n") + 1]
    assert out.read_bytes().startswith(kept)

    # resuming a finished file is a no-op
    again = run_score([str(src), "-o", str(out), "-q", "--resume", "--no-cache"], tmp_path)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()
    assert len(out.read_text().splitlines()) == n
