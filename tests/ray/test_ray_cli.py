"""``verifiers score FILE --ray ADDRESS``: the same output file as without Ray, line for line
(the mixed example files, broken lines included), on the two-node cluster of conftest.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "examples"


def _rows(path: Path) -> list[tuple[Any, ...]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x]
    return [
        (r["id"], r["status"], r["reward"], r["components"], (r["error"] or {}).get("kind"))
        for r in rows
    ]


def test_score_with_ray_flag_matches_local(ray_cluster: Any, tmp_path: Path) -> None:
    from verifiers.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(
            (EXAMPLES / n).read_text(encoding="utf-8") for n in ("code.jsonl", "quickstart.jsonl")
        ),
        encoding="utf-8",
    )
    common = ["score", str(src), "-q", "--no-cache", "--sandbox", "local"]
    assert main([*common, "-o", str(tmp_path / "local.jsonl")]) == 0
    summary = tmp_path / "summary.json"
    ray_out = tmp_path / "ray.jsonl"
    args = [*common, "-o", str(ray_out), "--ray", ray_cluster.address]
    assert main([*args, "--summary-json", str(summary)]) == 0
    assert _rows(ray_out) == _rows(tmp_path / "local.jsonl")
    assert json.loads(summary.read_text())  # the summary is written as without Ray
    # --resume through Ray: nothing left to score, the file is unchanged
    before = ray_out.read_text(encoding="utf-8")
    assert main([*args, "--resume"]) == 0
    assert ray_out.read_text(encoding="utf-8") == before
