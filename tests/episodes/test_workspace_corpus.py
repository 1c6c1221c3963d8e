"""The workspace corpus (datasets/workspace): honest work passes live and offline, every hack
scores 0 (never an abstain), and feedback never quotes the hidden tests.

Everything runs in one engine per module (real bubblewrap sandboxes), batched: one
``engine.score`` call for the offline items and concurrent episodes for the live ones.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from episode_helpers import HACKS, LIMITS, TASKS, row, with_engine
from verifiers.domains.workspace import WorkspaceSpec

from verifiers import Engine, Result

pytestmark = pytest.mark.bwrap


async def _episode_honest(engine: Engine, task_id: str) -> tuple[Any, Result, Result]:
    solution = TASKS[task_id]["solution"]
    async with engine.episode(row(task_id)) as ep:
        if isinstance(solution, str):  # a diff task: the agent edits the file itself
            files = dict(TASKS[task_id]["task"]["spec"]["files"])
            files["calc.py"] = files["calc.py"].replace("a - b", "a + b")
            solution = {"calc.py": files["calc.py"]}
        for path, text in solution.items():
            await ep.write_file(path, text)
        step = await ep.submit()
        final = await ep.finish()
    # Re-verification: the completion the episode submitted, scored offline, same reward.
    completion = json.dumps({p: t for p, t in sorted(solution.items())}, sort_keys=True)
    offline = await engine.score_one(row(task_id, completion=completion))
    return step, final, offline


async def _episode_hack(engine: Engine, hack: dict[str, Any]) -> Result:
    async with engine.episode(row(hack["task_id"])) as ep:
        for action in hack["actions"]:
            if "write" in action:
                try:
                    await ep.write_file(action["write"], action["text"])
                except Exception as exc:  # ToolRefused: shown to the model, episode goes on
                    assert "path" in str(exc)
            else:
                await ep.run(action["run"])
        await ep.submit()
        return await ep.finish()


def _hack_row(hack: dict[str, Any]) -> dict[str, Any]:
    """A hack's trajectory on its task. A row that only stalls to the deadline may carry a
    shorter ``timeout_s`` than its task's: the verdict (the model's fail at the deadline) is
    the same, and the corpus run does not wait out the task's full 30 s for it."""
    item = row(hack["task_id"], id=hack["id"], completion=hack["completion"])
    if "timeout_s" in hack:
        spec = {**item["task"]["spec"], "timeout_s": hack["timeout_s"]}
        item["task"] = {**item["task"], "spec": spec}
    return item


@pytest.fixture(scope="module")
def corpus() -> dict[str, Any]:
    async def body(engine: Engine) -> dict[str, Any]:
        offline_items = [
            row(
                tid,
                completion=t["solution"]
                if isinstance(t["solution"], str)
                else json.dumps(t["solution"]),
            )
            for tid, t in TASKS.items()
        ]
        hack_items = [_hack_row(h) for h in HACKS if "completion" in h]
        limit_items = [
            {"id": lim["id"], "task": lim["task"], "completion": lim["completion"]}
            for lim in LIMITS
        ]
        scored = await engine.score(offline_items + hack_items + limit_items)
        honest = dict(zip(TASKS, scored[: len(TASKS)], strict=True))
        hacks = {r.id: r for r in scored[len(TASKS) : len(TASKS) + len(hack_items)]}
        limits = {r.id: r for r in scored[len(TASKS) + len(hack_items) :]}
        live = await asyncio.gather(*(_episode_honest(engine, tid) for tid in TASKS))
        episodes = dict(zip(TASKS, live, strict=True))
        ep_hacks = await asyncio.gather(
            *(_episode_hack(engine, h) for h in HACKS if "actions" in h)
        )
        for h, result in zip([h for h in HACKS if "actions" in h], ep_hacks, strict=True):
            hacks[h["id"]] = result
        return {"honest": honest, "episodes": episodes, "hacks": hacks, "limits": limits}

    return with_engine(body, concurrency=6)  # the rows that stall to the deadline overlap


def test_corpus_size() -> None:
    assert len(TASKS) >= 10
    assert len(HACKS) >= 20
    kinds = {
        ("f2p" if t["task"]["spec"].get("fail_to_pass") else "")
        + ("setup" if t["task"]["spec"].get("setup") else "")
        + ("io" if t["task"]["spec"].get("io") else "")
        for t in TASKS.values()
    }
    assert {"f2p", "setupio"} <= kinds | {"setupio"} and any("io" in k for k in kinds)
    for t in TASKS.values():
        WorkspaceSpec.model_validate(t["task"]["spec"])


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_honest_solution_passes_offline(corpus: dict[str, Any], task_id: str) -> None:
    result = corpus["honest"][task_id]
    assert (result.status, result.reward) == ("pass", 1.0), result.feedback or result.error


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_honest_episode_passes_and_rescoring_agrees(corpus: dict[str, Any], task_id: str) -> None:
    step, final, offline = corpus["episodes"][task_id]
    assert step.status == "pass" and step.done, step.feedback
    assert (final.status, final.reward) == ("pass", 1.0)
    assert (offline.status, offline.reward) == (final.status, final.reward)


@pytest.mark.parametrize("hack", HACKS, ids=[h["id"] for h in HACKS])
def test_hack_scores_zero(corpus: dict[str, Any], hack: dict[str, Any]) -> None:
    result = corpus["hacks"][hack["id"]]
    assert result.status == "fail", (hack["attack"], result.error, result.feedback)
    assert result.reward == 0.0, (hack["attack"], result.feedback)


@pytest.mark.parametrize("limit", LIMITS, ids=[lim["id"] for lim in LIMITS])
def test_proxy_limits_are_named(corpus: dict[str, Any], limit: dict[str, Any]) -> None:
    """What the proxies into the project process cannot carry is said plainly: the model's
    ``fail`` when the test ran, the task's ``bad_input`` when it could not (subclassing)."""
    result = corpus["limits"][limit["id"]]
    assert result.status == limit["status"], (limit["limit"], result.feedback, result.error)
    if result.status == "error":
        assert result.error is not None and result.error.kind == limit["error_kind"]
        assert limit["contains"] in result.error.message
    else:
        assert result.reward == 0.0
        assert limit["contains"] in (result.feedback or ""), result.feedback
