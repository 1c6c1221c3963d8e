"""Smaller first-hour fixes: ``verifiers list`` at 80 columns and with a missing extra,
``sandbox check`` with the engine down, and the same flags on ``score`` and ``serve``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_process import run_cli


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env={"COLUMNS": "80", **(env or {})}, timeout=300)


def test_list_fits_80_columns_and_names_each_verifiers_extra(tmp_path: Path) -> None:
    proc = run("list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = {
        line.split("│")[1].strip(): line
        for line in lines
        if line.startswith("│") and line.split("│")[1].strip()
    }
    assert "core" in rows["answer.exact"] and "[mesh]" in rows["mesh.constraints"]
    assert "[finance]" in rows["finance.formula"] and "MISSING" not in proc.stdout
    listing = json.loads(run("list", "--json", cwd=tmp_path).stdout)
    mesh = next(v for v in listing["verifiers"] if v["name"] == "mesh.constraints")
    assert mesh["extra"] == "mesh" and mesh["missing"] == [] and mesh["module"]


def test_list_says_when_an_extra_is_missing(tmp_path: Path) -> None:
    # An installed `verifiers` whose [mesh] extra requires a distribution that is not there:
    # first on the path, so importlib.metadata reads it (a real metadata lookup).
    meta = tmp_path / "site" / "verifiers-9.9.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: verifiers\nVersion: 9.9\nProvides-Extra: mesh\n"
        'Requires-Dist: acme-geometry-not-installed>=1; extra == "mesh"\n'
    )
    proc = run("list", env={"PYTHONPATH": str(tmp_path / "site")}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[mesh] MISSING" in proc.stdout
    flat = " ".join(proc.stdout.split())  # the line wraps at 80 columns
    assert (
        "mesh.constraints: needs acme-geometry-not-installed: pip install 'verifiers[mesh]'" in flat
    )
    assert "answer.exact" in proc.stdout


@pytest.mark.bwrap
def test_sandbox_check_says_engine_unreachable_not_images_missing(tmp_path: Path) -> None:
    # One runtime is enough for what this pins (the image row's wording), and each runtime's
    # check imports its packages from its root filesystem: all six took 140-257 s in CI with
    # a cold page cache (blender and the CAD roots are GBs).
    proc = run(
        "sandbox",
        "check",
        "python",
        env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock", "COLUMNS": "200"},
        cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert "Docker engine not reachable" in out
    image_rows = [line for line in out.splitlines() if "│ image " in line]
    assert image_rows and all("engine is unreachable" in line for line in image_rows), image_rows
    assert "run `verifiers sandbox build" not in "".join(image_rows)


def test_score_and_serve_take_the_same_flags_for_the_same_settings(tmp_path: Path) -> None:
    """One reader of the shared flags (``EngineSettings.from_flags``) for both commands."""
    from verifiers.rl_adapters.server import _parser as serve_parser
    from verifiers.rl_adapters.server import settings_from_args

    from verifiers.cli._main import _parser as score_parser
    from verifiers.engine import EngineSettings
    from verifiers.errors import InvalidSettings

    shared = ["--concurrency", "3", "--timeout", "7", "--retries", "1", "--workers", "2"]
    shared += ["--sandbox", "local", "--cache-path", str(tmp_path / "c.sqlite")]
    score = score_parser().parse_args(["score", "in.jsonl", *shared])
    serve = serve_parser().parse_args(shared)
    from_score = EngineSettings.from_flags(score, cache=score.cache_path)
    assert settings_from_args(serve).engine == from_score
    assert (from_score.concurrency, from_score.timeout_s, from_score.retries) == (3, 7.0, 1)
    assert (from_score.workers, from_score.sandbox) == (2, "local")
    assert score_parser().parse_args(["score", "x", "--no-cache"]).no_cache is True
    assert serve_parser().parse_args(["--no-cache"]).cache == "off"
    assert score_parser().parse_args(["score", "x", "--timeout-s", "5"]).timeout_s == 5.0
    assert serve_parser().parse_args(["--timeout-s", "9"]).timeout_s == 9.0  # old spellings
    with pytest.raises(InvalidSettings, match="--timeout"):  # the flag, not the field, in both
        settings_from_args(serve_parser().parse_args(["--timeout", "-1"]))
    with pytest.raises(InvalidSettings, match="--timeout"):
        EngineSettings.from_flags(score_parser().parse_args(["score", "x", "--timeout", "-1"]))
