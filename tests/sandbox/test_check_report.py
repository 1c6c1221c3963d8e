"""``verifiers sandbox check`` says what holds between jobs, from the runner's own report."""

from __future__ import annotations

from typing import Any

import pytest
from verifiers.sandbox._cgroups import cgroup_support
from verifiers.sandbox.cli import _isolation_rows, main


def test_rows_say_when_a_limit_is_per_process_only() -> None:
    rows = {part: (holds, why) for part, holds, why in _isolation_rows("local", {})}
    assert rows["local: memory per job"][0] is False
    assert "RLIMIT_AS per process" in rows["local: memory per job"][1]
    assert rows["local: kernel keyrings"] == (False, "open")


@pytest.mark.bwrap
def test_check_reports_the_local_isolation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")  # local only
    code = main(["check"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines: dict[str, Any] = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3:
            lines[cells[0]] = (cells[1], cells[2])
    version, _ = cgroup_support()
    if version:
        assert lines["local: memory per job"] == (
            "ok",
            f"a cgroup v{version} per job: all its processes together",
        )
    for part in ("SysV IPC", "POSIX mqueues", "kernel keyrings", "/tmp, /dev/shm"):
        assert lines[f"local: {part}"][0] == "ok", lines
