"""The JSON Schemas in docs/schema/ are what the models generate (``python -m verifiers.schema``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers import Result, Trajectory
from verifiers.schema import SCHEMAS, main, render


def test_committed_schemas_are_current(repo_root: Path) -> None:
    out = repo_root / "docs" / "schema"
    assert main(["--check", "--out", str(out)]) == 0, "run: python -m verifiers.schema"


def test_check_detects_stale_and_write_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--check", "--out", str(tmp_path)]) == 1  # missing files are stale
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--check", "--out", str(tmp_path)]) == 0
    target = tmp_path / "result.schema.json"
    target.write_text(target.read_text().replace("reward", "rewards"))
    assert main(["--check", "--out", str(tmp_path)]) == 1
    assert "result.schema.json" in capsys.readouterr().err


def test_schemas_describe_fields_and_match_examples() -> None:
    traj = json.loads(render("trajectory.schema.json"))
    assert traj["$schema"].endswith("2020-12/schema")
    assert set(traj["required"]) == {"completion", "task"}
    assert "--resume" in traj["properties"]["id"]["description"]
    result = json.loads(render("result.schema.json"))
    assert result["properties"]["status"]["enum"] == ["pass", "fail", "error", "skipped"]
    assert result["additionalProperties"] is False
    assert set(SCHEMAS) == {"trajectory.schema.json", "result.schema.json"}
    assert (
        SCHEMAS["trajectory.schema.json"] is Trajectory and SCHEMAS["result.schema.json"] is Result
    )


def test_module_entry_point(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "verifiers.schema", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SCHEMAS)
