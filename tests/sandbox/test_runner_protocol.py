"""Unit tests of the runner protocol: the real runner script in a plain subprocess.

No isolation backend is involved (these run everywhere); the bwrap/docker tests cover the
isolation itself.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from verifiers.sandbox._local import _system_python, runner_path
from verifiers.sandbox._runner import HEADER, decode_body, encode_frame

# Jobs run as another uid: use an interpreter every uid can execute.
PY = _system_python()


class RunnerProcess:
    def __init__(self, tmp: str, **extra: Any) -> None:
        config = {
            "root": tmp,
            "job_uid": 65000 + os.getpid() % 500,
            "job_gid": 65000 + os.getpid() % 500,
            **extra,
        }
        self.proc = subprocess.Popen(
            [PY, "-I", str(runner_path())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode_frame(config))  # the config is the first frame
        self.proc.stdin.flush()
        self.hello = self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        header = self.proc.stdout.read(HEADER.size)
        assert len(header) == HEADER.size, "runner closed its stream"
        (size,) = HEADER.unpack(header)
        return decode_body(self.proc.stdout.read(size))

    def call(self, **message: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode_frame(message))
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=10)
        self.proc.stdout.close()
        return code


@pytest.fixture()
def runner() -> Iterator[RunnerProcess]:
    # pytest's tmp_path sits under a 0700 dir the job uid cannot traverse.
    root = tempfile.mkdtemp(prefix="verifiers-runner-test-")
    os.chmod(root, 0o755)
    process = RunnerProcess(os.path.join(root, "work"))
    yield process
    if process.proc.poll() is None:
        process.close()
    for stream in (process.proc.stdin, process.proc.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    shutil.rmtree(root, ignore_errors=True)


def test_frame_roundtrip() -> None:
    message = {"op": "exec", "argv": ["a", "ü"], "stdin": b"\x00\xff"}
    frame = encode_frame(message)
    (size,) = HEADER.unpack(frame[: HEADER.size])
    assert size == len(frame) - HEADER.size
    body = decode_body(frame[HEADER.size :])
    assert body == message and body["stdin"] == b"\x00\xff"
    with pytest.raises(ValueError):
        decode_body(b"[1, 2]")


def test_frame_bytes_travel_raw_after_the_json() -> None:
    blend = bytes(range(256)) * 400  # newlines, NULs, quotes: every byte value
    message = {
        "op": "batch",
        "ops": [{"op": "write", "files": {"a": blend, "b": {"data": b"", "keep": "h"}}}],
        "note": 'a "\\u0000bytes" look-alike string\n',
    }
    frame = encode_frame(message)
    assert blend in frame and base64.b64encode(blend[:300]) not in frame
    text = frame[HEADER.size :].split(b"\n", 1)[0]
    assert len(text) < 400  # the JSON names the bytes, it does not hold them
    body = decode_body(frame[HEADER.size :])
    assert body == message and type(body["ops"][0]["files"]["a"]) is bytes
    assert encode_frame({"op": "ping"})[HEADER.size :] == b'{"op":"ping"}'  # no bytes: JSON


@pytest.mark.parametrize(
    "body",
    [
        b'{"x":{"\\u0000bytes":[0,5]}}\nabcd',  # past the end
        b'{"x":{"\\u0000bytes":[-1,1]}}\nabcd',
        b'{"x":{"\\u0000bytes":[0,1],"y":1}}\nabcd',  # not the reference's shape
        b'{"x":{"\\u0000bytes":"0,1"}}\nabcd',
        b'{"x":{"\\u0000bytes":[0.0,1]}}\nabcd',
        b'{"x":{"\\u0000bytes":[true,1]}}\nabcd',
    ],
)
def test_frame_bad_bytes_reference_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ValueError, match="bytes reference"):
        decode_body(body)


def test_runner_refuses_text_where_bytes_belong(runner: RunnerProcess) -> None:
    # Version 1 sent base64 text: now it is a bad request, never written as the text itself.
    assert runner.call(op="begin")["ok"]
    reply = runner.call(op="write", files={"a.txt": "ZGF0YQ=="})
    assert reply["ok"] is False and reply["kind"] == "bad_request", reply
    reply = runner.call(op="write", files={"a.txt": {"data": "ZGF0YQ==", "keep": "0" * 64}})
    assert reply["ok"] is False and reply["kind"] == "bad_request", reply


def test_hello_and_protocol_errors(runner: RunnerProcess) -> None:
    assert runner.hello["op"] == "hello" and runner.hello["version"] == 2
    pong = runner.call(op="ping")
    assert pong["ok"] and pong["pong"] and pong["fds"] > 2 and pong["jobs"] == 0
    reply = runner.call(op="exec", argv=["true"])
    assert reply["ok"] is False and reply["kind"] == "protocol"  # exec before begin
    assert runner.call(op="nope")["ok"] is False


def test_exec_roundtrip(runner: RunnerProcess) -> None:
    begin = runner.call(op="begin")
    assert begin["ok"] and os.path.isdir(begin["workdir"])
    reply = runner.call(
        op="exec",
        argv=[PY, "-c", "import sys; d = sys.stdin.read(); print(d.upper()); sys.exit(3)"],
        stdin=b"hello",
        timeout=20,
        limits={"memory_mb": 1024, "output_bytes": 1000},
    )
    assert reply["ok"], reply
    assert reply["returncode"] == 3
    assert reply["stdout"] == b"HELLO\n"
    assert reply["timed_out"] is False and reply["truncated"] is False
    assert reply["cpu_s"] > 0 and reply["peak_memory_mb"] > 1


def test_output_cap_and_timeout(runner: RunnerProcess) -> None:
    runner.call(op="begin")
    reply = runner.call(
        op="exec",
        argv=[PY, "-c", "import sys; sys.stdout.write('x' * 100000)"],
        timeout=20,
        limits={"memory_mb": 1024, "output_bytes": 1000},
    )
    assert reply["truncated"] is True and len(reply["stdout"]) == 1000
    reply = runner.call(op="exec", argv=["sleep", "30"], timeout=0.5, limits={})
    assert reply["timed_out"] is True and reply["returncode"] == -9
    assert reply["duration_s"] < 5


def test_files_and_paths(runner: RunnerProcess) -> None:
    runner.call(op="begin")
    assert runner.call(op="write", files={"a/b.txt": b"data"}, readonly=False)["ok"]
    assert runner.call(op="read", path="a/b.txt")["data"] == b"data"
    assert runner.call(op="read", path="missing")["kind"] == "not_found"
    assert runner.call(op="read", path="../etc/passwd")["kind"] == "bad_path"
    assert runner.call(op="read", path="/etc/passwd")["kind"] == "bad_path"
    assert runner.call(op="read", path="a/b.txt", max_bytes=2)["kind"] == "too_large"
    end = runner.call(op="end")
    assert end["ok"] and end["clean"] is True


def test_eof_stops_runner(runner: RunnerProcess) -> None:
    assert runner.close() == 0


def _exec(runner: RunnerProcess, argv: list[str], **extra: Any) -> dict[str, Any]:
    reply = runner.call(op="exec", argv=argv, timeout=20, limits={"memory_mb": 1024}, **extra)
    assert reply["ok"], reply
    return reply


def test_python_fast_path_keeps_python3_semantics(runner: RunnerProcess) -> None:
    assert runner.hello["fast_python"] is True
    runner.call(op="begin")
    code = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: print('bye'))\n"
        "print(sys.argv, os.getuid() == int(os.environ['JOB_UID']), __name__, sys.path[0])\n"
    )
    reply = _exec(runner, [PY, "-c", code, "x", "y"], env={"JOB_UID": str(runner.hello["job_uid"])})
    assert reply["fast"] is True
    assert reply["stdout"] == b"['-c', 'x', 'y'] True __main__ \nbye\n"
    reply = _exec(runner, [PY, "-c", "import sys; sys.exit(3)"])
    assert reply["fast"] and reply["returncode"] == 3
    reply = _exec(runner, [PY, "-c", "raise SystemExit('custom message')"])
    assert reply["returncode"] == 1 and reply["stderr"] == b"custom message\n"
    reply = _exec(runner, [PY, "-c", "x = 1\nraise ValueError('boom')"])
    stderr = reply["stderr"].decode()
    assert reply["returncode"] == 1
    assert stderr.startswith('Traceback (most recent call last):\n  File "<string>", line 2')
    assert stderr.endswith("ValueError: boom\n")
    # -m and script modes, with stdin
    reply = _exec(runner, [PY, "-m", "json.tool"], stdin=b'{"a": 1}')
    assert reply["fast"] and reply["stdout"] == b'{\n    "a": 1\n}\n'
    runner.call(op="write", files={"prog.py": b"import sys\nprint(sys.argv[1:], __file__)"})
    reply = _exec(runner, [PY, "prog.py", "arg"])
    assert reply["fast"] and reply["stdout"].startswith(b"['arg'] ")


def test_fast_path_jobs_find_the_zygotes_objects_frozen(runner: RunnerProcess) -> None:
    """The zygote ``gc.freeze()``s before it forks (docs/sandbox.md): a job's collections never
    walk the zygote's objects, and ``gc.get_objects()`` lists only what the job made."""
    runner.call(op="begin")
    code = "import gc; mine = [[] for _ in range(5)]; print(gc.get_freeze_count() > 1000, len(gc.get_objects()) < 1000)"
    reply = _exec(runner, [PY, "-c", code])
    assert reply["fast"] is True
    assert reply["stdout"] == b"True True\n"


def _runner_with(config: dict[str, Any]) -> Iterator[RunnerProcess]:
    root = tempfile.mkdtemp(prefix="verifiers-runner-test-")
    os.chmod(root, 0o755)
    process = RunnerProcess(os.path.join(root, "work"), **config)
    try:
        yield process
    finally:
        if process.proc.poll() is None:
            process.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two CPUs")
def test_the_runner_pins_itself_and_every_job_to_its_home_cpus() -> None:
    """``cpus`` in the config (sandbox/_cpus.py): the runner, its zygote's fast-path jobs and
    forked programs all run there; CPUs the host does not have leave it unpinned."""
    cpu = max(os.sched_getaffinity(0))
    probe = "import os; print(sorted(os.sched_getaffinity(0)))"
    for runner in _runner_with({"cpus": [cpu]}):
        assert runner.hello["cpus"] == [cpu]
        runner.call(op="begin")
        fast = _exec(runner, [PY, "-c", probe])
        forked = _exec(runner, [PY, "-S", "-c", probe])  # a flag: not the fast path
        assert fast["fast"] is True and not forked.get("fast")
        assert fast["stdout"] == forked["stdout"] == f"[{cpu}]\n".encode()
    for runner in _runner_with({"cpus": [100_000]}):
        assert runner.hello["cpus"] == sorted(os.sched_getaffinity(0))


def test_preload_teardown_does_not_run_in_jobs() -> None:
    """Exit handlers the runtime's preload registered (bpy: Cycles and add-on teardown, ~50 ms
    per job) are the zygote's, not a job's: a job exits without them and still runs its own.
    What the preload printed is not in any job's output either."""
    root = tempfile.mkdtemp(prefix="verifiers-runner-test-")
    os.chmod(root, 0o755)
    preload = (
        "import atexit, sys\natexit.register(lambda: print('runtime teardown'))\n"
        "print('preload chatter')\nsys.stderr.write('preload warning')\n"  # buffered, unflushed
    )
    runner = RunnerProcess(os.path.join(root, "work"), preload=preload)
    try:
        assert runner.hello["fast_python"] is True and not runner.hello["preload_error"]
        runner.call(op="begin")
        code = "import atexit\natexit.register(lambda: print('job teardown'))\nprint('ran')\n"
        reply = _exec(runner, [PY, "-c", code])
        assert reply["fast"] is True
        assert reply["stdout"] == b"ran\njob teardown\n"
        assert reply["stderr"] == b""
    finally:
        runner.close()
        shutil.rmtree(root, ignore_errors=True)


def test_python_fast_path_is_skipped_when_semantics_would_differ(runner: RunnerProcess) -> None:
    runner.call(op="begin")
    for argv, env in (
        ([PY, "-u", "-c", "print(1)"], {}),  # interpreter flags
        ([PY, "-c", "print(1)"], {"PYTHONHASHSEED": "0"}),  # start-up variables
        (["/bin/echo", "1"], {}),  # another program
    ):
        reply = _exec(runner, argv, env=env)
        assert reply["fast"] is False and reply["stdout"] == b"1\n", argv


def test_python_fast_path_limits_and_timeouts(runner: RunnerProcess) -> None:
    runner.call(op="begin")
    reply = runner.call(
        op="exec", argv=[PY, "-c", "while True: pass"], timeout=0.5, limits={"memory_mb": 1024}
    )
    assert reply["fast"] and reply["timed_out"] and reply["returncode"] == -9
    reply = runner.call(
        op="exec",
        argv=[PY, "-c", "x = bytearray(400 << 20)"],
        timeout=10,
        limits={"memory_mb": 200},
    )
    assert reply["fast"] and reply["oom_killed"] and reply["returncode"] == 1
    again = _exec(runner, [PY, "-c", "print('still fine')"])
    assert again["fast"] and again["stdout"] == b"still fine\n"


def test_fast_path_spec_larger_than_a_pipe_buffer(runner: RunnerProcess) -> None:
    runner.call(op="begin")
    code = "x = 1\n" + "#" * 300_000 + "\nprint('big', x)"
    reply = _exec(runner, [PY, "-c", code])
    assert reply["fast"] is True and reply["stdout"] == b"big 1\n"


def test_batch_runs_in_order_and_stops_at_the_first_failure(runner: RunnerProcess) -> None:
    reply = runner.call(
        op="batch",
        ops=[
            {"op": "begin"},
            {"op": "write", "files": {"in.txt": b"abc"}, "readonly": True},
            {"op": "exec", "argv": [PY, "-c", "print(open('in.txt').read()[::-1])"]},
        ],
    )
    assert reply["ok"], reply
    begin, write, run = reply["replies"]
    assert begin["ok"] and write["ok"] and write["written"] == 3
    assert run["ok"] and run["stdout"] == b"cba\n"
    reply = runner.call(
        op="batch",
        ops=[
            {"op": "write", "files": {"../x": b"no"}},
            {"op": "exec", "argv": ["/bin/true"]},
        ],
    )
    assert reply["ok"] and len(reply["replies"]) == 1  # the exec never ran
    assert reply["replies"][0]["kind"] == "bad_path"
    # An optional read (the host's prefetch of a job's outputs) that fails is only its own
    # reply; a plain one still stops the batch.
    reply = runner.call(
        op="batch",
        ops=[
            {"op": "read", "path": "nope.txt", "optional": True},
            {"op": "read", "path": "in.txt"},
            {"op": "read", "path": "nope.txt"},
            {"op": "read", "path": "in.txt"},
        ],
    )
    kinds = [r.get("kind") for r in reply["replies"]]
    assert kinds == ["not_found", None, "not_found"], reply  # the last read never ran
    assert reply["replies"][1]["data"] == b"abc"
    assert runner.call(op="batch", ops=[{"op": "batch", "ops": []}])["kind"] == "bad_request"
    assert runner.call(op="batch", ops="begin")["kind"] == "bad_request"


def test_kept_files_are_written_fresh_and_readonly_in_each_session(
    runner: RunnerProcess,
) -> None:
    import hashlib

    data = b"judge source " * 200
    digest = hashlib.sha256(data).hexdigest()
    runner.call(op="begin")
    miss = runner.call(op="write", files={"j.py": {"sha": digest}}, readonly=True)
    assert miss["ok"] is False and miss["kind"] == "cache_miss"
    forged = runner.call(op="write", files={"j.py": {"data": b"x", "keep": digest}}, readonly=True)
    assert forged["ok"] is False and forged["kind"] == "bad_request"
    kept = {"data": data, "keep": digest}
    assert runner.call(op="write", files={"j.py": kept}, readonly=True)["ok"]
    runner.call(op="end")
    for _ in range(2):
        runner.call(op="begin")
        assert runner.call(op="write", files={"d/j.py": {"sha": digest}}, readonly=True)["ok"]
        probe = (
            "import os\n"
            "st = os.stat('d/j.py')\n"
            "print(open('d/j.py', 'rb').read() == " + repr(data) + ", oct(st.st_mode & 0o777), "
            "st.st_uid == os.getuid())\n"
            "try:\n    os.remove('d/j.py')\nexcept OSError:\n    print('kept safe')\n"
        )
        reply = _exec(runner, [PY, "-c", probe])
        assert reply["stdout"] == b"True 0o444 False\nkept safe\n", reply
        runner.call(op="end")
    # Only read-only files are kept: a writable one with a hash is written but not kept.
    runner.call(op="begin")
    other = b"y" * 2000
    other_digest = hashlib.sha256(other).hexdigest()
    assert runner.call(op="write", files={"w": {"data": other, "keep": other_digest}})["ok"]
    assert runner.call(op="write", files={"w2": {"sha": other_digest}})["kind"] == "cache_miss"


def test_unclean_end_taints_the_runner(tmp_path: Any) -> None:
    """After an ``end`` that left something behind, the runner takes no further session."""
    from verifiers.sandbox._runner import RequestError, Runner

    runner = Runner.__new__(Runner)  # the logic only: no fds, signals or zygote needed
    runner.tainted = None
    runner.is_root, runner.job_uid = False, os.getuid()  # no shared scratch to scrub
    runner.private_scratch = runner.private_ipc = False
    runner.mqueue_dir, runner.shmem_baseline = "", -1
    runner.workdir = str(tmp_path / "job1")
    os.mkdir(runner.workdir)
    runner.sweep = lambda pgid: 1  # type: ignore[method-assign]  # a job process survived
    reply = runner.dispatch({"op": "end"})
    assert (reply["clean"], reply["leftover"], reply["problems"]) == (
        False,
        1,
        ["1 job processes survived"],
    )
    for op in ("begin", "exec", "write", "read"):
        with pytest.raises(RequestError) as refused:
            runner.dispatch({"op": op})
        assert refused.value.kind == "tainted"
    reply = runner.handle({"op": "batch", "ops": [{"op": "begin"}, {"op": "exec"}]})
    assert [r["kind"] for r in reply["replies"]] == ["tainted"]


def test_non_python_jobs_start_from_the_launcher_and_fall_back_to_fork(
    runner: RunnerProcess,
) -> None:
    """A root runner spawns plain commands from its launcher (``posix_spawn``); a command
    that does not exec is run by the fork path, which reports it as it always has."""
    assert runner.call(op="begin")["ok"]
    replies = [
        runner.call(op="exec", argv=["true"]),
        runner.call(op="exec", argv=["sh", "-c", "exit 3"]),
        runner.call(op="exec", argv=["missing-command"]),
    ]
    assert [r["returncode"] for r in replies] == [0, 3, 127], replies
    assert b"missing-command" in replies[2]["stderr"]
    want = [True, True, False] if os.geteuid() == 0 else [False, False, False]
    assert [r["launched"] for r in replies] == want, replies
