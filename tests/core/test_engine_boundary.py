"""The engine's one preparation step, one error boundary and one stamp; ``SyncEngine``.

- a bad item is worded the same whether it came from a file line or from Python;
- nothing a trajectory holds raises out of ``Engine.stream`` (it becomes that item's error);
- the input line reaches ``ctx.line`` and every error result's ``error.line`` from the engine;
- ``id``, ``cached`` and ``duration_s`` are the engine's stamp alone: a cache hit is marked
  by the engine (the cache returns what was put), and a verifier cannot forge either;
- ``SyncEngine`` scores from threads and event loops, and its machine-wide limit holds across
  engines that share a key.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from concurrency_probe import Delay

from verifiers import (
    Engine,
    EngineSettings,
    InfraError,
    Result,
    Spec,
    SyncEngine,
    Trajectory,
    Verifier,
    VerifierContext,
    register,
)
from verifiers.io import InputRecord, iter_records, parse_line


class LineSpec(Spec):
    fail: str = ""
    delay: float = 0.0
    forge: bool = False


@register("test.line")
class SeesLine(Verifier[LineSpec]):
    """Reports the line the engine put on its context; raises on request."""

    Spec = LineSpec
    cacheable = False

    async def verify(self, trajectory: Trajectory, spec: LineSpec, ctx: VerifierContext) -> Result:
        if spec.fail == "infra":
            raise InfraError("flaky provider")
        if spec.fail == "value":
            raise ValueError("verifier bug")
        result = Result.scored(1.0, details={"line": ctx.line})
        if spec.forge:  # what only the engine may say: an id and a cache hit
            return result.model_copy(update={"id": "forged", "cached": True, "duration_s": 0.0})
        return result


@register("test.stamped")
class Stamped(Verifier[LineSpec]):
    """A cacheable verdict that takes a measurable time."""

    Spec = LineSpec

    async def verify(self, trajectory: Trajectory, spec: LineSpec, ctx: VerifierContext) -> Result:
        await asyncio.sleep(spec.delay)
        return Result.failed("wrong", reward=0.25)


def _task(**spec: Any) -> dict[str, Any]:
    return {"verifier": "test.line", "spec": spec}


# A corpus of bad items, each as a Python mapping: the engine must word each exactly as the
# file reader words the same JSON line.
BAD_ITEMS: list[Any] = [
    {"id": "a", "task": _task()},  # no completion
    {"id": "b", "completion": 5, "task": _task()},
    {"id": "c", "completion": "x"},  # no task
    {"id": "d", "completion": "x", "task": {"checks": []}},
    {"id": "e", "completion": "x", "task": {"spec": {}}},
    {"id": "f", "completion": "x", "task": _task(), "artifacts": {"m": {}}},
    {"id": "g", "completion": [{"content": "no role"}], "task": _task()},
    {"id": 7, "completion": "x", "task": {"verifier": "test.line", "combine": "median"}},
    {"id": "h", "completion": "x", "task": {"verifier": "test.line", "extra": 1}},
    {"id": "i", "completion": "x", "task": {"checks": [{"verifier": "test.line", "weight": -1}]}},
]


def test_a_bad_item_is_worded_the_same_from_a_file_and_from_python() -> None:
    from_file = [parse_line(n, json.dumps(obj).encode()) for n, obj in enumerate(BAD_ITEMS, 1)]

    async def run() -> list[Result]:
        async with Engine(EngineSettings(sandbox="none")) as engine:
            return await engine.score(BAD_ITEMS)

    from_python = asyncio.run(run())
    for obj, read, scored in zip(BAD_ITEMS, from_file, from_python, strict=True):
        assert isinstance(read, Result) and read.error is not None, obj
        assert scored.error is not None and scored.error.kind == "bad_input", obj
        assert scored.error.message == read.error.message, obj
        assert scored.id == read.id == str(obj["id"])


class _Hostile(dict[str, Any]):
    """A mapping whose lookups raise: a caller's object must not break the stream."""

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("hostile mapping")


def test_nothing_in_an_item_raises_out_of_the_stream() -> None:
    nested: dict[str, Any] = {}
    node = nested
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    items: list[Any] = [
        _Hostile(completion="x", task=_task()),
        {"completion": "x", "task": _task(), "metadata": nested},
        None,
        "not a trajectory",
        {"completion": "x", "task": _task()},
    ]

    async def run() -> list[Result]:
        async with Engine(EngineSettings(sandbox="none")) as engine:
            return await engine.score(items)

    results = asyncio.run(run())
    assert len(results) == len(items)
    assert results[-1].status == "pass"
    assert all(r.status == "error" and r.reward is None for r in results[:1] + results[2:4])
    assert results[2].error is not None and results[2].error.kind == "bad_input"


def test_the_engine_puts_the_input_line_on_ctx_and_on_every_error(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "ok", "completion": "x", "task": _task()}),
        "",
        "{not json",
        json.dumps({"id": "unknown", "completion": "x", "task": {"verifier": "no.such"}}),
        json.dumps({"id": "bug", "completion": "x", "task": _task(fail="value")}),
        json.dumps({"id": "infra", "completion": "x", "task": _task(fail="infra")}),
        json.dumps(
            {
                "id": "checks",
                "completion": "x",
                "task": {"checks": [{"verifier": "test.line", "spec": {"fail": "value"}}]},
            }
        ),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")

    async def run() -> list[Result]:
        settings = EngineSettings(sandbox="none", retries=1, retry_backoff_s=0.0)
        async with Engine(settings) as engine:
            return [r async for r in engine.stream(iter_records(path))]

    results = {r.id: r for r in asyncio.run(run())}
    assert results["ok"].details["line"] == 1  # ctx.line, set by the engine
    expected = {None: 3, "unknown": 4, "bug": 5, "infra": 6, "checks": 7}
    for ident, line in expected.items():
        error = results[ident].error
        assert error is not None and error.line == line, ident
    infra = results["infra"].error
    assert infra is not None and infra.kind == "infra" and infra.attempts == 2
    assert results["infra"].verifier == "test.line@1"
    assert results["unknown"].verifier == "no.such"


def test_an_input_record_of_a_ready_made_result_keeps_its_own_line() -> None:
    bad = Result.errored("bad_input", "broken", line=9)

    async def run() -> list[Result]:
        async with Engine(EngineSettings(sandbox="none")) as engine:
            return await engine.score([InputRecord(3, bad)])

    [result] = asyncio.run(run())
    assert result.error is not None and result.error.line == 9


ITEM = {"completion": "x", "task": _task()}


def test_sync_engine_scores_from_threads_and_from_a_running_loop() -> None:
    with SyncEngine(EngineSettings(sandbox="none")) as engine:
        assert engine.score_one(ITEM).status == "pass"
        out: list[Result] = []
        threads = [
            threading.Thread(target=lambda: out.extend(engine.score([ITEM, ITEM])))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [r.status for r in out] == ["pass"] * 8

        async def inside_a_loop() -> list[Result]:
            return await engine.score_async([ITEM])

        assert asyncio.run(inside_a_loop())[0].status == "pass"
    with pytest.raises(RuntimeError, match="closed"):
        engine.score([ITEM])


def test_machine_concurrency_holds_across_engines_sharing_a_key(tmp_path: Path) -> None:
    key = f"test-{time.monotonic_ns()}"
    slow = {"completion": "x", "task": {"verifier": "test.delay", "spec": {"delay": 0.05}}}
    Delay.probe.reset()
    settings = EngineSettings(sandbox="none", concurrency=4)
    engines = [SyncEngine(settings, machine_concurrency=1, machine_key=key) for _ in range(2)]
    try:
        threads = [threading.Thread(target=e.score, args=([slow] * 4,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for e in engines:
            e.close()
    assert Delay.probe.peak == 1  # 8 items, 2 engines x concurrency 4, one machine-wide slot
    Delay.probe.reset()
    with SyncEngine(settings) as free:
        free.score([slow] * 4)
    assert Delay.probe.peak > 1  # without the limit the same items overlap


def test_cached_and_id_are_stamped_by_the_engine_alone(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    stamped = {"completion": "x", "task": {"verifier": "test.stamped", "spec": {"delay": 0.05}}}
    with SyncEngine(EngineSettings(cache=path)) as engine:
        first, forged = engine.score(
            [{"id": "s1", **stamped}, {"id": "f", "completion": "x", "task": _task(forge=True)}]
        )
        (second,) = engine.score([{"id": "s2", **stamped}])  # same content: a hit
    assert (first.id, first.cached) == ("s1", False) and first.duration_s is not None
    assert (second.id, second.cached) == ("s2", True)
    assert first.duration_s >= 0.05 and second.duration_s > 0.0  # measured here, hit or not
    assert (forged.id, forged.cached) == ("f", False)
    assert forged.duration_s is not None and forged.duration_s > 0.0


def test_the_fold_of_checks_keeps_its_old_name() -> None:
    from verifiers import compose
    from verifiers.types import Check, Task

    assert compose.combine is compose.fold_checks  # the old import path keeps working
    task = Task(checks=[Check(verifier="a"), Check(verifier="b")], combine="min")
    folded = compose.fold_checks(task, [Result.scored(1.0), Result.failed("no", reward=0.25)])
    assert (folded.status, folded.reward) == ("fail", 0.25)
