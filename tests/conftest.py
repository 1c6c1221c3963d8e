"""Test configuration: opt-in markers, and no silent skips in CI.

Markers (``docker``, ``bwrap``, ``blender``, ``slow``, ``rl``, ``ray``, ``gpu``, ``browser``) select tests
that need parts a developer's machine may lack. They are skipped unless enabled with ``--run=docker,slow``
or ``--run-all``. CI runs ``pytest --run-all`` with ``CI=true``; then every skip is turned into
a failure, because a skipped test in CI is a feature nobody checked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ci_durations import FileDurations

OPT_IN = ("docker", "bwrap", "blender", "slow", "rl", "ray", "gpu", "browser")
REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run", default="", help=f"comma-separated opt-in markers: {OPT_IN}")
    parser.addoption("--run-all", action="store_true", help="enable every opt-in marker but gpu")


def _enabled(config: pytest.Config) -> set[str]:
    if config.getoption("--run-all"):
        return set(OPT_IN) - {"gpu"}
    return {m.strip() for m in str(config.getoption("--run")).split(",") if m.strip()}


WARNINGS_NOT_YET_ERRORS: tuple[str, ...] = ()
"""Test folders or files (paths under tests/, sub-folders allowed) not yet run with
``filterwarnings = error`` (pyproject.toml): their warnings show as before. A folder's owner
runs it with ``-W error``, fixes or names (in pyproject.toml, precisely) what it raises, and
removes its line here (one entry per line, so removals merge cleanly)."""


def _warnings_exempt(relative: tuple[str, ...]) -> bool:
    """Whether a test at ``relative`` (path parts under tests/) is still exempt."""
    return any(
        relative[: len(parts)] == parts
        for parts in (tuple(entry.split("/")) for entry in WARNINGS_NOT_YET_ERRORS)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    enabled = _enabled(config)
    tests = Path(__file__).resolve().parent
    for item in items:
        try:
            relative = Path(item.path).resolve().relative_to(tests).parts
        except ValueError:  # a doctest or a test outside tests/
            relative = ()
        if _warnings_exempt(relative):
            item.add_marker(pytest.mark.filterwarnings("default"))
        # Markers, not keywords: keywords include the names of the folders above a test (a
        # checkout under a folder called `ray` would make every test opt-in).
        marked = {mark.name for mark in item.iter_markers()}
        missing = [m for m in OPT_IN if m in marked and m not in enabled]
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"opt-in marker(s) {missing}: use --run"))


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and item.get_closest_marker("gpu") is None:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (a skipped test is a failing feature): {report.longrepr}"


_FILE_DURATIONS = FileDurations()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _FILE_DURATIONS.add(report.nodeid, report.duration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under CI, the seconds each test file took (see ``tests/ci_durations.py``)."""
    if not _in_ci() or not _FILE_DURATIONS.seconds:
        return
    terminalreporter.write_sep("=", "seconds by test file (all phases; CI=true)")
    for line in _FILE_DURATIONS.lines():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real test data (TAT-QA, meshes, PDFs) beside the repository: ``../shared/data``."""
    from verifiers.settings import env

    for candidate in (
        env("VERIFIERS_SHARED_DATA"),
        REPO.parent / "shared" / "data",
        Path("/work/shared/data"),
    ):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    pytest.fail("shared test data not found: set VERIFIERS_SHARED_DATA or place ../shared/data")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
