"""Offline re-verification: ``verifiers score`` on workspace trajectories whose completion is
a unified diff or a file map (the agent's final changes), applied to the starting tree in a fresh
sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episode_helpers import TASKS, row

from verifiers.cli import main

pytestmark = pytest.mark.bwrap


def test_score_cli_on_diff_and_file_map(tmp_path: Path) -> None:
    diff = TASKS["bugfix-diff-offline"]["solution"]
    lines = [
        row(
            "bugfix-diff-offline",
            id="diff-ok",
            completion=f"Here is the fix:\n```diff\n{diff}```\n",
        ),
        row("bugfix-calc", id="map-ok", completion=json.dumps(TASKS["bugfix-calc"]["solution"])),
        row(
            "bugfix-diff-offline",
            id="diff-reject",
            completion=diff.replace("def add(a, b):", "def add(x, y):"),
        ),
        row(
            "bugfix-calc",
            id="map-partial-broke-p2p",
            completion=json.dumps({"calc.py": "def add(a, b):\n    return a + b\n"}),
        ),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(src), "-o", str(out), "--sandbox", "local", "--no-cache", "-q"]) == 0
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert (results["diff-ok"]["status"], results["diff-ok"]["reward"]) == ("pass", 1.0)
    assert results["diff-ok"]["details"]["form"] == "diff"
    assert (results["map-ok"]["status"], results["map-ok"]["reward"]) == ("pass", 1.0)
    reject = results["diff-reject"]
    assert (reject["status"], reject["reward"]) == ("fail", 0.0)
    assert "hunk 1" in reject["feedback"] and "does not apply" in reject["feedback"]
    broke = results["map-partial-broke-p2p"]
    assert (broke["status"], broke["reward"]) == ("fail", 0.0)
    assert broke["components"]["pass_to_pass"] == 0.0
