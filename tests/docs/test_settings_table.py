"""docs/settings.md is the one table of ``VERIFIERS_*`` variables, made from one registry.

Fails when the table is stale, when an engine setting has no variable, or when a
``VERIFIERS_*`` name appears anywhere in the tree (code, scripts, docs, tests) without being
declared in ``verifiers/settings.py`` (then it is read, or promised, without being documented).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

from verifiers.engine import EngineSettings
from verifiers.settings import VARIABLES, env, render_table

ROOT = Path(__file__).resolve().parents[2]
_SKIP_DIRS = {
    ".git",
    ".venv",
    ".ci-venv",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
}
"""Folders that are not the tree, for a copy without git (an unpacked sdist)."""
_NAME = re.compile(r"VERIFIERS_[A-Z0-9_]+\*?")


@functools.cache
def _tree() -> tuple[Path, ...]:
    """The tree's files: what git tracks plus new files it does not ignore.

    Asking git keeps the scan to the ~500 files of the project: a walk of the checkout also
    read CI's venv (``.ci-venv``, GBs of wheels) and took 40-56 s there. Without git (an
    unpacked sdist) the checkout is walked, without the ``_SKIP_DIRS`` folders and any venv.
    """
    try:
        listed = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = None
    if listed is not None:
        files = (ROOT / os.fsdecode(name) for name in listed.split(b"\0") if name)
        return tuple(sorted(path for path in files if path.is_file()))
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [
            d
            for d in dirs
            if d not in _SKIP_DIRS
            and not d.endswith(".egg-info")
            and not (Path(folder) / d / "pyvenv.cfg").exists()
        ]
        found += [Path(folder) / name for name in names]
    return tuple(sorted(found))


def _mentions() -> dict[str, str]:
    """Every concrete ``VERIFIERS_*`` name in the tree, with one place it appears."""
    found: dict[str, str] = {}
    for path in _tree():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary data
        for match in _NAME.finditer(text):
            token = match.group(0)
            if token.endswith("*"):  # a family ("the VERIFIERS_BLENDER_* variables")
                continue
            if path.suffix in (".h", ".hpp") and token.endswith("_H"):
                continue  # a C include guard, not an environment variable
            found.setdefault(token.rstrip("_"), str(path.relative_to(ROOT)))
    found.pop("VERIFIERS", None)  # the bare prefix (f"VERIFIERS_{name.upper()}")
    return found


def test_every_variable_named_in_the_tree_is_declared() -> None:
    declared = {v.name for v in VARIABLES}
    missing = {name: where for name, where in _mentions().items() if name not in declared}
    assert not missing, (
        f"undeclared VERIFIERS_* variables (name: a file naming it): {missing}; declare each in "
        "verifiers/settings.py VARIABLES, then run `python -m verifiers.settings docs/settings.md`"
    )


def test_every_engine_setting_has_its_variable() -> None:
    declared = {v.name for v in VARIABLES}
    for field in EngineSettings.model_fields:
        assert f"VERIFIERS_{field.upper()}" in declared, field


def test_the_docs_table_is_generated_from_the_registry() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert render_table() in text, "docs/settings.md is stale: python -m verifiers.settings"
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)


def test_reading_an_undeclared_variable_is_refused() -> None:
    with pytest.raises(KeyError, match="not a declared setting"):
        env("VERIFIERS_" + "NOT_DECLARED")  # spelt in two: not a mention


_DIRECT_READ = re.compile(
    r"""environ\s*\[\s*f?["']VERIFIERS_[^"'\]]*["']\s*\](?!\s*=[^=])"""
    r"""|(?:environ\.get|getenv)\s*\(\s*f?["']VERIFIERS_"""
)
"""A read of ``os.environ`` / ``getenv`` by a literal ``VERIFIERS_*`` name; an assignment
(``os.environ[name] = ...``, setting a child's or this process's environment) is not
a read."""
NOT_YET_THROUGH_THE_ACCESSORS = (
    "domains/code/_judge.py",  # runs inside the sandbox: its own protocol variable
    "domains/code/_judge_candidate.py",  # the same (the job's CPU account, VERIFIERS_JOB_CPU)
)
"""Files whose ``VERIFIERS_*`` reads do not go through :mod:`verifiers.settings`: only code that
runs inside a sandbox and reads its own protocol variables (not a setting: the package is not
there to read it). The package, its tests and the benchmarks read through the accessors."""


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ('os.environ["@CACHE_DIR"]', True),
        ("os.environ[ '@CACHE_DIR' ].split(':')", True),
        ('os.environ["@CACHE_DIR"] == "x"', True),
        ('os.environ.get("@SHARED_DATA")', True),
        ('os.getenv(f"@{name}")', True),
        ('environ.get(\n    "@X", "1")', True),
        ('os.environ["@CACHE_DIR"] = tempfile.mkdtemp()', False),
        ('env = {**os.environ, "@CACHE_DIR": str(tmp)}', False),
        ('monkeypatch.setenv("@CACHE_DIR", "x")', False),
    ],
)
def test_the_scan_tells_a_read_from_a_write(line: str, read: bool) -> None:
    # "@" stands for the prefix, so that these samples are neither mentions nor reads here
    assert bool(_DIRECT_READ.search(line.replace("@", "VERIFIERS" + "_"))) is read


def test_the_core_and_its_domains_read_variables_only_through_the_settings_module() -> None:
    direct = []
    for path in _tree():
        relative = path.relative_to(ROOT).as_posix()
        if path.suffix != ".py" or relative == "verifiers/settings.py":
            continue
        if relative.startswith(NOT_YET_THROUGH_THE_ACCESSORS):
            continue
        text = path.read_text(encoding="utf-8")
        direct += [f"{relative}: {m.group(0)}" for m in _DIRECT_READ.finditer(text)]
    assert not direct, (
        f"VERIFIERS_* read around verifiers.settings: {direct}; use settings.env / env_flag / "
        "cache_dir (add an accessor there if none fits)"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, True), ("", True), ("0", False), ("off", False), ("NO", False), ("yes", True)],
)
def test_an_on_off_variable_is_read_by_one_rule(
    raw: str | None, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verifiers.settings import env_flag

    name = "VERIFIERS_FINANCE_PDF_CACHE"
    if raw is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, raw)
    assert env_flag(name, True) is expected


def test_an_on_off_typo_is_an_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.errors import InvalidSettings
    from verifiers.settings import env_flag

    monkeypatch.setenv("VERIFIERS_FINANCE_PDF_CACHE", "flase")
    with pytest.raises(InvalidSettings, match="VERIFIERS_FINANCE_PDF_CACHE='flase'"):
        env_flag("VERIFIERS_FINANCE_PDF_CACHE", True)
