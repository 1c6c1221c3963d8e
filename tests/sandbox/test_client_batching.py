"""The host client's round-trip savings: queued requests travel in one frame, ``end`` is
posted without waiting, constant read-only files travel once per runner. Real runners (the
local backend without namespaces, so these run everywhere) plus a scripted worker for the
recovery path."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import NoChannel
from verifiers.sandbox import Limits, SandboxSettings
from verifiers.sandbox._client import RunnerHandle, RunnerSandbox
from verifiers.sandbox._local import LocalProvider, _system_python
from verifiers.sandbox._runner import HEADER, decode_body, encode_frame

PY = _system_python()


def _frames(chunks: list[bytes]) -> list[dict[str, Any]]:
    data = b"".join(chunks)
    out = []
    while data:
        (size,) = HEADER.unpack(data[: HEADER.size])
        out.append(decode_body(data[HEADER.size : HEADER.size + size]))
        data = data[HEADER.size + size :]
    return out


def test_a_session_is_one_frame_and_constant_files_travel_once() -> None:
    judge = b"# a constant judge\n" * 400  # 7.6 KB, read-only: kept by the runner

    async def main() -> list[list[dict[str, Any]]]:
        provider = LocalProvider(
            # No isolation needs no runtime root: the host-interpreter escape hatch.
            SandboxSettings(local_isolation="none", local_python=Path(sys.executable), pool_size=1)
        )
        sessions: list[list[dict[str, Any]]] = []
        try:
            for i in range(3):
                async with provider.session("python") as sb:
                    sent: list[bytes] = []
                    channel = sb._worker.channel
                    original = channel.write

                    async def write(
                        data: bytes, original: Any = original, sent: list[bytes] = sent
                    ) -> None:
                        sent.append(data)
                        await original(data)

                    channel.write = write  # type: ignore[method-assign]
                    await sb.write_files({"solution.py": f"print({i})"})
                    await sb.write_files({".judge/j.py": judge}, readonly=True)
                    code = (
                        "import os, runpy\n"
                        "st = os.stat('.judge/j.py')\n"
                        "print(st.st_size, oct(st.st_mode & 0o777), st.st_uid == os.getuid())\n"
                        "runpy.run_path('solution.py')\n"
                    )
                    if i == 2:  # what the job leaves comes back in the exec's frame
                        code += "open('out.txt', 'w').write('made by the job')\n"
                        for name in ("out.txt", "missing.txt", "solution.py"):
                            sb.prefetch(name, max_bytes=1 << 20)
                    result = await sb.exec([PY, "-c", code])
                    assert result.ok, result
                    assert result.stdout == f"{len(judge)} 0o444 False\n{i}\n".encode()
                    if i == 2:
                        assert await sb.read_file("out.txt", max_bytes=1 << 20) == (
                            b"made by the job"
                        )
                        with pytest.raises(FileNotFoundError):
                            await sb.read_file("missing.txt", max_bytes=1 << 20)
                        # A write after the exec drops the prefetched copy: the read sees it.
                        await sb.write_files({"solution.py": "changed"})
                        assert await sb.read_file("solution.py", max_bytes=1 << 20) == b"changed"
                    else:
                        assert await sb.read_file("solution.py") == f"print({i})".encode()
                channel.write = original  # type: ignore[method-assign]
                sessions.append(_frames(sent))
        finally:
            await provider.close()
        return sessions

    sessions = asyncio.run(main())
    for i, frames in enumerate(sessions):
        ops = frames[0]["ops"]
        if i == 2:
            # begin + 2 writes + exec + 3 optional reads in one frame; the write and the read
            # after it in one; end posted at close
            assert [f["op"] for f in frames] == ["batch", "batch", "end"], frames
            assert [o["op"] for o in ops] == ["begin", "write", "write", "exec", *["read"] * 3]
            assert all(o["optional"] for o in ops[4:])
        else:
            # begin + 2 writes + exec in one frame; the read alone; end posted at close
            assert [f["op"] for f in frames] == ["batch", "read", "end"], frames
            assert [o["op"] for o in ops] == ["begin", "write", "write", "exec"]
        kept = ops[2]["files"][".judge/j.py"]
        if i == 0:
            assert set(kept) == {"data", "keep"} and kept["data"] == judge
        else:
            assert set(kept) == {"sha"}  # named by hash: 64 bytes instead of 10 KB
            assert len(encode_frame(frames[0])) < 1500  # the frame as it went on the wire


class _Scripted(RunnerHandle):
    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__(NoChannel(), "key")
        self.hello = {"root": "/work"}
        self.replies = replies
        self.sent: list[dict[str, Any]] = []

    async def call(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.sent.append(message)
        return self.replies.pop(0)

    async def post(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def kill(self) -> None:
        self.broken = "killed"


def test_a_tainted_runner_hands_the_session_to_a_fresh_one_before_anything_runs() -> None:
    ran = {"ok": True, "returncode": 0, "stdout": b"hi\n", "stderr": b"", "truncated": False}
    ran |= {"timed_out": False, "oom_killed": False, "duration_s": 0.01, "cpu_s": 0.0}
    ran |= {"peak_memory_mb": 1.0, "leftover": 0}
    refused = {"ok": False, "kind": "tainted", "error": "1 job processes survived"}
    bad = _Scripted([{"ok": True, "replies": [refused]}])
    bad.begun = 4
    good = _Scripted(
        [{"ok": True, "replies": [{"ok": True, "workdir": "/work/job1"}, {"ok": True}, ran]}]
    )
    released: list[tuple[RunnerHandle, bool]] = []

    async def release(worker: RunnerHandle, reusable: bool) -> None:
        released.append((worker, reusable))

    async def acquire() -> RunnerHandle:
        return good

    async def main() -> None:
        sb = RunnerSandbox(bad, Limits(), SandboxSettings(), release, acquire)
        await sb.begin()
        assert sb.workdir == "/work/job5"
        await sb.write_files({"a.txt": "1"})
        result = await sb.exec(["cat", "a.txt"])
        assert result.stdout == b"hi\n" and sb.workdir == "/work/job1"
        assert released == [(bad, False)]  # recycled, never reused
        assert [o["op"] for o in good.sent[0]["ops"]] == ["begin", "write", "exec"]
        await sb.close()
        assert good.sent[-1] == {"op": "end"} and released[-1] == (good, True)

    asyncio.run(main())


def test_a_session_that_sends_nothing_costs_nothing() -> None:
    worker = _Scripted([])
    released: list[tuple[RunnerHandle, bool]] = []

    async def release(w: RunnerHandle, reusable: bool) -> None:
        released.append((w, reusable))

    async def main() -> None:
        sb = RunnerSandbox(worker, Limits(), SandboxSettings(), release)
        await sb.begin()
        await sb.write_files({"unused.txt": "x"})
        await sb.close()

    asyncio.run(main())
    assert worker.sent == [] and released == [(worker, True)]
