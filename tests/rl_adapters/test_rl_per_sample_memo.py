"""veRL's per-sample ``compute_score`` memoises what it reads, never another row's answer.

veRL's naive/dapo managers call ``compute_score`` once per sample with the same
``reward_kwargs``, so the adapter keeps one config per distinct kwargs (``verl._config``) and
one validated default task per exact ground truth (``_rows.REFERENCES``). A memo keyed too
loosely would score a completion against another row's answer (``True`` for ``1``, ``"3 "`` for
``"3"``) or reuse a refused config. Every row of ``datasets/adapters/per_sample_memo.jsonl``
runs through the per-sample path (forward, then reversed, with the memo warm), the batch path,
and a plain engine fed task dicts with no memo at all: all three must agree, and nothing in a
ground truth may raise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from verifiers.rl_adapters import verl
from verifiers.rl_adapters._extra import extra_keys
from verifiers.rl_adapters._rows import REFERENCES, TaskDefaults, make_item

import verifiers
from verifiers.errors import InvalidSettings
from verifiers.types import Task

CORPUS = Path(__file__).parents[2] / "datasets" / "adapters" / "per_sample_memo.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
VERIFIER = "answer.numeric"
KWARGS = {
    "sandbox": "none",
    "workers": 1,
    "machine_concurrency": None,
    "invalid_score": -1.0,
    "verifier": VERIFIER,
}


def _truth(row: dict[str, Any]) -> Any:
    value = row["ground_truth"]
    return value + " " * row["pad_spaces"] if "pad_spaces" in row else value


def _oracle(items: list[dict[str, Any]], invalid: float) -> list[float]:
    """What a fresh engine says about plain task dicts (no adapter, no memo)."""
    return [
        invalid if r.status in ("error", "skipped") else float(r.reward)  # type: ignore[arg-type]
        for r in verifiers.score(items)
    ]


def _task(truth: Any, spec: Any = None, verifier: Any = VERIFIER) -> dict[str, Any]:
    if isinstance(truth, dict) and "verifier" in truth:
        return dict(truth)
    return {"verifier": verifier, "spec": spec, "reference": truth}


def test_ground_truths_never_share_a_task() -> None:
    rows = [r for r in ROWS if r["kind"] == "ground_truth"]
    assert len(rows) >= 20
    truths = [_truth(r) for r in rows]
    completions = [r["completion"] for r in rows]
    want = _oracle(
        [{"completion": c, "task": _task(t)} for c, t in zip(completions, truths, strict=True)],
        -1.0,
    )
    assert want[:3] == [1.0, 1.0, 1.0] and 0.0 in want  # the corpus can tell answers apart

    def per_sample(order: range) -> list[float]:
        out = [0.0] * len(rows)
        for i in order:
            out[i] = verl.compute_score("d", completions[i], truths[i], None, **KWARGS)["score"]
        return out

    assert per_sample(range(len(rows))) == want
    assert per_sample(range(len(rows) - 1, -1, -1)) == want  # memo warm, other order
    batch = verl.compute_score_batch(["d"] * len(rows), completions, truths, None, **KWARGS)
    assert [d["score"] for d in batch] == want
    # keys are exact: the 70k-character reference was validated but never kept
    assert not any(isinstance(k[2], str) and len(k[2]) > 65_536 for k in REFERENCES._young)
    assert len(REFERENCES) <= REFERENCES.items


def test_non_finite_ground_truths_never_raise() -> None:
    (row,) = [r for r in ROWS if r["kind"] == "nonfinite"]
    values = [float(v) for v in row["values"]]
    want = _oracle([{"completion": row["completion"], "task": _task(v)} for v in values], -1.0)
    for _ in range(2):
        got = [
            verl.compute_score("d", row["completion"], v, None, **KWARGS)["score"] for v in values
        ]
        assert got == want and all(math.isfinite(g) for g in got)


def test_reward_kwargs_are_never_confused() -> None:
    """Each kwargs set behaves as itself, whatever configs the memo already holds."""
    rows = [r for r in ROWS if r["kind"] == "kwargs"]
    assert len(rows) >= 8
    for row in rows:
        kwargs = {**KWARGS, **row["kwargs"]}
        for name in row.get("as_tuple", ()):
            kwargs[name] = tuple(kwargs[name])
        args = ("d", row["completion"], row["ground_truth"], row.get("extra_info"))
        for _ in range(2):  # the second call meets its own memo entry (or none, if refused)
            if "raises" in row:
                with pytest.raises((InvalidSettings, ValueError), match=row["raises"]):
                    verl.compute_score(*args, **kwargs)
                continue
            got = verl.compute_score(*args, **kwargs)
            task = (row.get("extra_info") or {}).get("task")
            item_task = task if task is not None else _task(row["ground_truth"], kwargs.get("spec"))
            invalid = float(kwargs["invalid_score"])
            want = _oracle([{"completion": row["completion"], "task": item_task}], invalid)
            assert got["score"] == want[0], row["why"]
            assert list(got) == ["score", *extra_keys(tuple(kwargs.get("components") or ()))]


def test_one_config_and_one_task_per_distinct_input() -> None:
    """The memo is used: equal kwargs give the same config, an equal reference the same Task."""
    first = verl._config(dict(KWARGS))
    assert verl._config(dict(KWARGS)) is first
    assert verl._config({**KWARGS, "invalid_score": -1}) is not first  # -1 vs -1.0: two keys
    defaults = TaskDefaults(verifier=VERIFIER)

    def item(reference: Any) -> Any:
        made = make_item(completion="x", reference=reference, defaults=defaults)
        assert isinstance(made, dict)
        return made["task"]

    # A reference's first row takes the dict path (nothing validated apart), from its second
    # row on every row shares one validated Task.
    first = item("7")
    assert first == {"verifier": VERIFIER, "reference": "7"}
    a, b = item("7"), item("7")
    assert isinstance(a, Task) and a is b and a.reference == "7"
    assert isinstance(item(7), dict)
    c = item(7)
    assert isinstance(c, Task) and c is not a and c.reference == 7
    item(7.0)
    d = item(7.0)
    assert d is not c and d.reference == 7.0 and type(d.reference) is float  # typed keys


class _Source(str):
    def __str__(self) -> str:
        return "another source"


def test_plain_rows_are_built_as_the_general_path_builds_them() -> None:
    """veRL's usual row (a plain ground truth, maybe an extra_info without a task) skips the
    general path: it must build the very item that path builds, first sight and after."""
    rows = verl._Rows({"verifier": VERIFIER, "verifiers_by_source": {"s2": "answer.math"}})
    shapes: list[tuple[Any, Any, Any]] = [
        ("d", "3", None),
        ("d", 3, {}),
        ("d", 3.5, {"index": 4}),
        ("d", "x", {"id": 7, "index": 4, "prompt": "P"}),
        ("d", "x", {"index": 0, "prompt": ["not", "text"]}),
        ("d", "3", {"task": None, "index": None}),
        ("s2", "3", None),
        (_Source("d"), "3", None),
        ("d", True, None),
        ("d", None, {"index": 2}),
        ("d", {"verifier": VERIFIER, "reference": "3"}, None),
        ("d", "3", {"task": json.dumps({"verifier": VERIFIER, "reference": "4"})}),
        # extra_info["task"] as a JSON string: the task-string shortcut, or the general path
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"})}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": 4}), "id": 9}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"}), "index": 1}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER}), "prompt": "P"}),
        ("d", "3", {"task": json.dumps({"verifier": VERIFIER})}),  # ground truth fills it in
        ("d", 3, {"task": json.dumps({"verifier": VERIFIER, "spec": None})}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": None})}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4", "x": 1})}),
        ("d", None, {"task": json.dumps({"checks": [{"verifier": VERIFIER}]}), "id": "a"}),
        ("d", None, {"task": json.dumps([VERIFIER])}),
        ("d", None, {"task": "{not json"}),
        ("d", None, {"task": ""}),
        ("d", None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"}) + " \t"}),
        ("d", None, {"task": {"verifier": VERIFIER, "reference": "4"}}),
        ("s3", None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"})}),
        (_Source("d"), None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"})}),
        (3, None, {"task": json.dumps({"verifier": VERIFIER, "reference": "4"})}),
    ]
    for source in ("d", "s2"):
        rows._item(source, "warm", "0", None)
    assert set(rows._plain) == {"d", "s2"}  # the plain-row path is on for both sources

    def built(make: Any, args: tuple[Any, ...], sights: int) -> Any:
        REFERENCES.clear()
        for _ in range(sights - 1):
            make(*args)
        return make(*args)

    for source, truth, info in shapes:
        args = (source, "The answer is 3", truth, info)
        for sights in (1, 2, 3):
            assert built(rows.item, args, sights) == built(rows._item, args, sights), (
                args,
                sights,
            )
    REFERENCES.clear()


def test_task_strings_skip_the_general_path() -> None:
    """A row whose extra_info["task"] is a valid JSON task string (veRL's per-sample row with
    the task in the dataset) is built without the general path once its data source is known,
    and a string that does not validate still goes there (its bad_input result)."""
    rows = verl._Rows({})
    task = json.dumps({"verifier": VERIFIER, "reference": "4"})
    first = rows.item("d", "The answer is 4", None, {"task": task})
    general = rows._item

    def refuse(*args: Any) -> Any:
        raise AssertionError(f"general path taken for {args!r}")

    rows._item = refuse  # type: ignore[method-assign]
    for spelling in (task, task + " ", task + "\n\t"):  # new strings: validated, not recalled
        got = rows.item("d", "The answer is 4", None, {"task": spelling, "index": 3})
        assert isinstance(got, dict) and isinstance(got["task"], Task)
        assert got["task"].reference == "4" and got["id"] == "3"
        assert got["metadata"] == first["metadata"] == {"data_source": "d"}  # type: ignore[index]
    rows._item = general  # type: ignore[method-assign]
    bad = rows.item("d", "The answer is 4", None, {"task": "{not json"})
    assert isinstance(bad, verifiers.Result) and bad.status == "error"
    assert bad.error is not None and bad.error.kind == "bad_input"
