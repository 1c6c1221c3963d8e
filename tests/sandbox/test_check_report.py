"""``verifiers sandbox check`` says what holds between jobs, from the runner's own report."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from verifiers.sandbox._cgroups import cgroup_support
from verifiers.sandbox._host import _try_unshare
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
    # Only the python runtime is verified here: test_runtimes.py checks every runtime.
    code = main(["check", "python"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "runtime python" in out and "runtime blender" not in out, out
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
    # The host rows agree with util-linux's unshare trying the same namespaces.
    for part, flags in (
        ("user namespaces", ["--user"]),
        ("network namespaces", ["--net"]),
        ("PID namespaces", ["--pid", "--fork"]),
    ):
        done = subprocess.run(["unshare", *flags, "true"], capture_output=True, check=False)
        want = "ok" if done.returncode == 0 else "missing"
        assert lines[f"host: {part}"][0] == want, (part, lines[f"host: {part}"], done)
    assert lines["host: cgroup delegation"][0] == ("ok" if version else "missing")
    assert lines["host: seccomp"][0] == "ok", lines


def test_a_refused_namespace_says_why() -> None:
    works, why = _try_unshare(0x1)  # not a namespace flag: the kernel says EINVAL
    assert (works, why) == (False, "Invalid argument")
