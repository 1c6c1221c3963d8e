"""The episode API on real bubblewrap sandboxes: tools, budgets, refine policies, the
per-attempt cache, feedback policies, a dead sandbox, and the sync twin."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Any

import pytest
from episode_helpers import TASKS, row, with_engine

from verifiers import Engine, EngineSettings, EpisodeSettings, SyncEpisode, ToolRefused
from verifiers.errors import BadInput

pytestmark = pytest.mark.bwrap

CAPITAL = {
    "id": "capital",
    "prompt": "Capital of France?",
    "task": {"verifier": "answer.exact", "reference": "Paris"},
}


def test_tools_and_refusals() -> None:
    async def body(engine: Engine) -> None:
        async with engine.episode(row("bugfix-calc")) as ep:
            assert await ep.list_files() == ["calc.py", "tests", "tests/test_calc.py"]
            await ep.write_file("pkg/new.py", "X = 42\n")
            assert await ep.read_file("pkg/new.py") == "X = 42\n"
            out = await ep.run(["python3", "-c", "import pkg.new as m; print(m.X)"])
            assert (out.returncode, out.text()) == (0, "42\n")
            shell = await ep.run("echo hi | tr a-z A-Z")
            assert shell.returncode == 126 and b"argv lists only" in shell.stderr
            for bad in ("../escape.py", "/etc/passwd", "a/../../b", ""):
                with pytest.raises(ToolRefused):
                    await ep.write_file(bad, "x")
            with pytest.raises(ToolRefused, match="no such file"):
                await ep.read_file("missing.txt")
            bad_argv = await ep.run([])
            assert bad_argv.returncode == 126
        async with engine.episode(row("bugfix-calc", episode={"allow_shell": True})) as ep:
            shell = await ep.run("echo hi | tr a-z A-Z")
            assert (shell.returncode, shell.text()) == (0, "HI\n")

    with_engine(body)


def test_unknown_episode_setting_is_bad_input() -> None:
    async def body(engine: Engine) -> None:
        with pytest.raises(BadInput, match="max_comands"):
            engine.episode(row("bugfix-calc", episode={"max_comands": 3}))
        with pytest.raises(BadInput, match="reward"):
            engine.episode(CAPITAL, reward="discounted(2)")

    with_engine(body)


@pytest.mark.parametrize(
    ("settings", "commands", "budget"),
    [
        ({"max_commands": 2}, [["true"], ["true"], ["true"]], "commands (2)"),
        ({"max_turns": 2}, [["true"], ["true"], ["true"]], "turns (2)"),
        ({"output_bytes": 4096}, [["python3", "-c", "print('x' * 100000)"]], "output bytes (4096)"),
        ({"wall_s": 1.0}, [["sleep", "30"]], "wall seconds (1)"),
        (
            {"cpu_s": 1.0, "command_timeout_s": 20},
            [["python3", "-c", "while True: pass"]],
            "CPU seconds (1)",
        ),
    ],
    ids=["commands", "turns", "output", "wall", "cpu"],
)
def test_budget_exhaustion_is_the_models_fail(
    settings: dict[str, Any], commands: list[list[str]], budget: str
) -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(row("bugfix-calc"), **settings) as ep:
            outs = [await ep.run(c) for c in commands]
            assert ep.done and ep.exhausted == budget
            after = await ep.run(["true"])
            assert after.returncode == 126 and b"budget exhausted" in after.stderr
            step = await ep.submit()
            assert step.done
            return outs, await ep.finish()

    outs, result = with_engine(body)
    assert (result.status, result.reward) == ("fail", 0.0)
    assert budget in result.feedback
    assert result.details["episode"]["exhausted"] == budget
    if budget.startswith("output"):
        assert len(outs[0].stdout) <= 4096 and outs[0].truncated


@pytest.mark.parametrize(
    ("policy", "answers", "reward", "status"),
    [
        ("last", ["London", "Paris"], 1.0, "pass"),
        ("discounted(0.5)", ["London", "Rome", "Paris"], 0.25, "fail"),
        ("best", ["London", "Rome"], 0.0, "fail"),
    ],
)
def test_refine_policies(policy: str, answers: list[str], reward: float, status: str) -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(CAPITAL, reward=policy, max_attempts=3) as ep:
            steps = [await ep.submit(a) for a in answers]
            return steps, await ep.finish()

    steps, result = with_engine(body)
    assert [s.attempt for s in steps] == list(range(1, len(answers) + 1))
    assert (result.reward, result.status) == (pytest.approx(reward), status)
    assert result.details["episode"]["attempts"] == [s.reward for s in steps]


def test_best_policy_keeps_the_best_partial_attempt() -> None:
    good = TASKS["config-parser"]["solution"]["conf.py"]
    partial = good.replace("value.strip()", "value")  # 2 of 3 tests
    broken = "def parse(text):\n    return {}\n"

    async def body(engine: Engine, policy: str) -> Any:
        async with engine.episode(row("config-parser"), reward=policy) as ep:
            rewards = []
            for text in (partial, broken):
                await ep.write_file("conf.py", text)
                rewards.append((await ep.submit()).reward)
            return rewards, await ep.finish()

    async def both(engine: Engine) -> Any:
        return await asyncio.gather(body(engine, "best"), body(engine, "last"))

    (rewards, best), (_, last) = with_engine(both)
    assert rewards == [pytest.approx(2 / 3), 0.0]
    assert best.reward == pytest.approx(2 / 3) and last.reward == 0.0


def test_resubmitting_the_same_answer_costs_nothing() -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(CAPITAL, max_attempts=2) as ep:
            first = await ep.submit("London")
            again = await ep.submit("London")
            last = await ep.submit("Paris")
            return first, again, last

    first, again, last = with_engine(body)
    assert (first.attempt, first.cached) == (1, False)
    assert (again.attempt, again.cached, again.reward) == (1, True, 0.0)
    assert (last.attempt, last.reward, last.done) == (2, 1.0, True)


def test_attempts_run_out() -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(CAPITAL, max_attempts=2) as ep:
            steps = [await ep.submit(a) for a in ("London", "Rome", "Paris")]
            return steps, await ep.finish()

    steps, result = with_engine(body)
    assert [s.done for s in steps] == [False, True, True]
    assert steps[2].attempt == 2 and "over" in steps[2].feedback
    assert result.reward == 0.0


@pytest.mark.parametrize("policy", ["public", "none", "full"])
def test_feedback_policy_on_a_reference(policy: str) -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(CAPITAL, feedback=policy) as ep:
            return await ep.submit("London")

    step = with_engine(body)
    assert step.feedback.startswith("Score 0.000 (fail)")
    assert ("Paris" in step.feedback) is (policy == "full")
    if policy == "none":
        assert "\n" not in step.feedback


def _hidden_strings(task: dict[str, Any]) -> list[str]:
    """What the agent must never read: hidden test names, paths, literals, io outputs."""
    spec = task["task"]["spec"]
    out: list[str] = []
    for path, source in spec.get("tests", {}).items():
        out.append(path)
        out += re.findall(r"def (test\w+)", source)
        out += [s for s in re.findall(r"'([^']{3,})'", source)]
    for check in spec.get("io", []):
        out += [check["name"], check["stdout"].strip()]
    return [s for s in out if s]


def test_public_feedback_never_quotes_hidden_tests() -> None:
    """Regression scan: a wrong attempt on every corpus task, feedback checked for every
    hidden name, path, literal and expected output (under ``full`` they do show)."""

    async def attempt(engine: Engine, task_id: str, policy: str) -> str:
        async with engine.episode(row(task_id), feedback=policy) as ep:
            return (await ep.submit()).feedback

    async def body(engine: Engine) -> Any:
        ids = sorted(TASKS)
        public = await asyncio.gather(*(attempt(engine, t, "public") for t in ids))
        full = await asyncio.gather(*(attempt(engine, t, "full") for t in ids))
        return dict(zip(ids, public, strict=True)), dict(zip(ids, full, strict=True))

    public, full = with_engine(body, concurrency=4)
    leaked_in_full = 0
    for task_id, feedback in public.items():
        hidden = _hidden_strings(TASKS[task_id])
        assert hidden
        assert not [h for h in hidden if h in feedback], (task_id, feedback)
        leaked_in_full += any(h in full[task_id] for h in hidden)
    assert leaked_in_full >= len(TASKS) // 2  # the scan can see a leak when there is one


def test_dead_sandbox_is_an_abstain() -> None:
    async def body(engine: Engine) -> Any:
        async with engine.episode(row("bugfix-calc")) as ep:
            await ep.write_file("calc.py", TASKS["bugfix-calc"]["solution"]["calc.py"])
            worker = ep._sandbox._worker  # type: ignore[union-attr]
            os.killpg(worker.process.pid, signal.SIGKILL)  # the runner dies under the episode
            await asyncio.sleep(0.2)
            step = await ep.submit()
            return step, await ep.finish()

    step, result = with_engine(body)
    assert step.reward is None and step.status == "error"
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "infra"


def test_sync_twin() -> None:
    with SyncEpisode(row("bugfix-calc"), engine=EngineSettings(sandbox="local")) as ep:
        ep.write_file("calc.py", TASKS["bugfix-calc"]["solution"]["calc.py"])
        assert ep.run(["python3", "-c", "import calc; print(calc.add(2, 3))"]).text() == "5\n"
        step = ep.submit()
        result = ep.finish()
    assert step.status == "pass" and result.reward == 1.0

    async def inside_a_loop() -> None:
        with pytest.raises(RuntimeError, match="running event loop"):
            SyncEpisode(CAPITAL, engine=EngineSettings(sandbox="local")).__enter__()

    asyncio.run(inside_a_loop())


def test_settings_are_typed() -> None:
    assert EpisodeSettings().feedback == "public"
    with pytest.raises(ValueError):
        EpisodeSettings(reward="sometimes")


def test_a_large_honest_tree_is_submitted_whole() -> None:
    """The snapshot is not cut at the session's 1 MiB output cap (a 3 MiB data file)."""

    async def body(engine: Engine) -> Any:
        async with engine.episode(row("bugfix-calc")) as ep:
            await ep.write_file("calc.py", TASKS["bugfix-calc"]["solution"]["calc.py"])
            await ep.write_file("data.txt", "x" * (3 << 20))
            return await ep.submit()

    step = with_engine(body)
    assert (step.status, step.reward) == ("pass", 1.0), step.feedback
