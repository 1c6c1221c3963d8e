"""Writes ``datasets/code/judge_records.jsonl``: judge output the host must read safely.

Each row is what a judge (or something posing as one) wrote back for one sample: lines
``<kind> <json>`` that the test signs with the run's real nonce, for a task in ``tests``. The
host decodes them through ``_judge_record.parse``, which checks every line against its table:
a malformed test record is that test's failure, a malformed done line a judge that did not
finish (the model's 0), a malformed ready line a judge that never started (infra, before any
candidate code). ``expect`` is the verdict: status, reward and, for an error, its kind. Rows
marked ``old`` say what the code before the typed record made of them (a crash, an abstain or
a pass): the reason each row exists.

Run it after editing the rows below: ``python tests/domains/code/gen_judge_records.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[3] / "datasets" / "code" / "judge_records.jsonl"
READY = 'R {"dumpable_off":true,"python":"3.11.7"}'
ADD_CALL = {
    "kind": "call",
    "entry_point": "add",
    "cases": [{"args": [1, 2], "expected": 3}, {"args": [2, 2], "expected": 4}],
}
ASSERT = {
    "kind": "assert",
    "code": "def check(c):\n    assert c(1, 2) == 3\n",
    "entry_point": "add",
}
PYTEST = {
    "kind": "pytest",
    "files": {
        "test_a.py": "from solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n"
    },
}
IO = {"kind": "io", "cases": [{"stdin": "1 2\n", "stdout": "3\n"}]}
FAIL0 = {"status": "fail", "reward": 0.0}


def deep(n: int) -> str:
    return "[" * n + "]" * n


ROWS: list[dict[str, Any]] = [
    {
        "id": "deeply-nested-test-line",
        "family": "nesting",
        "tests": ADD_CALL,
        "lines": [READY, 'T {"index":0,"status":"returned","value":' + deep(5000) + "}", "D {}"],
        "expect": FAIL0,
        "old": "RecursionError out of json.loads: the sample crashed the verifier (error, abstain)",
    },
    {
        "id": "deeply-nested-done-line",
        "family": "nesting",
        "tests": ADD_CALL,
        "lines": [
            READY,
            'T {"index":0,"status":"returned","value":3}',
            'T {"index":1,"status":"returned","value":4}',
            'D {"collected":' + deep(5000) + "}",
        ],
        "expect": FAIL0,
        "old": "RecursionError: error (abstain)",
    },
    {
        "id": "bool-index-stands-for-case-1",
        "family": "types",
        "tests": ADD_CALL,
        "lines": [
            READY,
            'T {"index":0,"status":"returned","value":3}',
            'T {"index":true,"status":"returned","value":4}',
            "D {}",
        ],
        "expect": {"status": "fail", "reward": 0.5},
        "old": "True == 1 as a dict key: case 1 passed (reward 1.0)",
    },
    {
        "id": "float-index-stands-for-case-0",
        "family": "types",
        "tests": ADD_CALL,
        "lines": [
            READY,
            'T {"index":0.0,"status":"returned","value":3}',
            'T {"index":1,"status":"returned","value":4}',
            "D {}",
        ],
        "expect": {"status": "fail", "reward": 0.5},
        "old": "0.0 == 0 as a dict key: case 0 passed (reward 1.0)",
    },
    {
        "id": "passed-record-with-a-foreign-key",
        "family": "keys",
        "tests": ASSERT,
        "lines": [READY, 'T {"name":"check(add)","status":"passed","verdict":"pass"}', "D {}"],
        "expect": FAIL0,
        "old": "unknown keys ignored: pass",
    },
    {
        "id": "passed-record-with-a-number-for-a-message",
        "family": "types",
        "tests": ASSERT,
        "lines": [READY, 'T {"name":"check(add)","status":"passed","message":5}', "D {}"],
        "expect": FAIL0,
        "old": "pass",
    },
    {
        "id": "unknown-status",
        "family": "keys",
        "tests": ASSERT,
        "lines": [READY, 'T {"name":"check(add)","status":"PASSED"}', "D {}"],
        "expect": FAIL0,
        "old": "fail (a status it did not know)",
    },
    {
        "id": "record-with-neither-name-nor-index",
        "family": "keys",
        "tests": ASSERT,
        "lines": [READY, 'T {"status":"passed"}', "D {}"],
        "expect": FAIL0,
        "old": "pass: the first record of an assert task was taken whatever its name",
    },
    {
        "id": "spec-error-not-text",
        "family": "done",
        "tests": ASSERT,
        "lines": [READY, 'D {"spec_error":123}'],
        "expect": FAIL0,
        "old": "BadInput: error (abstain) for the model's sample",
    },
    {
        "id": "infra-error-not-text",
        "family": "done",
        "tests": ASSERT,
        "lines": [READY, 'T {"name":"check(add)","status":"failed"}', 'D {"infra_error":["x"]}'],
        "expect": FAIL0,
        "old": "InfraError: error (abstain), retried",
    },
    {
        "id": "collected-not-a-list",
        "family": "done",
        "tests": PYTEST,
        "lines": [
            READY,
            'T {"name":"test_a.py::test_a","status":"passed"}',
            'D {"collected":"test_a.py::test_a","exit_code":0}',
        ],
        "expect": FAIL0,
        "old": "collected read as the records' names: pass",
    },
    {
        "id": "exit-code-false-is-not-zero",
        "family": "done",
        "tests": PYTEST,
        "lines": [
            READY,
            'T {"name":"test_a.py::test_a","status":"passed"}',
            'D {"collected":["test_a.py::test_a"],"exit_code":false}',
        ],
        "expect": FAIL0,
        "old": "False != 0 is false: full credit",
    },
    {
        "id": "done-with-an-unknown-key",
        "family": "done",
        "tests": IO,
        "lines": [
            READY,
            'T {"index":0,"status":"ran","returncode":0,"stdout":"3\\n"}',
            'D {"verdict":"pass"}',
        ],
        "expect": FAIL0,
        "old": "pass",
    },
    {
        "id": "io-returncode-as-text",
        "family": "types",
        "tests": IO,
        "lines": [
            READY,
            'T {"index":0,"status":"ran","returncode":"0","stdout":"3\\n"}',
            "D {}",
        ],
        "expect": FAIL0,
        "old": 'fail ("0" != 0), as now',
    },
    {
        "id": "ready-line-malformed",
        "family": "ready",
        "tests": ASSERT,
        "lines": ['R {"python":3}', 'T {"name":"check(add)","status":"passed"}', "D {}"],
        "expect": {"status": "error", "reward": None, "error": "infra"},
        "old": "pass. The ready line is written before any candidate code runs: a bad one is the"
        " machine's",
    },
    {
        "id": "control-well-formed-pass",
        "family": "control",
        "tests": ADD_CALL,
        "lines": [
            READY,
            'T {"index":0,"status":"returned","value":3}',
            'T {"index":1,"status":"returned","value":4}',
            "D {}",
        ],
        "expect": {"status": "pass", "reward": 1.0},
        "old": "pass",
    },
    {
        "id": "control-lines-after-done-are-ignored",
        "family": "control",
        "tests": ASSERT,
        "lines": [
            READY,
            'T {"name":"check(add)","status":"failed"}',
            "D {}",
            'T {"name":"check(add)","status":"passed"}',
        ],
        "expect": FAIL0,
        "old": "fail",
    },
    {
        "id": "control-lines-before-ready-are-ignored",
        "family": "control",
        "tests": ASSERT,
        "lines": ['T {"name":"check(add)","status":"passed"}', READY, "D {}"],
        "expect": FAIL0,
        "old": "fail (missing)",
    },
    {
        "id": "control-nan-value-compares-unequal",
        "family": "control",
        "tests": ADD_CALL,
        "lines": [
            READY,
            'T {"index":0,"status":"returned","value":NaN}',
            'T {"index":1,"status":"returned","value":4}',
            "D {}",
        ],
        "expect": {"status": "fail", "reward": 0.5},
        "old": "fail 0.5",
    },
]


def main() -> None:
    OUT.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")


if __name__ == "__main__":
    main()
