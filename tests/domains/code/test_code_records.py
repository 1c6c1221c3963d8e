"""The judge's result lines, typed once (``_judge_record``) and checked when the host reads them.

``datasets/code/judge_records.jsonl`` (written by ``gen_judge_records.py``) holds judge output
the host must read safely: deeply nested lines, wrong types, unknown keys and statuses,
malformed done and ready lines, and controls. Each row is scored through ``CodeTests.verify``
with the fake sandbox answering with the row's lines, signed with the run's real nonce: a
malformed record is the model's fail (never a crash or an abstain); only a malformed ready line,
written before any candidate code runs, is the machine's. The real judge's own lines, for every
test kind, pass the same check.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from code_helpers import SubprocessProvider, score_with, traj
from verifiers.domains.code import _judge_record
from verifiers.sandbox import ExecResult, FakeCall, FakeProvider

from verifiers.errors import VerifierError
from verifiers.types import Result

CORPUS = Path(__file__).resolve().parents[3] / "datasets" / "code" / "judge_records.jsonl"
ROWS = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x.strip()]


def _verdict(row: dict[str, Any]) -> Result:
    def handler(call: FakeCall) -> ExecResult:
        nonce = json.loads(call.stdin or b"{}")["nonce"]
        out = "".join(f"{nonce} {line}\n" for line in row["lines"])
        return ExecResult(returncode=0, stdout=out.encode())

    item = traj("def add(a, b):\n    return a + b\n", row["tests"])
    try:
        return asyncio.run(score_with(FakeProvider(handler), item))
    except VerifierError as exc:  # what the engine's error boundary makes of it
        return Result.errored(exc.kind, str(exc))


def test_corpus_covers_every_family() -> None:
    assert len({r["id"] for r in ROWS}) == len(ROWS) >= 15
    assert {r["family"] for r in ROWS} == {
        "nesting",
        "types",
        "keys",
        "done",
        "ready",
        "control",
    }
    assert {r["tests"]["kind"] for r in ROWS} == {"assert", "call", "io", "pytest"}


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_judge_output_is_read_safely(row: dict[str, Any]) -> None:
    res = _verdict(row)
    expect = row["expect"]
    assert (res.status, res.reward) == (expect["status"], expect["reward"]), res.feedback
    if res.status == "error":
        assert res.error is not None and res.error.kind == expect["error"]


def test_malformed_record_names_what_is_wrong() -> None:
    row = next(r for r in ROWS if r["id"] == "passed-record-with-a-number-for-a-message")
    res = _verdict(row)
    assert "malformed (message is a int); counts as failed" in (res.feedback or ""), res.feedback


@pytest.mark.parametrize(
    ("kind", "payload", "problem"),
    [
        ("T", {"name": "t", "status": "passed"}, None),
        ("T", {"index": 0, "status": "returned", "value": {"$": "tuple", "v": [1]}}, None),
        ("T", {"index": True, "status": "returned"}, "index is a bool"),
        ("T", {"name": "t"}, "status 'None'"),
        ("T", {"name": "t", "status": "passed", "x": 1}, "unknown key 'x'"),
        ("D", {"collected": ["a"], "exit_code": 0}, None),
        ("D", {"build_s": None}, None),
        ("D", {"exit_code": 0.0}, "exit_code is a float"),
        ("R", {"dumpable_off": 1}, "dumpable_off is a int"),
    ],
)
def test_check_against_the_tables(kind: str, payload: dict[str, Any], problem: str | None) -> None:
    assert _judge_record.check(kind, payload) == problem


def test_the_real_judge_writes_only_well_formed_lines(
    subprocess_provider: SubprocessProvider,
) -> None:
    """Every line the judge writes for each kind (passing, failing, raising, crashing) checks."""
    seen: list[tuple[str, dict[str, Any]]] = []
    real = _judge_record.parse

    def recording(stdout: bytes, nonce: str) -> Any:
        for raw in stdout.split(b"\n"):
            if raw.startswith(nonce.encode() + b" "):
                seen.append((raw[33:34].decode(), json.loads(raw[35:])))
        return real(stdout, nonce)

    code = "import sys\ndef add(a, b):\n    print('out'); print('err', file=sys.stderr)\n"
    code += "    if a == 2: raise ValueError('no')\n    return a + b\n"
    items = [
        traj(code, ASSERT_TESTS),
        traj(
            code,
            {
                **CALL_TESTS,
                "cases": [*CALL_TESTS["cases"], {"args": [2, 2], "raises": "ValueError"}],
            },
        ),
        traj("import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(a)\n", IO_TESTS),
        traj(code, PYTEST_TESTS),
    ]
    _judge_record.parse = recording  # type: ignore[assignment]
    try:

        async def go() -> list[Result]:
            return list(await asyncio.gather(*(score_with(subprocess_provider, i) for i in items)))

        results = asyncio.run(go())
    finally:
        _judge_record.parse = real  # type: ignore[assignment]
    assert [r.status for r in results] == ["fail", "fail", "fail", "fail"], results
    assert {k for k, _ in seen} == {"R", "T", "D"}
    assert [(k, p) for k, p in seen if _judge_record.check(k, p) is not None] == []


ASSERT_TESTS = {
    "kind": "assert",
    "code": "def check(c):\n    assert c(2, 2) == 4\n",
    "entry_point": "add",
}
CALL_TESTS = {
    "kind": "call",
    "entry_point": "add",
    "cases": [{"args": [1, 2], "expected": 3}, {"args": [1, 1], "expected": 3}],
}
IO_TESTS = {
    "kind": "io",
    "cases": [{"stdin": "0 3\n", "stdout": "3\n"}, {"stdin": "1 1\n", "stdout": "2\n"}],
}
PYTEST_TESTS = {
    "kind": "pytest",
    "files": {
        "test_a.py": "import pytest\nfrom solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n\n"
        "def test_b():\n    assert add(2, 2) == 4\n\n@pytest.mark.skip\ndef test_c():\n    pass\n"
    },
}
