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


LEAVE_BEHIND = (
    "import os\n"
    "for d in ('/tmp', '/dev/shm'):\n"
    "    if os.access(d, os.W_OK):\n"
    "        open(os.path.join(d, 'left_by_previous_job'), 'w').write('x' * 1000)\n"
)
LIST_SCRATCH = (
    "import os\n"
    "print(sorted(n for d in ('/tmp', '/dev/shm') if os.path.isdir(d) for n in os.listdir(d)"
    " if n == 'left_by_previous_job'))\n"
)


def test_a_job_cannot_leave_files_for_the_next_job_in_shared_scratch(run_with: Any) -> None:
    async def body(provider: Any) -> Any:
        async with provider.session("python") as first:
            wrote = await first.exec(["python3", "-c", LEAVE_BEHIND])
            assert wrote.returncode == 0, wrote.stderr[-300:]
        async with provider.session("python") as second:
            return await second.exec(["python3", "-c", LIST_SCRATCH])

    # One warm worker, so both sessions run in the same container / runner.
    result = run_with(body, pool_size=1)
    assert result.returncode == 0, result.stderr[-300:]
    assert result.text().strip() == "[]"
