"""Unit tests of code.tests' own logic: extraction, codec, comparisons, spec shapes."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
import verifiers.domains.code as code_domain
from api_pins import assert_pinned
from pydantic import ValidationError
from verifiers.domains.code import (
    CodeTestsSpec,
    compare_output,
    extract_code,
    language_for,
    values_equal,
)
from verifiers.domains.code._compare import Opaque
from verifiers.domains.code._judge_codec import CodecError, decode, encode

from verifiers.errors import BadInput
from verifiers.text import completion_text
from verifiers.types import Trajectory

PY = language_for("python")


def test_public_api_is_pinned() -> None:
    assert_pinned(
        code_domain,
        [
            "LANGUAGES",
            "AssertTests",
            "CallCase",
            "CallTests",
            "CodeTests",
            "CodeTestsSpec",
            "IoCase",
            "IoTests",
            "Language",
            "PytestTests",
            "compare_output",
            "extract_code",
            "language_for",
            "values_equal",
        ],
        registers=["code.tests"],
    )


def test_extract_last_python_block() -> None:
    text = "first\n```python\nx = 1\n```\nthen\n```js\nlet y\n```\nand\n```python\nx = 2\n```\n"
    assert extract_code(text, PY) == "x = 2\n"


def test_extract_prefers_tagged_then_untagged_then_whole() -> None:
    assert extract_code("```\nuntagged\n```\n```js\nlet y\n```\n", PY) == "untagged\n"
    assert extract_code("```py\nshort tag\n```", PY) == "short tag\n"
    assert extract_code("def f():\n    return 1\n", PY) == "def f():\n    return 1\n"
    assert extract_code("```python\nignored\n```", PY, "whole").startswith("```python")


def test_extract_from_chat_uses_last_assistant_message() -> None:
    traj = Trajectory.model_validate(
        {
            "completion": [
                {"role": "assistant", "content": "```python\nold()\n```"},
                {"role": "user", "content": "```python\nuser()\n```"},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "```python\nnew()\n```"}],
                },
            ],
            "task": {"verifier": "code.tests"},
        }
    )
    assert extract_code(completion_text(traj), PY) == "new()\n"


def test_unknown_language_is_bad_input() -> None:
    with pytest.raises(BadInput, match="cobol"):
        language_for("cobol")


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -5,
        2**100,
        -(2**70),
        1.5,
        "ünïcode",
        [1, [2, "x"]],
        (1, (2, 3)),
        {"a": 1},
        {1: "one", (2, 3): [4]},
        {1, 2},
        frozenset({"a"}),
        b"\x00\xff",
        complex(1, -2),
        [],
    ],
)
def test_codec_round_trip(value: object) -> None:
    assert decode(encode(value)) == value
    assert type(decode(encode(value))) is type(value)


def test_codec_non_finite_floats() -> None:
    assert math.isnan(decode(encode(float("nan"))))
    assert decode(encode(float("-inf"))) == float("-inf")


def test_codec_subclasses_become_plain_builtins() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    out = decode(encode(Liar(3)))
    assert type(out) is int and out == 3 and out != 4


def test_codec_rejects_objects_without_ref_and_bad_input() -> None:
    with pytest.raises(CodecError):
        encode(object())
    with pytest.raises(CodecError):
        decode({"$": "ref", "id": 1})
    with pytest.raises(CodecError):
        decode({"$": "nope", "v": []})
    deep: list[object] = []
    for _ in range(500):
        deep = [deep]
    with pytest.raises(CodecError):
        encode(deep)
    nested: object = []
    for _ in range(5000):
        nested = [nested]
    with pytest.raises(CodecError):
        decode(nested)


def test_values_equal_rules() -> None:
    tol = {"rel_tol": 1e-9, "abs_tol": 1e-12}
    assert values_equal((1, 2), [1, 2], **tol)
    assert values_equal({1: "a"}, {"1": "a"}, **tol)
    assert values_equal(0.1 + 0.2, 0.3, **tol)
    assert values_equal(2, 2.0, **tol)
    assert not values_equal({3, 1, 2}, [1, 2, 3], **tol)  # a set is not a (sorted) list
    assert values_equal({3, 1, 2}, {1, 2, 3}, **tol)
    assert not values_equal(True, 1, **tol)
    assert not values_equal(1, True, **tol)
    assert not values_equal("1", 1, **tol)
    assert not values_equal([1, 2], [1, 2, 3], **tol)
    assert not values_equal(Opaque("X", "x"), 3, **tol)
    assert values_equal(float("nan"), float("nan"), **tol)


@pytest.mark.parametrize(
    ("mode", "actual", "expected", "same"),
    [
        ("exact", "3\n", "3\n", True),
        ("exact", "3", "3\n", False),
        ("lines", "a  \nb\n\n", "a\nb", True),
        ("lines", "a b\n", "a  b\n", False),
        ("tokens", "1   2\n3", "1 2 3\n", True),
        ("tokens", "1 2", "1 2 3", False),
        ("float", "0.3333333", "0.33333333", True),
        ("float", "0.33", "0.34", False),
        ("float", "x 1.0", "x 1", True),
    ],
)
def test_compare_output_modes(mode: str, actual: str, expected: str, same: bool) -> None:
    assert compare_output(actual, expected, mode, rel_tol=1e-6, abs_tol=1e-9) is same


def test_issue_spec_shapes_validate() -> None:
    shapes = [
        {
            "language": "python",
            "tests": {"kind": "assert", "code": "def check(candidate): ...", "entry_point": "f"},
            "timeout_s": 10,
        },
        {
            "tests": {
                "kind": "io",
                "cases": [{"stdin": "1 2\n", "stdout": "3\n"}],
                "compare": "tokens",
            }
        },
        {
            "tests": {
                "kind": "call",
                "entry_point": "f",
                "cases": [{"args": [1], "kwargs": {}, "expected": 2}],
            }
        },
        {"tests": {"kind": "pytest", "files": {"test_f.py": "..."}}},
    ]
    for shape in shapes:
        spec = CodeTestsSpec.model_validate(shape)
        assert spec.tests.kind == shape["tests"]["kind"]
        with pytest.raises(ValueError, match="future_field"):  # strict specs (issue 19)
            CodeTestsSpec.model_validate({**shape, "future_field": 1})


def test_spec_defaults_and_rejections() -> None:
    spec = CodeTestsSpec.model_validate(
        {"tests": {"kind": "call", "entry_point": "f", "cases": [{"args": [], "expected": 1}]}}
    )
    assert (spec.timeout_s, spec.memory_mb, spec.partial_credit, spec.per_test_timeout) == (
        30.0,
        512,
        True,
        10.0,
    )
    assert CodeTestsSpec.model_validate({**spec.model_dump(), "timeout_s": 3}).per_test_timeout == 3
    with pytest.raises(ValidationError):
        CodeTestsSpec.model_validate({"tests": {"kind": "shell", "cmd": "true"}})
    with pytest.raises(ValidationError):
        CodeTestsSpec.model_validate({"tests": {"kind": "io", "cases": []}})
    with pytest.raises(ValidationError):
        CodeTestsSpec.model_validate(
            {"tests": {"kind": "call", "entry_point": "f", "cases": [{}]}, "timeout_s": 0}
        )


def _lost_runner(returncode: int, *, oom_killed: bool, timed_out: bool = False) -> Any:
    from verifiers.sandbox import ExecResult, FakeProvider

    return FakeProvider(
        lambda call: ExecResult(
            returncode=returncode, oom_killed=oom_killed, timed_out=timed_out, stderr=b"lost"
        )
    )


@pytest.mark.parametrize(
    ("oom_killed", "status"),
    [(True, "fail"), (False, "error")],
    ids=["job-memory-took-the-runner-down", "judge-never-started"],
)
def test_no_judge_output_is_the_models_only_when_its_memory_killed_the_runner(
    oom_killed: bool, status: str
) -> None:
    """No ready line at all: the judge never started (the machine's failure, an abstain), unless
    the sandbox says the job's memory took the runner down with its output (the model's fail)."""
    from verifiers.engine import Engine, EngineSettings

    item = {
        "id": "x",
        "completion": "```python\ndef f():\n    return 1\n```",
        "task": {
            "verifier": "code.tests",
            "spec": {
                "tests": {
                    "kind": "assert",
                    "code": "def check(c):\n    assert c() == 1\n",
                    "entry_point": "f",
                }
            },
        },
    }
    provider = _lost_runner(-9, oom_killed=oom_killed)

    async def main() -> Any:
        async with Engine(EngineSettings(retries=0), sandboxes=provider) as engine:
            return await engine.score_one(item)

    result = asyncio.run(main())
    assert result.status == status, result
    if status == "fail":
        assert result.reward == 0.0 and "ran out of memory" in (result.feedback or "")
    else:
        assert result.reward is None and result.error is not None
        assert result.error.kind == "infra"


def test_hands_off_filter_refuses_acting_on_another_process() -> None:
    """A child under the judge's filter cannot lower its parent's limits, renice or pin it;
    it still sets its own (pid 0) and may signal (a killed judge scores 0)."""
    import os
    import resource

    from verifiers.domains.code import _judge_candidate

    parent = os.getpid()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            outcomes = [_judge_candidate._hands_off()]
            for call in (
                lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE, (77, 77)),
                lambda: os.setpriority(os.PRIO_PROCESS, parent, 19),
                lambda: os.setpriority(os.PRIO_USER, 0, 19),
                lambda: os.sched_setaffinity(parent, os.sched_getaffinity(0)),
                lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0)),
                lambda: os.setpriority(os.PRIO_PROCESS, 0, 1),
                lambda: os.kill(parent, 0),
            ):
                try:
                    call()
                    outcomes.append("ok")
                except OSError as exc:
                    outcomes.append(exc.errno)
            os.write(w, repr(outcomes).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    got = os.read(r, 4096).decode()
    os.close(r)
    assert status == 0
    assert got == repr([True, 1, 1, 1, 1, "ok", "ok", "ok"]), got
    assert resource.getrlimit(resource.RLIMIT_NOFILE) != (77, 77)
