"""The judge's result lines, typed once (``_judge_record``) and checked when the host reads them.

``datasets/code/judge_records.jsonl`` (written by ``gen_judge_records.py``) holds judge output
the host must read safely: deeply nested lines, wrong types, unknown keys and statuses,
malformed done and ready lines, and controls. Each row is scored through ``CodeTests.verify``
with the fake sandbox answering with the row's lines, signed with the run's real nonce: a
malformed record is the model's fail (never a crash or an abstain); only a malformed ready line,
written before any candidate code runs, is the machine's. (That the real judge's own lines pass
the same check, for every kind on every backend, is checked around ``test_code_kinds``.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from code_helpers import score_with, traj
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
