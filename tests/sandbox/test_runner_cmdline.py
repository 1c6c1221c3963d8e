"""The runner's command line is short and its source cannot be changed by a job (issue 19).

Every process's command line is world-readable (``ps``, ``/proc/<pid>/cmdline``): the runner
used to carry its whole source and its config (with the runtime's preload) there. Now the
source is a read-only file (bind, or a host-owned copy in a dir no job can enter) and the
config is the first frame on the protocol channel. Checked on the live runners of both
backends, read from the host's ``/proc``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox._local import runner_source

_MARKER = "class Runner:"  # a line of the runner's source
assert _MARKER in runner_source()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _runner_pids(provider: Any, backend: str) -> list[int]:
    if backend == "docker":
        api = provider._client.api
        pids: list[int] = []
        for cid in list(provider._containers):
            top = api.top(cid)
            at = top["Titles"].index("PID")
            pids += [int(row[at]) for row in top["Processes"]]
        return pids
    return _descendants(os.getpid())


async def _check(provider: Any, backend: str) -> None:
    async with provider.session("python", timeout_s=10) as sb:
        probe = """
import os
path = "/run/verifiers/runner.py"
try:
    open(path, "a").close()
    print("writable")
except OSError as exc:
    print("refused", type(exc).__name__)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        assert b"class Runner" not in line, line[:200]
print("cmdlines clean")
"""
        result = await sb.exec(["python3", "-c", probe])
        assert result.ok, result
        out = result.text().splitlines()
        assert out[0].startswith("refused") and out[-1] == "cmdlines clean", out
        pids = _runner_pids(provider, backend)
        lines = [_cmdline(pid) for pid in pids]
        # the runner (and its zygote); bwrap's own line names the bind, not the source
        runners = [
            line
            for line in lines
            if b"runner.py" in line and os.path.basename(line.split(b"\0")[0]).startswith(b"py")
        ]
        assert runners, [line[:120] for line in lines]
        for line in lines:
            assert _MARKER.encode() not in line, line[:200]
            assert b'"job_uid"' not in line and b"preload" not in line, line[:200]
        for line in runners:
            assert len(line) < 300, line
            assert b"-I" in line.split(b"\0"), line


def test_runner_command_line_is_short_and_its_source_read_only(
    backend: str, new_provider: Any
) -> None:
    async def main() -> None:
        provider = new_provider()
        try:
            await _check(provider, backend)
        finally:
            await provider.close()

    asyncio.run(main())


@pytest.mark.docker
def test_attach_channel_runner_gets_its_source_on_stdin() -> None:
    """A remote engine cannot see a host file: the runner starts from the short bootstrap and
    reads its source and config from the attached stdin (same checks)."""

    async def main() -> None:
        from verifiers.sandbox import SandboxSettings
        from verifiers.sandbox._docker import DockerProvider

        provider = DockerProvider(SandboxSettings(docker_channel="attach"))
        try:
            await _check(provider, "docker")
        finally:
            await provider.close()

    asyncio.run(main())
