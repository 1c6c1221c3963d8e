"""Engine behaviour: order, concurrency, deadlines, retries, the error boundary, composition.

The verifiers here are test doubles for the engine's own logic; real verifiers are tested
through the engine in their own packages.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from concurrency_probe import Delay, DelaySpec

import verifiers
from verifiers import (
    BadInput,
    Engine,
    EngineSettings,
    InfraError,
    InlineVerifier,
    Result,
    Spec,
    Trajectory,
    Verifier,
    VerifierContext,
    register,
)


class FlakySpec(Spec):
    failures: int = 0
    key: str = ""


@register("test.flaky")
class Flaky(Verifier[FlakySpec]):
    Spec = FlakySpec
    cacheable = False
    calls: dict[str, int] = {}

    async def verify(self, trajectory: Trajectory, spec: FlakySpec, ctx: VerifierContext) -> Result:
        n = self.calls.get(spec.key, 0) + 1
        self.calls[spec.key] = n
        if n <= spec.failures:
            raise InfraError(f"transient failure {n}")
        return Result.scored(1.0)


class RaiseSpec(Spec):
    what: str = "value"


@register("test.raise")
class Raises(Verifier[RaiseSpec]):
    Spec = RaiseSpec
    cacheable = False
    calls = 0

    async def verify(self, trajectory: Trajectory, spec: RaiseSpec, ctx: VerifierContext) -> Result:
        type(self).calls += 1
        if spec.what == "value":
            raise ValueError("boom")
        if spec.what == "bad_input":
            raise BadInput("artifact missing")
        if spec.what == "not_result":
            return 0.5  # type: ignore[return-value]
        if spec.what == "skip":
            return Result.skip("not applicable")
        raise AssertionError(spec.what)


class EqSpec(Spec):
    expected: str = ""


@register("test.eq")
class Eq(InlineVerifier[EqSpec]):
    Spec = EqSpec

    def check(self, trajectory: Trajectory, spec: EqSpec) -> Result:
        ok = trajectory.completion == (spec.expected or trajectory.task.reference)
        return Result.scored(1.0 if ok else 0.0)


class WorkerSpec(Spec):
    target: str
    payload: Any = None
    timeout: float | None = None
    memory_mb: int | None = None


@register("test.worker")
class InWorker(Verifier[WorkerSpec]):
    Spec = WorkerSpec
    cacheable = False

    async def verify(
        self, trajectory: Trajectory, spec: WorkerSpec, ctx: VerifierContext
    ) -> Result:
        value = await ctx.run_in_worker(
            spec.target, spec.payload, timeout=spec.timeout, memory_mb=spec.memory_mb
        )
        return Result.scored(1.0, details={"value": value})


def item(verifier: str, i: int | str = 0, **spec: Any) -> dict[str, Any]:
    return {"id": str(i), "completion": "x", "task": {"verifier": verifier, "spec": spec}}


@pytest.fixture(autouse=True)
def _worker_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    from pathlib import Path

    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", here + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_results_come_back_in_input_order_while_running_concurrently() -> None:
    Delay.probe.reset()
    delays = [0.2, 0.0, 0.1, 0.05, 0.0, 0.15] * 4
    items = [item("test.delay", i, delay=d, reward=0.5) for i, d in enumerate(delays)]
    started = time.perf_counter()
    results = verifiers.score(items, concurrency=6)
    elapsed = time.perf_counter() - started
    assert [r.id for r in results] == [str(i) for i in range(len(delays))]
    assert all(r.status == "fail" and r.reward == 0.5 for r in results)
    assert Delay.probe.peak == 6  # bounded, and actually concurrent
    assert elapsed < sum(delays) / 2


def test_stream_is_lazy_with_a_bounded_window() -> None:
    consumed = 0

    def generate() -> Any:
        nonlocal consumed
        for i in range(100):
            consumed += 1
            yield item("test.delay", i, delay=0.01)

    async def first() -> int:
        async with Engine(EngineSettings(concurrency=2, window=4)) as engine:
            async for _ in engine.stream(generate()):
                return consumed
        return -1

    assert asyncio.run(first()) <= 5


def test_deadline_turns_a_slow_verifier_into_a_timeout_error() -> None:
    started = time.perf_counter()
    [result] = verifiers.score([item("test.delay", delay=30)], timeout_s=0.3)
    assert time.perf_counter() - started < 5
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "timeout"


def test_infra_errors_are_retried_with_backoff_then_reported() -> None:
    [ok] = verifiers.score(
        [item("test.flaky", failures=2, key="a")], retries=2, retry_backoff_s=0.01
    )
    assert ok.status == "pass"
    [bad] = verifiers.score(
        [item("test.flaky", failures=5, key="b")], retries=2, retry_backoff_s=0.01
    )
    assert bad.status == "error" and bad.error is not None
    assert bad.error.kind == "infra" and bad.error.attempts == 3
    assert Flaky.calls["b"] == 3


def test_only_infra_errors_are_retried() -> None:
    Raises.calls = 0
    [result] = verifiers.score([item("test.raise", what="bad_input")], retries=3)
    assert result.error is not None and result.error.kind == "bad_input"
    assert Raises.calls == 1


@pytest.mark.parametrize(
    ("what", "kind", "fragment"),
    [
        ("value", "verifier", "ValueError: boom"),
        ("bad_input", "bad_input", "artifact missing"),
        ("not_result", "verifier", "returned float"),
    ],
)
def test_error_boundary(what: str, kind: str, fragment: str) -> None:
    [result] = verifiers.score([item("test.raise", 7, what=what)])
    assert result.id == "7"
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == kind
    assert fragment in result.error.message
    assert result.verifier == "test.raise@1"


def test_unknown_verifier_and_bad_spec_are_bad_input() -> None:
    results = verifiers.score(
        [
            item("no.such.verifier", 1),
            {
                "id": "2",
                "completion": "x",
                "task": {"verifier": "test.delay", "spec": {"delay": "soon"}},
            },
            {"id": "3", "completion": "x", "task": {}},
        ]
    )
    kinds = [r.error.kind if r.error else None for r in results]
    assert kinds == ["bad_input"] * 3
    assert results[0].error is not None and "installed:" in results[0].error.message
    assert "test.delay" in results[0].error.message
    assert results[1].error is not None and "delay" in results[1].error.message
    assert [r.id for r in results] == ["1", "2", "3"]


def test_spec_may_be_omitted() -> None:
    [result] = verifiers.score(
        [{"completion": "4", "task": {"verifier": "test.eq", "reference": "4"}}]
    )
    assert result.status == "pass"


def test_sync_facade_refuses_inside_a_running_loop() -> None:
    async def inside() -> None:
        verifiers.score([item("test.eq")])

    with pytest.raises(RuntimeError, match="score_async"):
        asyncio.run(inside())


def test_async_facade() -> None:
    results = asyncio.run(verifiers.score_async([item("test.delay", 1, delay=0.01)]))
    assert results[0].status == "pass" and results[0].id == "1"


def _composed(checks: list[dict[str, Any]], combine: str = "mean") -> dict[str, Any]:
    return {"id": "c", "completion": "x", "task": {"checks": checks, "combine": combine}}


def test_composition_weighted_mean_keeps_component_names() -> None:
    [result] = verifiers.score(
        [
            _composed(
                [
                    {
                        "verifier": "test.delay",
                        "spec": {"reward": 1.0},
                        "weight": 3,
                        "name": "format",
                    },
                    {
                        "verifier": "test.delay",
                        "spec": {"reward": 0.0},
                        "weight": 1,
                        "name": "answer",
                    },
                ]
            )
        ]
    )
    assert result.status == "fail"
    assert result.reward == pytest.approx(0.75)
    assert result.components == {"format": 1.0, "answer": 0.0}
    assert result.verifier == "compose"


def test_composition_min_all_and_gate() -> None:
    checks = [
        {"verifier": "test.delay", "spec": {"reward": 0.5}},
        {"verifier": "test.delay", "spec": {"reward": 1.0}},
    ]
    [low] = verifiers.score([_composed(checks, "min")])
    assert low.reward == 0.5
    [none] = verifiers.score([_composed(checks, "all")])
    assert none.reward == 0.0
    gated = [
        {"verifier": "test.delay", "spec": {"reward": 0.9}, "required": True, "name": "gate"},
        {"verifier": "test.delay", "spec": {"reward": 1.0}, "weight": 100},
    ]
    [result] = verifiers.score([_composed(gated)])
    assert result.reward == 0.0 and result.status == "fail"
    assert "gate" in result.feedback
    # Clashing names get suffixes rather than overwriting each other.
    assert set(result.components) == {"gate", "test.delay"}


def test_composition_error_is_never_a_score_and_skips_abstain() -> None:
    [err] = verifiers.score(
        [
            _composed(
                [{"verifier": "test.delay"}, {"verifier": "test.raise", "spec": {"what": "value"}}]
            )
        ]
    )
    assert err.status == "error" and err.reward is None
    assert err.error is not None and "test.raise" in err.error.message
    [partial] = verifiers.score(
        [
            _composed(
                [
                    {"verifier": "test.delay", "spec": {"reward": 0.5}},
                    {"verifier": "test.raise", "spec": {"what": "skip"}},
                ]
            )
        ]
    )
    assert partial.reward == 0.5
    [skipped] = verifiers.score([_composed([{"verifier": "test.raise", "spec": {"what": "skip"}}])])
    assert skipped.status == "skipped" and skipped.reward is None


def test_worker_jobs_return_json_and_isolate_prints() -> None:
    results = verifiers.score(
        [
            item("test.worker", 1, target="_worker_targets:echo", payload={"a": [1, 2]}),
            item("test.worker", 2, target="_worker_targets:noisy"),
        ]
    )
    assert results[0].details["value"]["got"] == {"a": [1, 2]}
    assert results[1].details["value"] == "quiet"


def test_worker_is_killed_at_its_timeout() -> None:
    started = time.perf_counter()
    [result] = verifiers.score([item("test.worker", target="_worker_targets:spin", timeout=0.5)])
    assert time.perf_counter() - started < 10
    assert result.error is not None and result.error.kind == "timeout"


def test_worker_memory_limit_is_bad_input_not_a_crash() -> None:
    results = verifiers.score(
        [
            item("test.worker", 1, target="_worker_targets:hog", payload=3000, memory_mb=600),
            item("test.worker", 2, target="_worker_targets:hog", payload=10, memory_mb=600),
        ],
        workers=1,
    )
    assert results[0].error is not None and results[0].error.kind == "bad_input"
    assert "memory" in results[0].error.message
    assert results[1].status == "pass"  # the pool recovered


def test_worker_crash_is_infra_and_retried() -> None:
    [result] = verifiers.score(
        [item("test.worker", target="_worker_targets:die")], retries=1, retry_backoff_s=0.01
    )
    assert result.error is not None and result.error.kind == "infra"
    assert result.error.attempts == 2


def test_worker_errors_keep_their_kind() -> None:
    [result] = verifiers.score([item("test.worker", target="_worker_targets:bad", payload=3)])
    assert result.error is not None and result.error.kind == "bad_input"
    assert "bad payload 3" in result.error.message


def test_result_invariants() -> None:
    with pytest.raises(ValueError):
        Result(reward=None, status="pass")
    with pytest.raises(ValueError):
        Result(reward=0.0, status="error")
    with pytest.raises(ValueError):
        Result(reward=float("nan"), status="fail")
    assert Result.scored(1.0).status == "pass"
    assert Result.scored(0.99).status == "fail"


def test_an_unusable_cache_degrades_to_no_cache(tmp_path: Any) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    results = verifiers.score(
        [item("test.delay", 1, delay=0.0), item("test.delay", 2, delay=0.0)],
        cache=blocker / "results.sqlite",
    )
    assert [r.status for r in results] == ["pass", "pass"]


def test_cached_results_are_served_and_marked(tmp_path: Any) -> None:
    Cached.calls = 0
    path = tmp_path / "cache.sqlite"
    first = verifiers.score([item("test.cached", 1, reward=0.5)], cache=path)
    second = verifiers.score([item("test.cached", 2, reward=0.5)], cache=path)
    assert Cached.calls == 1
    assert not first[0].cached and second[0].cached
    assert second[0].id == "2" and second[0].reward == 0.5


@register("test.cached")
class Cached(Verifier[DelaySpec]):
    Spec = DelaySpec
    calls = 0

    async def verify(self, trajectory: Trajectory, spec: DelaySpec, ctx: VerifierContext) -> Result:
        type(self).calls += 1
        return Result.scored(spec.reward)


class MaybeSpec(Spec):
    inline: bool = True


@register("test.maybe_inline")
class MaybeInline(Verifier[MaybeSpec]):
    Spec = MaybeSpec
    cacheable = False
    async_calls = 0

    def verify_inline(self, trajectory: Trajectory, spec: MaybeSpec) -> Result | None:
        return Result.scored(1.0, feedback="inline") if spec.inline else None

    async def verify(self, trajectory: Trajectory, spec: MaybeSpec, ctx: VerifierContext) -> Result:
        type(self).async_calls += 1
        return Result.scored(0.5, feedback="async")


def test_verify_inline_answers_when_it_can_and_falls_back_when_it_cannot() -> None:
    MaybeInline.async_calls = 0
    results = verifiers.score(
        [item("test.maybe_inline", 1, inline=True), item("test.maybe_inline", 2, inline=False)]
    )
    assert [r.feedback for r in results] == ["inline", "async"]
    assert [r.id for r in results] == ["1", "2"]
    assert results[0].verifier == "test.maybe_inline@1"
    assert MaybeInline.async_calls == 1


def test_a_failed_gate_decides_even_when_another_check_errors() -> None:
    # Otherwise a model could dodge a failing required check by making another check error
    # out: an abstain (None) instead of the 0 it earned.
    gated = [
        {"verifier": "test.delay", "spec": {"reward": 0.0}, "required": True, "name": "answer"},
        {"verifier": "test.raise", "spec": {"what": "value"}, "name": "format"},
    ]
    [result] = verifiers.score([_composed(gated)])
    assert (result.status, result.reward) == ("fail", 0.0)
    assert "answer" in result.feedback
    [all_mode] = verifiers.score(
        [_composed([{"verifier": "test.delay", "spec": {"reward": 0.2}}, gated[1]], combine="all")]
    )
    assert (all_mode.status, all_mode.reward) == ("fail", 0.0)
    # Without a decisive failure the error still wins: no fake partial score.
    [undecided] = verifiers.score([_composed([{"verifier": "test.delay"}, gated[1]])])
    assert undecided.status == "error"
