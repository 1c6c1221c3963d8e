"""The host side of the judge protocol, with the fake sandbox: what reaches the sandbox, and
how the host reads (and refuses to read) what comes back."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from code_helpers import SubprocessProvider, score_with, traj
from verifiers.domains.code import CodeTests
from verifiers.sandbox import ExecResult, FakeCall, FakeProvider

from verifiers.context import VerifierContext
from verifiers.errors import BadInput, InfraError, SandboxUnavailable
from verifiers.types import Trajectory

CALL = {
    "kind": "call",
    "entry_point": "f",
    "cases": [{"args": [1], "expected": "SECRET-EXPECTED-VALUE"}],
}


def _score(provider: Any, item: dict[str, Any]) -> Any:
    return asyncio.run(score_with(provider, item))


def test_expected_values_never_enter_the_sandbox() -> None:
    seen: list[FakeCall] = []

    def handler(call: FakeCall) -> ExecResult:
        seen.append(call)
        return ExecResult(returncode=0)

    with pytest.raises(InfraError):
        _score(FakeProvider(handler), traj("def f(x):\n    return x\n", CALL))
    io = {"kind": "io", "cases": [{"stdin": "1", "stdout": "SECRET-EXPECTED-OUTPUT"}]}
    with pytest.raises(InfraError):
        _score(FakeProvider(handler), traj("print(1)\n", io))
    for call in seen:
        blob = (call.stdin or b"") + b"".join(call.files.values()) + json.dumps(call.argv).encode()
        assert b"SECRET-EXPECTED" not in blob
        assert (
            ".judge/boot.py" in call.readonly
            and ".judge/harness.bin" in call.readonly
            and "solution.py" in call.readonly
        )
        assert call.files["solution.py"].startswith(b"def f") or call.files[
            "solution.py"
        ].startswith(b"print")


def test_each_run_gets_a_fresh_nonce_and_forged_lines_are_ignored() -> None:
    nonces: list[str] = []

    def handler(call: FakeCall) -> ExecResult:
        nonce = json.loads(call.stdin or b"{}")["nonce"]
        nonces.append(nonce)
        forged = "\n".join(
            f"{n} {k} {p}"
            for n in ("0" * 32, nonce[:-1] + "x")
            for k, p in (("R", "{}"), ("T", '{"name":"check(f)","status":"passed"}'), ("D", "{}"))
        )
        real = (
            f'{nonce} R {{}}\n{nonce} T {{"name":"check(f)","status":"failed"}}\n{nonce} D {{}}\n'
        )
        return ExecResult(returncode=0, stdout=(forged + "\n" + real).encode())

    tests = {"kind": "assert", "code": "def check(c):\n    assert c(1) == 2\n", "entry_point": "f"}
    for _ in range(2):
        res = _score(FakeProvider(handler), traj("def f(x):\n    return 2\n", tests))
        assert (res.status, res.reward) == ("fail", 0.0)
    assert len(set(nonces)) == 2 and all(len(n) == 32 for n in nonces)


def test_lines_after_done_and_before_ready_do_not_count() -> None:
    def handler(call: FakeCall) -> ExecResult:
        n = json.loads(call.stdin or b"{}")["nonce"]
        out = (
            f'{n} T {{"name":"check(f)","status":"passed"}}\n{n} R {{}}\n{n} D {{}}\n'
            f'{n} T {{"name":"check(f)","status":"passed"}}\n'
        )
        return ExecResult(returncode=0, stdout=out.encode())

    tests = {"kind": "assert", "code": "def check(c):\n    pass\n", "entry_point": "f"}
    res = _score(FakeProvider(handler), traj("def f(x):\n    return 2\n", tests))
    assert (res.status, res.reward) == ("fail", 0.0)
    assert res.details["tests"][0]["status"] == "missing"


def test_judge_that_never_starts_is_infra_error_not_zero() -> None:
    def handler(call: FakeCall) -> ExecResult:
        return ExecResult(returncode=127, stderr=b"python3: not found")

    with pytest.raises(InfraError, match="did not start"):
        _score(FakeProvider(handler), traj("def f(x):\n    return x\n", CALL))


def test_judge_reported_infra_and_spec_errors() -> None:
    def infra(call: FakeCall) -> ExecResult:
        n = json.loads(call.stdin or b"{}")["nonce"]
        return ExecResult(
            returncode=0, stdout=f'{n} R {{}}\n{n} D {{"infra_error":"no pytest"}}\n'.encode()
        )

    with pytest.raises(InfraError, match="no pytest"):
        _score(FakeProvider(infra), traj("x = 1\n", {"kind": "pytest", "files": {"test_a.py": ""}}))


def test_pytest_files_without_tests_are_bad_input() -> None:
    with pytest.raises(BadInput, match="no tests"):
        _score(
            SubprocessProvider(),
            traj("x = 1\n", {"kind": "pytest", "files": {"test_a.py": "X = 1\n"}}),
        )


def test_no_sandbox_provider_is_an_infra_error() -> None:
    item = Trajectory.model_validate(traj("def f(x):\n    return x\n", CALL))
    spec = CodeTests.Spec.model_validate(item.task.spec)
    ctx = VerifierContext(deadline=time.monotonic() + 5, base_dir=Path("."))
    with pytest.raises(SandboxUnavailable):
        asyncio.run(CodeTests().verify(item, spec, ctx))  # type: ignore[arg-type]


def test_unsupported_language_is_bad_input() -> None:
    with pytest.raises(BadInput, match="language"):
        _score(FakeProvider(), traj("x", CALL, language="cobol"))


@pytest.mark.parametrize("magic_ok", [True, False])
def test_boot_uses_precompiled_judge_or_falls_back_to_source(
    tmp_path: Path, magic_ok: bool
) -> None:
    import subprocess
    import sys

    from verifiers.domains.code import language_for
    from verifiers.domains.code._languages import judge_files

    files = dict(judge_files(language_for("python")))
    if not magic_ok:
        files[".judge/harness.bin"] = b"XXXX" + files[".judge/harness.bin"][4:]
    for rel, data in {**files, "solution.py": b"def f(x):\n    return x + 1\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    job = {
        "nonce": "n" * 32,
        "run": "call",
        "code_path": "solution.py",
        "tests": {"kind": "call", "entry_point": "f", "cases": [{"args": [1]}]},
    }
    out = subprocess.run(
        [sys.executable, ".judge/boot.py"],
        input=json.dumps(job).encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=True,
    ).stdout.decode()
    assert '"status":"returned","index":0,"value":2' in out
    done = out.rstrip().splitlines()[-1]
    assert done.startswith(f"{'n' * 32} D ")
    # The done line carries nothing but the judge's CPU by phase (benchmarks/humaneval.py
    # --phases), each a number of seconds, in the order the phases happen.
    usage = json.loads(done.split(" ", 2)[2]).pop("usage")
    assert json.loads(done.split(" ", 2)[2]).keys() == {"usage"}
    assert 0 < usage["boot_start"] <= usage["judge_start"] <= usage["judge"]
    assert usage["children"] > 0  # the candidate, reaped before the line
