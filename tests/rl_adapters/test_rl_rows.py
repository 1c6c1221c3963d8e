"""The adapters' fast paths (memoised JSON, one shared ``Task`` per task string) change nothing.

Each case builds a row from a JSON task string (fast path) and from the same JSON already
parsed into a dict (the plain dict path, which never takes the fast path), lets the engine's
own validation judge both, and requires the same trajectory or the same error message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from verifiers.rl_adapters import TaskDefaults, make_item
from verifiers.rl_adapters._rows import MISSING, task_from_json
from verifiers.rl_adapters.openrlhf import DEFAULT_EOS_TOKENS, _label_task, response_text

from verifiers import Result, Task, Trajectory
from verifiers.engine import validation_message

DEFAULTS = TaskDefaults(verifier="answer.numeric")

TASK_STRINGS = [
    '{"verifier": "answer.numeric", "reference": "12"}',
    '{"verifier": "answer.numeric"}',  # no reference: a reference column fills it
    '{"verifier": "answer.numeric", "reference": null}',  # null = absent: filled too
    '{"verifier": "answer.numeric", "reference": 3, "combine": null}',  # dropped null
    '{"verifier": "answer.numeric", "reference": 1, "reference": 2}',  # duplicate key
    '{"verifier": "answer.numeric", "reference": 123456789012345678901234567890}',
    '{"verifier": "answer.numeric", "reference": "\\ud800"}',  # lone surrogate
    '{"verifier": "answer.numeric", "spec": {"rel_tol": 0.5}, "reference": [1, {"a": null}]}',
    '{"checks": [{"verifier": "answer.numeric"}], "reference": "4"}',
    '{"verifier": "answer.numeric", "checks": null, "spec": null}',
    '{"verifier": null, "checks": [{"verifier": "answer.numeric", "weight": 2}]}',
    '{"verifier": "answer.numeric", "unknown_key": 1}',  # the engine rejects it
    '{"verifier": "answer.numeric", "combine": "median"}',  # ditto
    '{"reference": "4"}',  # neither verifier nor checks
    '  {"verifier": "answer.numeric", "reference": "1"}  ',
]


def _judged(item: dict[str, Any] | Result) -> Any:
    """What the engine makes of an item: the trajectory, or its bad_input message."""
    if isinstance(item, Result):
        return ("result", item.status, item.error.message if item.error else None)
    try:
        return Trajectory.model_validate(item)
    except ValidationError as exc:
        return ("bad_input", validation_message(exc))


@pytest.mark.parametrize("reference", [MISSING, None, "9"])
@pytest.mark.parametrize("text", TASK_STRINGS)
def test_json_string_rows_match_the_dict_path(text: str, reference: Any) -> None:
    fast = make_item(completion="c", task=text, reference=reference, defaults=DEFAULTS)
    plain = make_item(completion="c", task=json.loads(text), reference=reference, defaults=DEFAULTS)
    assert _judged(fast) == _judged(plain)
    fast_bytes = make_item(
        completion="c", task=text.encode(), reference=reference, defaults=DEFAULTS
    )
    assert _judged(fast_bytes) == _judged(plain)


def test_bad_json_rows_are_still_bad_input() -> None:
    for text in ("{not json", "[1]", "5", ""):
        item = make_item(completion="c", task=text, defaults=DEFAULTS)
        assert isinstance(item, Result) and item.status == "error"
        assert item.error is not None and item.error.kind == "bad_input"


def test_a_group_shares_one_validated_task() -> None:
    text = json.dumps({"verifier": "answer.numeric", "reference": "7", "spec": {"rel_tol": 0}})
    items = [make_item(completion=str(i), task=text, defaults=DEFAULTS) for i in range(8)]
    tasks = [item["task"] for item in items if isinstance(item, dict)]
    assert len(tasks) == 8 and isinstance(tasks[0], Task)
    assert all(task is tasks[0] for task in tasks)  # parsed and validated once
    assert task_from_json(text) is tasks[0]
    assert task_from_json('{"verifier": "x", "combine": null}') is None  # dict path decides


def test_long_task_strings_are_not_memoised_but_still_parsed() -> None:
    text = json.dumps({"verifier": "answer.numeric", "reference": "x" * 70_000})
    first, second = task_from_json(text), task_from_json(text)
    assert first is not None and second is not None
    assert first == second and first is not second


@pytest.mark.parametrize("label", [*TASK_STRINGS, "12", " {not json", '{"answer": 3}', 7])
def test_openrlhf_labels_match_the_dict_path(label: Any) -> None:
    task, reference = _label_task(label)
    fast = make_item(completion="c", task=task, reference=reference, defaults=DEFAULTS)
    # the label as the dict path reads it: a task dict, else the raw label as the reference
    try:
        value = json.loads(label) if isinstance(label, str) else label
    except json.JSONDecodeError:
        value = label
    if isinstance(value, dict) and ("verifier" in value or "checks" in value):
        plain = make_item(completion="c", task=value, defaults=DEFAULTS)
    else:
        plain = make_item(completion="c", reference=label, defaults=DEFAULTS)
    assert _judged(fast) == _judged(plain)


def _only_whitespace_and_tokens(removed: str, tokens: Any) -> bool:
    """Whether ``removed`` splits into whitespace characters and end tokens (a DP over ends)."""
    ends = {0}
    for i in range(1, len(removed) + 1):
        if removed[i - 1].isspace() and i - 1 in ends:
            ends.add(i)
        elif any(t and removed[:i].endswith(t) and i - len(t) in ends for t in tokens):
            ends.add(i)
    return len(removed) in ends


_PIECES = st.sampled_from(["a", " ", "\n", "</s>", "<eos>", "<|im_end|>", "END\n", "x "])


@given(
    body=st.lists(_PIECES, max_size=8).map("".join),
    prompt=st.sampled_from([None, "", "P", "a"]),
    tokens=st.sampled_from(
        [DEFAULT_EOS_TOKENS, (), ("",), ("END\n", "</s>"), ["</s>", "END\n", "x "]]
    ),
)
def test_response_text_cuts_the_prompt_and_only_trailing_end_tokens(
    body: str, prompt: str | None, tokens: Any
) -> None:
    """What ``response_text`` promises, checked as properties (no copy of its loop): the text
    after the prompt, with every trailing run of whitespace and end tokens removed, nothing
    else."""
    for query in ((prompt or "") + body, "lead " + (prompt or "") + body, body):
        cut = query.partition(prompt)[2] if prompt and prompt in query else query
        out = response_text(query, prompt, tokens)
        assert cut.startswith(out) and out == out.rstrip()
        assert not any(t and out.endswith(t) for t in tokens)
        assert _only_whitespace_and_tokens(cut[len(out) :], tokens)


def test_extra_columns_match_extra_values_per_sample() -> None:
    """The batch-wide columns OpenRLHF logs equal the per-sample values, key by key."""
    from verifiers.rl_adapters._extra import extra_columns, extra_keys, extra_values

    results = [
        Result.scored(1.0, components={"hit": 1.0, "short": 0.0}),
        Result.scored(0.25, components={"hit": 0.0}),
        Result.skip("no reference"),
        *(Result.errored(kind, "x") for kind in ("bad_input", "infra", "timeout", "verifier")),
    ]
    for components in ((), ("hit", "short")):
        columns = extra_columns(results, components)
        assert tuple(columns) == extra_keys(components)
        for i, result in enumerate(results):
            assert {k: v[i] for k, v in columns.items()} == extra_values(result, components)
