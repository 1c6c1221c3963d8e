"""Verifiers and builders shared by the adapter tests (also imported by their subprocesses)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
from typing import Any

from verifiers import InlineVerifier, Result, Spec, Trajectory, Verifier, VerifierContext, register
from verifiers.errors import InfraError
from verifiers.registry import get_verifier
from verifiers.text import completion_text


class ContainsSpec(Spec):
    short_chars: int = 20


def _register(name: str, cls: type) -> None:
    try:
        get_verifier(name)
    except Exception:
        register(name)(cls)


class Contains(InlineVerifier[ContainsSpec]):
    """1.0 when the reference text occurs in the completion; components hit and short."""

    Spec = ContainsSpec

    def check(self, trajectory: Trajectory, spec: ContainsSpec) -> Result:
        text = completion_text(trajectory)
        reference = trajectory.task.reference
        if reference is None:
            return Result.skip("no reference")
        hit = 1.0 if str(reference) in text else 0.0
        short = 1.0 if len(text) <= spec.short_chars else 0.0
        return Result.scored(
            hit, components={"hit": hit, "short": short}, feedback="" if hit else "missing"
        )


class SlowSpec(Spec):
    sleep_s: float = 0.05
    log_path: str | None = None
    fail: bool = False


class Slow(Verifier[SlowSpec]):
    """Sleeps, logs (pid, start, end) to a file; reward = len(completion) % 2."""

    Spec = SlowSpec
    cacheable = False

    async def verify(self, trajectory: Trajectory, spec: SlowSpec, ctx: VerifierContext) -> Result:
        start = time.time()
        await asyncio.sleep(spec.sleep_s)
        end = time.time()
        if spec.log_path:
            with open(spec.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"pid": os.getpid(), "start": start, "end": end}) + "\n")
        if spec.fail:
            raise InfraError("sandbox fell over")
        return Result.scored(float(len(completion_text(trajectory)) % 2))


_register("rltest.contains", Contains)
_register("rltest.slow", Slow)

# The code task the real-trainer tests share (OpenRLHF, veRL, veRL over Ray): ``add(a, b)``
# with two assert tests, a broken task (an unknown test kind: the verifier cannot judge it),
# and eight responses that pass, fail, do not parse, or exit before the tests run.
ADD_TESTS = "def check(f):\n    assert f(1, 2) == 3\n    assert f(2, 2) == 4\n"
ADD_TASK: dict[str, Any] = {
    "verifier": "code.tests",
    "spec": {"tests": {"kind": "assert", "entry_point": "add", "code": ADD_TESTS}},
}
BROKEN_TASK: dict[str, Any] = {
    "verifier": "code.tests",
    "spec": {"tests": {"kind": "no-such-kind"}},
}
ADD_RESPONSES = [
    f"```python\n{body}\n```"
    for body in (
        "def add(a, b):\n    return a + b",
        "def add(a, b):\n    return a * b",
        "def add(a, b) return",
        "def add(a, b):\n    return a + b",
        "def add(a, b):\n    return b + a",
        "import os\nos._exit(0)",
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    return a + b",
    )
]


def max_overlap(path: str) -> int:
    """Most intervals open at one instant in a log written by ``rltest.slow``."""
    events: list[tuple[float, int]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row: dict[str, Any] = json.loads(line)
            events.append((row["start"], 1))
            events.append((row["end"], -1))
    events.sort(key=lambda e: (e[0], e[1]))
    best = cur = 0
    for _, delta in events:
        cur += delta
        best = max(best, cur)
    return best


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_healthy(url: str, proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
    """Poll ``url/healthz`` until it answers 200; fail with the server's stderr if it exits
    first (a ``verifiers serve`` process started with ``stderr=PIPE``, text mode)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read() if proc.stderr else "the server exited")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)


class LiveServer:
    """``verifiers serve``'s app under a real uvicorn on loopback, in a thread."""

    def __init__(self, settings: Any) -> None:
        import uvicorn
        from verifiers.rl_adapters.server import create_app

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=30,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
