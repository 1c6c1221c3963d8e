"""The documentation site builds from docs/ with ``mkdocs build --strict``: a broken link, a
page missing from the nav or an API reference that no longer resolves fails the build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(REPO / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    api = (site / "api" / "index.html").read_text()
    for name in ("RunAborted", "EngineSettings", "fail_fast_after", "build_report", "SyncEngine"):
        assert name in api  # generated from the docstrings
    assert (site / "cli" / "index.html").is_file() and (site / "plugins" / "index.html").is_file()
