"""A third-party plugin distribution, really installed (pip --target), found through the
``verifiers.plugins`` entry-point group by the ``verifiers`` script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_process import run_cli

from verifiers import Result

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-verifiers"
version = "0.1"

[project.entry-points."verifiers.plugins"]
acme = "acme_verifiers"
"acmeclass.upper" = "acme_verifiers.single:Upper"
broken = "acme_broken"

[tool.setuptools]
packages = ["acme_verifiers", "acme_broken"]
"""

PLUGIN = '''
"""Acme's verifiers: registered on import (a namespace entry point)."""
from verifiers import InlineVerifier, Result, Spec, Verifier, completion_text, register


class ShoutSpec(Spec):
    min_length: int = 1


@register("acme.shout")
class Shout(InlineVerifier[ShoutSpec]):
    """Pass when the completion is upper case."""

    Spec = ShoutSpec

    def check(self, trajectory, spec):
        text = completion_text(trajectory)
        ok = text.isupper() and len(text) >= spec.min_length
        return Result.scored(1.0 if ok else 0.0, feedback="" if ok else "not shouting")


@register("acme.length")
class Length(Verifier[ShoutSpec]):
    """Reward = share of the reference length reached (async verifier)."""

    Spec = ShoutSpec
    version = "3"

    async def verify(self, trajectory, spec, ctx):
        target = len(str(trajectory.task.reference))
        return Result.scored(min(1.0, len(completion_text(trajectory)) / target))
'''

SINGLE = '''
"""A class entry point: registered under the entry point's own name."""
from verifiers import InlineVerifier, Result, Spec, completion_text


class Upper(InlineVerifier[Spec]):
    """Pass when the completion equals the reference in upper case."""

    Spec = Spec

    def check(self, trajectory, spec):
        ok = completion_text(trajectory) == str(trajectory.task.reference).upper()
        return Result.scored(1.0 if ok else 0.0)
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    (src / "acme_verifiers").mkdir(parents=True)
    (src / "acme_broken").mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "acme_verifiers" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (src / "acme_verifiers" / "single.py").write_text(textwrap.dedent(SINGLE))
    (src / "acme_broken" / "__init__.py").write_text("import acme_dependency_that_is_missing\n")
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-build-isolation",
            "--no-deps",
            "--target",
            str(site),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (site / "acme_verifiers-0.1.dist-info" / "entry_points.txt").is_file()
    return site


def cli(*args: str | Path, site: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"VERIFIERS_CACHE_DIR": str(cwd)}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return run_cli(*args, cwd=cwd, env=env)


def test_list_shows_plugin_verifiers_and_broken_plugins(plugin_site: Path, tmp_path: Path) -> None:
    proc = cli("list", "--json", site=plugin_site, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    by_name = {v["name"]: v for v in doc["verifiers"]}
    assert {"acme.shout", "acme.length", "acmeclass.upper", "answer.exact"} <= set(by_name)
    assert by_name["acme.length"]["version"] == "3"
    assert by_name["acme.shout"]["module"] == "acme_verifiers"
    assert "acme_dependency_that_is_missing" in doc["plugin_problems"]["broken"]
    human = cli("list", site=plugin_site, cwd=tmp_path)
    assert "acme.shout" in human.stdout and "plugin 'broken' unavailable" in human.stdout


def test_scoring_with_plugin_and_unknown_names(plugin_site: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "s1", "completion": "HELLO", "task": {"verifier": "acme.shout"}},
        {"id": "s2", "completion": "hello", "task": {"verifier": "acme.shout"}},
        {
            "id": "s3",
            "completion": "HI",
            "task": {"verifier": "acme.shout", "spec": {"min_length": 3}},
        },
        {
            "id": "l1",
            "completion": "abc",
            "task": {"verifier": "acme.length", "reference": "abcdef"},
        },
        {
            "id": "u1",
            "completion": "AB",
            "task": {"verifier": "acmeclass.upper", "reference": "ab"},
        },
        {"id": "n1", "completion": "x", "task": {"verifier": "acme.nope"}},
        {"id": "b1", "completion": "x", "task": {"verifier": "broken.thing"}},
        {"id": "a1", "completion": "4", "task": {"verifier": "answer.exact", "reference": "4"}},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    proc = cli("score", src, "-o", out, "-q", site=plugin_site, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = {r.id: r for r in map(Result.model_validate_json, out.read_text().splitlines())}
    assert results["s1"].status == "pass" and results["s1"].verifier == "acme.shout@1"
    assert results["s2"].status == "fail" and results["s2"].feedback == "not shouting"
    assert results["s3"].status == "fail"  # the plugin's Spec was applied
    assert results["l1"].reward == 0.5 and results["l1"].verifier == "acme.length@3"
    assert results["u1"].status == "pass"
    assert results["a1"].status == "pass"
    unknown = results["n1"].error
    assert unknown is not None and unknown.kind == "bad_input"
    assert "unknown verifier 'acme.nope'" in unknown.message
    assert "acme.shout" in unknown.message and "answer.exact" in unknown.message
    broken = results["b1"].error
    assert broken is not None and broken.kind == "bad_input"
    assert "acme_dependency_that_is_missing" in broken.message


def test_plugin_absent_without_its_site(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"completion": "HI", "task": {"verifier": "acme.shout"}}) + "\n")
    out = tmp_path / "out.jsonl"
    assert cli("score", src, "-o", out, "-q", site=None, cwd=tmp_path).returncode == 0
    (result,) = map(Result.model_validate_json, out.read_text().splitlines())
    assert result.error is not None and "unknown verifier 'acme.shout'" in result.error.message
