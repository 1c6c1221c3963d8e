"""Each test kind end to end: through bare subprocesses, the local bwrap backend and Docker.

Every line the real judge writes in these tests (every kind passing, failing, raising, crashing
and timing out, on every backend) is also checked against its table in ``_judge_record``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from code_helpers import Backend, traj
from verifiers.domains.code import _judge_record

from verifiers.errors import BadInput


@pytest.fixture(autouse=True, scope="module")
def judge_lines_are_well_formed() -> Iterator[None]:
    """The judge writes only lines its record tables allow (see ``test_code_records``)."""
    real = _judge_record.parse
    kinds: set[str] = set()
    bad: list[Any] = []

    def checked(stdout: bytes, nonce: str) -> Any:
        prefix = nonce.encode() + b" "
        for raw in stdout.split(b"\n"):
            kind = raw[len(prefix) : len(prefix) + 1].decode(errors="replace")
            if raw.startswith(prefix) and kind in ("R", "T", "D"):
                kinds.add(kind)
                problem = _judge_record.check(kind, json.loads(raw[len(prefix) + 2 :]))
                if problem is not None:
                    bad.append((kind, problem, raw[:300]))
        return real(stdout, nonce)

    with mock.patch.object(_judge_record, "parse", checked):
        yield
    assert not bad
    assert kinds == {"R", "T", "D"}


ADD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
CALL_CASES: dict[str, Any] = {
    "kind": "call",
    "entry_point": "add",
    "cases": [
        {"args": [1, 2], "expected": 3},
        {"args": [0, 0], "expected": 0},
        {"args": [[1], [2]], "expected": [1, 2]},
        {"args": [0.1, 0.2], "expected": 0.3},
    ],
}


def test_assert_pass_and_fail(backend: Backend) -> None:
    ok = backend.score(traj(ADD, {"kind": "assert", "code": CHECK, "entry_point": "add"}))
    assert (ok.status, ok.reward) == ("pass", 1.0)
    bad = backend.score(traj(WRONG, {"kind": "assert", "code": CHECK, "entry_point": "add"}))
    assert (bad.status, bad.reward) == ("fail", 0.0)
    assert "AssertionError" in bad.feedback
    assert "assert candidate(1, 2) == 3" in bad.feedback
    assert "add(1, 2) returned -1" in bad.feedback
    assert bad.components == {"tests_passed": 0.0}


def test_assert_prelude_helpers_are_trusted(backend: Backend) -> None:
    prelude = "def helper(x):\n    return x * 10\n"
    tests = {
        "kind": "assert",
        "entry_point": "f",
        "prelude": prelude,
        "code": "def check(c):\n    assert c(2) == helper(2)\n",
    }
    # The candidate redefines the helper; the judge uses the prelude's version.
    res = backend.score(traj("def helper(x):\n    return 0\ndef f(x):\n    return 0\n", tests))
    assert res.status == "fail"
    assert backend.score(traj("def f(x):\n    return x * 10\n", tests)).status == "pass"


def test_call_partial_credit_and_feedback(backend: Backend) -> None:
    res = backend.score(traj("def add(a, b):\n    return a + b if a else 7\n", CALL_CASES))
    assert res.status == "fail"
    assert res.reward == pytest.approx(0.75)
    assert res.details["passed"] == 3 and res.details["expected"] == 4
    assert "add(0, 0) returned 7, expected 0" in res.feedback
    full = backend.score(traj(ADD, CALL_CASES))
    assert (full.status, full.reward) == ("pass", 1.0)


def test_all_or_nothing(backend: Backend) -> None:
    res = backend.score(
        traj("def add(a, b):\n    return a + b if a else 7\n", CALL_CASES, partial_credit=False)
    )
    assert (res.status, res.reward) == ("fail", 0.0)
    assert res.components["tests_passed"] == pytest.approx(0.75)


def test_call_exceptions_and_expected_raises(backend: Backend) -> None:
    tests = {
        "kind": "call",
        "entry_point": "div",
        "cases": [
            {"args": [6, 3], "expected": 2},
            {"args": [1, 0], "raises": "ZeroDivisionError"},
            {"args": [1, 0], "expected": 0},
        ],
    }
    res = backend.score(traj("def div(a, b):\n    return a // b\n", tests))
    assert res.reward == pytest.approx(2 / 3)
    assert "ZeroDivisionError" in res.feedback
    assert "return a // b" in res.feedback  # last traceback lines


def test_call_returns_tuples_sets_and_objects(backend: Backend) -> None:
    tests = {
        "kind": "call",
        "entry_point": "f",
        "cases": [
            {"args": [0], "expected": [1, 2]},
            {"args": [1], "expected": {"$": "set", "v": [3]}},
            {"args": [2], "expected": None},
        ],
        "values": "tagged",
    }
    code = "def f(k):\n    return [(1, 2), {3}, object()][k]\n"
    res = backend.score(traj(code, tests))
    assert res.reward == pytest.approx(2 / 3)
    # A set is not a list: in plain JSON (which cannot write a set) {3} never equals [3].
    plain = {**tests, "values": "json", "cases": [{"args": [1], "expected": [3]}]}
    assert backend.score(traj(code, plain)).reward == 0.0
    assert "plain data" in res.feedback


def test_io_modes_and_runtime_errors(backend: Backend) -> None:
    code = "import sys\nnums = sys.stdin.read().split()\nif nums[0] == 'boom':\n    raise ValueError('bad input')\nprint(sum(map(float, nums)))\n"
    tests = {
        "kind": "io",
        "compare": "float",
        "cases": [
            {"stdin": "1 2\n", "stdout": "3.0\n"},
            {"stdin": "0.1 0.2", "stdout": "0.3"},
            {"stdin": "boom", "stdout": "0"},
            {"stdin": "1 1", "stdout": "3"},
        ],
    }
    res = backend.score(traj(code, tests))
    assert res.reward == pytest.approx(0.5)
    assert "ValueError: bad input" in res.feedback
    assert "expected '3', got '2.0\\n'" in res.feedback
    exact = backend.score(
        traj(
            "print('3 ')\n",
            {"kind": "io", "compare": "exact", "cases": [{"stdin": "", "stdout": "3\n"}]},
        )
    )
    assert exact.status == "fail"
    tokens = backend.score(
        traj("print('3 ')\n", {"kind": "io", "cases": [{"stdin": "", "stdout": "3\n"}]})
    )
    assert tokens.status == "pass"


def test_pytest_kind(backend: Backend) -> None:
    files = {
        "test_stack.py": (
            "import pytest\nfrom solution import Stack, add\n\n"
            "def test_add():\n    assert add(2, 3) == 5\n\n"
            "def test_stack():\n    s = Stack()\n    s.push(1)\n    s.push(2)\n    assert s.pop() == 2\n    assert len(s) == 1\n\n"
            "def test_empty_pop_raises():\n    with pytest.raises(IndexError):\n        Stack().pop()\n\n"
            "@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_param(n):\n    assert add(n, n) == 2 * n\n"
        )
    }
    good = (
        "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n"
        "    def pop(self):\n        return self.items.pop()\n    def __len__(self):\n        return len(self.items)\n"
        "def add(a, b):\n    return a + b\n"
    )
    res = backend.score(traj(good, {"kind": "pytest", "files": files}))
    assert (res.status, res.reward, res.details["expected"]) == ("pass", 1.0, 6)
    bad = good.replace("return a + b", "return a * b")
    res = backend.score(traj(bad, {"kind": "pytest", "files": files}))
    assert res.details["passed"] == 3  # test_stack, raises, param[2]
    assert res.reward == pytest.approx(0.5)
    assert "test_stack.py::test_add" in res.feedback and "assert 6 == 5" in res.feedback


def test_pytest_expected_ids_are_enforced(backend: Backend) -> None:
    files = {"test_a.py": "from solution import f\ndef test_one():\n    assert f() == 1\n"}
    tests = {
        "kind": "pytest",
        "files": files,
        "expected_tests": ["test_a.py::test_one", "test_a.py::test_two"],
    }
    res = backend.score(traj("def f():\n    return 1\n", tests))
    assert res.reward == pytest.approx(0.5)
    assert "test_two" in res.feedback and "did not run" in res.feedback
    res = backend.score(traj("def f():\n    return 1\n", {**tests, "expected_tests": 3}))
    assert res.reward == pytest.approx(1 / 3)


def test_timeouts_are_typed_and_per_test(backend: Backend) -> None:
    code = "import time\ndef f(x):\n    if x:\n        time.sleep(30)\n    return x\n"
    tests = {
        "kind": "call",
        "entry_point": "f",
        "cases": [
            {"args": [0], "expected": 0},
            {"args": [1], "expected": 1},
            {"args": [0], "expected": 0},
        ],
    }
    res = backend.score(traj(code, tests, timeout_s=10, test_timeout_s=1))
    assert res.reward == pytest.approx(2 / 3)  # the process is restarted after the timeout
    assert "timed out" in res.feedback
    assert res.details["tests"][1]["status"] == "timeout"


def test_total_timeout_stops_starting_tests(backend: Backend) -> None:
    code = "import time\ndef f(x):\n    time.sleep(0.6)\n    return x\n"
    tests = {
        "kind": "call",
        "entry_point": "f",
        "cases": [{"args": [i], "expected": i} for i in range(8)],
    }
    res = backend.score(traj(code, tests, timeout_s=1.5))
    assert res.status == "fail"
    assert 1 <= res.details["passed"] < 8


def test_syntax_error_and_missing_code(backend: Backend) -> None:
    res = backend.score(
        traj(
            "def add(a, b)\n    return a + b\n",
            {"kind": "assert", "code": CHECK, "entry_point": "add"},
        )
    )
    assert res.status == "fail" and "SyntaxError" in res.feedback
    empty = backend.score(
        {
            "completion": "```python\n\n```",
            "task": {
                "verifier": "code.tests",
                "spec": {"tests": {"kind": "assert", "code": CHECK, "entry_point": "add"}},
            },
        }
    )
    assert (empty.status, empty.reward) == ("fail", 0.0)
    missing = backend.score(
        traj("def other():\n    pass\n", {"kind": "assert", "code": CHECK, "entry_point": "add"})
    )
    assert missing.status == "fail" and "AttributeError" in missing.feedback


def test_broken_test_code_is_bad_input_not_a_score(backend: Backend) -> None:
    with pytest.raises(BadInput, match="test code"):
        backend.score(
            traj(ADD, {"kind": "assert", "code": "def check(candidate)\n", "entry_point": "add"})
        )
    with pytest.raises(BadInput, match="collect"):
        backend.score(traj(ADD, {"kind": "pytest", "files": {"test_x.py": "def test_(:\n"}}))


def test_assert_tests_that_never_run_check_are_bad_input(backend: Backend) -> None:
    # Without an entry point, test code that defines no check() used to pass any completion.
    no_check = {"kind": "assert", "code": "def test():\n    assert solution.add(1, 2) == 3\n"}
    with pytest.raises(BadInput, match="no check"):
        backend.score(traj("raise SystemExit(0)\n", no_check))
    with_check = {"kind": "assert", "code": "def check(m):\n    assert m.add(1, 2) == 3\n"}
    assert backend.score(traj(ADD, with_check)).status == "pass"
    assert backend.score(traj("def add(a, b):\n    return 0\n", with_check)).status == "fail"


def test_output_is_capped_in_feedback(backend: Backend) -> None:
    code = "def f():\n    print('y' * 100000)\n    return 1\n"
    res = backend.score(
        traj(
            code,
            {"kind": "call", "entry_point": "f", "cases": [{"args": [], "expected": 2}]},
            feedback_chars=500,
        )
    )
    assert res.status == "fail"
    assert len(res.feedback) <= 500


def test_io_program_that_ignores_large_stdin(backend: Backend) -> None:
    big = "1 2\n" + "9" * (1 << 20)
    tests = {
        "kind": "io",
        "cases": [{"stdin": big, "stdout": "3"}, {"stdin": "2 2\n", "stdout": "4"}],
    }
    res = backend.score(traj("print(3 if True else 0)\n", tests))
    assert res.details["finished"] is True
    assert res.details["tests"][0]["status"] == "passed"


def test_candidate_closing_its_pipes_only_fails_its_own_tests(backend: Backend) -> None:
    code = (
        "import os\n"
        "def f(x):\n"
        "    if x == 1:\n"
        "        for fd in range(3, 64):\n"
        "            try:\n"
        "                os.close(fd)\n"
        "            except OSError:\n"
        "                pass\n"
        "    return x\n"
    )
    cases = [{"args": [i], "expected": i} for i in (0, 1, 2)]
    res = backend.score(traj(code, {"kind": "call", "entry_point": "f", "cases": cases}))
    assert res.details["finished"] is True
    assert res.reward == pytest.approx(2 / 3)
