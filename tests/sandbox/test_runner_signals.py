"""A job forked from the runner's warm interpreter must behave like a fresh ``python3``."""

from __future__ import annotations

from typing import Any

CLOSED_PIPE = "import os\nr, w = os.pipe()\nos.close(r)\nos.write(w, b'x')\n"


def test_writing_to_a_closed_pipe_raises_instead_of_killing_the_job(run_with: Any) -> None:
    async def body(provider: Any) -> Any:
        async with provider.session("python") as sandbox:
            return await sandbox.exec(["python3", "-c", CLOSED_PIPE])

    result = run_with(body)
    # A fresh CPython ignores SIGPIPE: the write raises BrokenPipeError (exit 1, traceback).
    # Dying of SIGPIPE (returncode -13) would mean the fast path differs from python3.
    assert result.returncode == 1, (result.returncode, result.stderr[-300:])
    assert b"BrokenPipeError" in result.stderr
