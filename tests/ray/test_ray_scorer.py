"""``verifiers.ray.RayScorer`` and ``verifiers score --ray`` on a real two-node Ray cluster
(tests/ray/conftest.py; one module, so the cluster is started once and ended before other
folders' tests call ``ray.init`` themselves).

A mixed file (answers, code.tests in the local bubblewrap sandbox, finance) scored through
Ray must give what ``verifiers score`` gives locally, line for line (also through veRL's own
reward loop with ``reward_kwargs.ray``); a killed actor's or node's items are retried
elsewhere (never lost, never duplicated, never a score); items no live actor can take in
time are ``error/infra``; the named detached limit actor bounds items in verification
across actors, and a holder that dies with its driver gives its lease back within one TTL.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verifiers import EngineSettings
from verifiers.ray import RayScorer

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "datasets" / "examples"
SETTINGS = EngineSettings(sandbox="local", cache=False, concurrency=2, workers=1, timeout_s=60)


def _mixed_text() -> str:
    """The three example files as one (broken lines included: they pass through as
    ``bad_input`` results on both paths)."""
    names = ("quickstart.jsonl", "code.jsonl", "finance.jsonl")
    return "".join((EXAMPLES / n).read_text(encoding="utf-8") for n in names)


def _mixed() -> list[dict[str, Any]]:
    """The rows of the mixed file that parse, as dicts."""
    rows: list[dict[str, Any]] = []
    for line in _mixed_text().split("\n"):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("task"), dict):
            rows.append(row)
    return rows


def _verdict(result: Any) -> tuple[Any, ...]:
    row = result if isinstance(result, dict) else result.model_dump(mode="json")
    kind = row["error"]["kind"] if row.get("error") else None
    return (row["id"], row["status"], row["reward"], row["components"], kind)


@pytest.fixture(scope="module")
def local_verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, ...]]:
    """What ``verifiers score`` gives the mixed file on this machine, without Ray."""
    from verifiers.cli import main

    tmp = tmp_path_factory.mktemp("local")
    src = tmp / "mixed.jsonl"
    src.write_text(_mixed_text(), encoding="utf-8")
    out = tmp / "out.jsonl"
    assert main(["score", str(src), "-o", str(out), "-q", "--no-cache", "--sandbox", "local"]) == 0
    return [_verdict(json.loads(x)) for x in out.read_text(encoding="utf-8").split("\n") if x]


def _file_rows(path: Path) -> list[tuple[Any, ...]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x]
    return [
        (r["id"], r["status"], r["reward"], r["components"], (r["error"] or {}).get("kind"))
        for r in rows
    ]


def test_score_with_ray_flag_matches_local(  # first: before `scorer` holds CPUs
    ray_cluster: Any, local_verdicts: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    from verifiers.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text(_mixed_text(), encoding="utf-8")
    common = ["score", str(src), "-q", "--no-cache", "--sandbox", "local"]
    summary = tmp_path / "summary.json"
    ray_out = tmp_path / "ray.jsonl"
    args = [*common, "-o", str(ray_out), "--ray", ray_cluster.address]
    assert main([*args, "--summary-json", str(summary)]) == 0
    assert _file_rows(ray_out) == local_verdicts
    doc = json.loads(summary.read_text())
    assert doc["results"] == len(local_verdicts)  # the summary is written as without Ray
    placed = doc["ray"]  # and says where the items ran
    assert len(placed["by_node"]) == 2 and sum(placed["by_node"].values()) == placed["items"]
    assert placed["attempts"] == {"1": placed["items"]} and placed["failed"] == 0
    # --resume through Ray: nothing left to score, the file is unchanged
    before = ray_out.read_text(encoding="utf-8")
    assert main([*args, "--resume"]) == 0
    assert ray_out.read_text(encoding="utf-8") == before


LIMIT = "verifiers-test-limit"


@pytest.fixture(scope="module")
def scorer(ray_cluster: Any) -> Iterator[RayScorer]:
    """Two actors (one per node) sharing one cluster-wide lease (the named limit actor)."""
    import ray

    with RayScorer(
        settings=SETTINGS,
        base_dir=EXAMPLES,
        cpus_per_actor=0.5,
        cluster_concurrency=1,
        limit_name=LIMIT,
    ) as s:
        yield s
    ray.kill(ray.get_actor(LIMIT, namespace="verifiers"))


def test_mixed_file_matches_local_scoring(
    scorer: RayScorer, local_verdicts: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    assert len(scorer.actors) == 2  # one per node by default
    assert len({a["node"] for a in scorer.actors}) == 2  # SPREAD: one on each node
    from verifiers.io import iter_records

    src = tmp_path / "mixed.jsonl"
    src.write_text(_mixed_text(), encoding="utf-8")
    results = scorer.score(record.item for record in iter_records(src))
    assert [_verdict(r) for r in results] == local_verdicts
    assert scorer.stats.retried == 0 and scorer.stats.failed == 0
    assert len(scorer.stats.by_node) == 2  # both nodes scored
    assert sum(scorer.stats.by_node.values()) == scorer.stats.items
    # Metrics per actor, under the reward server's names: each actor counted what it scored.
    per_actor = scorer.metrics()
    for row in per_actor:
        counted = sum(r["value"] for r in row["verifiers_results_total"])
        assert counted == scorer.stats.by_actor[row["actor"]] > 0
        assert row["verifiers_items_in_flight"] == 0
        assert row["alive"] and row["node"] in scorer.stats.by_node
    statuses = {r["status"] for a in per_actor for r in a["verifiers_results_total"]}
    assert statuses == {v[1] for v in local_verdicts}
    text = scorer.metrics_text()
    for row in per_actor:
        assert f'verifiers_results_total{{actor="{row["actor"]}",node="{row["node"]}"' in text
    assert 'verifiers_errors_total{actor="' in text and 'kind="bad_input"' in text
    assert "verifiers_ray_retried_total 0" in text
    # One cluster-wide lease: the named detached limit actor never let two items run at once.
    import ray

    state = ray.get(ray.get_actor(LIMIT, namespace="verifiers").state.remote())
    assert state["size"] == 1 and state["held"] == 0 and state["peak"] == 1


def test_a_groups_rollouts_share_one_actor_and_repeat_in_order(scorer: RayScorer) -> None:
    """Routing by task hash: a GRPO group (same task, n completions) lands on one actor."""
    distinct: dict[str, dict[str, Any]] = {}
    for r in _mixed():
        if r["task"].get("verifier", "") == "code.tests":
            distinct.setdefault(json.dumps(r["task"], sort_keys=True), r)
    code = list(distinct.values())[:2]
    group = [
        {**code[i % 2], "id": f"g{i}", "completion": code[i % 2]["completion"]} for i in range(8)
    ]
    keys = {json.dumps(r["task"], sort_keys=True) for r in group}
    assert len(keys) == 2
    from verifiers.ray import _task_key

    routes = {json.dumps(r["task"], sort_keys=True): set() for r in group}
    for r in group:
        actor = scorer._route(_task_key(r))
        assert actor is not None
        routes[json.dumps(r["task"], sort_keys=True)].add(actor.index)
    assert all(len(v) == 1 for v in routes.values())
    results = scorer.score(group)
    assert [r.id for r in results] == [f"g{i}" for i in range(8)]  # input order
    assert [r.reward for r in results[:2]] * 4 == [r.reward for r in results]


def test_async_surface_and_refusal_inside_a_loop(scorer: RayScorer) -> None:
    import asyncio

    rows = [r for r in _mixed() if r["task"].get("verifier", "").startswith("answer.")][:5]

    async def main() -> list[Any]:
        with pytest.raises(RuntimeError, match="score_async"):
            scorer.score(rows)
        return [r async for r in scorer.stream(iter(rows))]

    streamed = asyncio.run(main())
    assert [r.id for r in streamed] == [r["id"] for r in rows]


def _slow_code(seconds: float, row_id: str) -> dict[str, Any]:
    """A code.tests item whose program sleeps ``seconds`` and then passes."""
    return {
        "id": row_id,
        "completion": f"```python\nimport time\ntime.sleep({seconds})\ndef add(a, b):\n"
        "    return a + b\n```",
        "task": {
            "verifier": "code.tests",
            "spec": {
                "tests": {
                    "kind": "assert",
                    "entry_point": "add",
                    "code": f"def check(f):\n    assert f(1, 2) == 3  # {row_id}\n",
                }
            },
        },
    }


def test_unplaceable_items_are_infra_error_not_score(ray_cluster: Any) -> None:
    """An item that gets no slot on a live actor within place_timeout_s, and every item
    once no actor is alive (its process SIGKILLed by PID), is error/infra with its
    attempts: an abstain, never a 0."""
    rows = [r for r in _mixed() if r["task"].get("verifier", "").startswith("answer.")][:3]
    with RayScorer(
        num_actors=1, settings=SETTINGS, cpus_per_actor=0.5, max_in_flight=1, place_timeout_s=1.0
    ) as one:
        # One slot: the slow item holds it for 5 s; items of a second, concurrent stream
        # cannot be placed within 1 s.
        import asyncio
        import time

        async def both() -> tuple[list[Any], list[Any]]:
            slow = asyncio.ensure_future(one.score_async([_slow_code(5, "slow")]))
            loop = asyncio.get_running_loop()
            deadline = time.monotonic() + 60
            while (await loop.run_in_executor(None, one.metrics))[0][
                "verifiers_items_in_flight"
            ] != 1:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            quick = await one.score_async(rows)
            return await slow, quick

        [slow], waited = asyncio.run(both())
        assert slow.status == "pass"
        for r in waited:
            assert r.status == "error" and r.reward is None and r.error is not None
            assert r.error.kind == "infra" and "place_timeout_s" in r.error.message
        assert one.stats.failed == 3
        os.kill(one.actors[0]["pid"], signal.SIGKILL)  # the actor's process (by PID)
        results = one.score(rows)
    assert [r.status for r in results] == ["error"] * 3
    assert all(r.reward is None and r.error and r.error.kind == "infra" for r in results)
    assert [r.id for r in results] == [r["id"] for r in rows]
    assert results[0].error is not None and results[0].error.attempts >= 1


def test_a_dead_holders_lease_expires_when_its_driver_died_too(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """The limit actor is detached: it outlives every driver. A driver (its own process)
    whose actor holds the only lease is SIGKILLed together with that actor: nobody is left
    to return the lease, so it must expire within one TTL, and not before while the holder
    lives (its heartbeat renews it)."""
    import subprocess
    import sys
    import time

    import ray

    name = "verifiers-test-ttl"
    script = tmp_path / "driver.py"
    script.write_text(
        "import json, sys\n"
        "import ray\n"
        "from verifiers import EngineSettings\n"
        "from verifiers.ray import RayScorer\n"
        f"ray.init(address={ray_cluster.address!r}, log_to_driver=False)\n"
        f"s = RayScorer(num_actors=1, settings=EngineSettings(**{SETTINGS.model_dump()!r}),\n"
        f"    cpus_per_actor=0.25, cluster_concurrency=1, limit_name={name!r}, lease_ttl_s=3.0)\n"
        "print(json.dumps(s.actors[0]), flush=True)\n"
        f"s.score([{_slow_code(25, 'held')!r}])\n",
        encoding="utf-8",
    )
    driver = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=ray_cluster.env
    )
    try:
        assert driver.stdout is not None
        holder = json.loads(driver.stdout.readline())
        limit = ray.get_actor(name, namespace="verifiers")
        deadline = time.monotonic() + 60
        while ray.get(limit.state.remote())["held"] != 1:
            assert time.monotonic() < deadline, "the holder never took its lease"
            time.sleep(0.2)
        time.sleep(4.0)  # longer than the TTL: the live holder's heartbeat keeps its lease
        assert ray.get(limit.state.remote())["held"] == 1
        driver.kill()
        driver.wait(timeout=30)
        os.kill(holder["pid"], signal.SIGKILL)
        killed = time.monotonic()
        while (state := ray.get(limit.state.remote()))["held"] != 0:
            assert time.monotonic() - killed < 20, state
            time.sleep(0.2)
        assert state["expired"] == 1
    finally:
        with driver:  # closes its stdout pipe
            if driver.poll() is None:
                driver.kill()
        ray.kill(ray.get_actor(name, namespace="verifiers"))


def test_verl_manager_scores_through_a_ray_scorer(
    ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """veRL's own reward loop (RewardLoopManager -> a RewardLoopWorker actor -> our manager
    loaded by its importlib hook) with ``reward_kwargs.ray``: the worker scores through a
    RayScorer whose actors sit on both nodes; judged samples get what the local engine
    gives, the unjudged one its group's judged mean (zero GRPO advantage)."""
    import ray
    from rl_helpers import ADD_RESPONSES, ADD_TASK, ADD_TESTS, BROKEN_TASK
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl_helpers import OUR_MANAGER, save_tokenizer, verl_batch, verl_config

    from verifiers import Engine

    task = ADD_TASK
    other = {**task, "spec": {"tests": {**task["spec"]["tests"], "code": ADD_TESTS + "# 2\n"}}}
    broken = BROKEN_TASK
    responses = [ADD_RESPONSES[i] for i in (0, 1, 5, 4)] * 2
    tasks = [task] * 4 + [other] * 3 + [broken]
    uids = ["g1"] * 4 + ["g2"] * 4
    engine = {
        k: v
        for k, v in SETTINGS.model_dump().items()
        if k in ("sandbox", "timeout_s", "concurrency", "cache")
    }
    tok = save_tokenizer(tmp_path_factory.mktemp("tok"))
    config = verl_config(
        tok,
        OUR_MANAGER,
        reward_kwargs={"components": ["tests_passed"], **engine, "ray": {"cpus_per_actor": 0.25}},
    )
    manager = RewardLoopManager(config)
    try:
        batch = verl_batch(tok, responses, tasks, uids)
        output = manager.compute_rm_score(batch)
        scores = [float(x) for x in output.batch["rm_scores"].sum(-1)]
        actors = [
            a
            for a in ray._private.state.actors().values()
            if a["ActorClassName"].endswith("_EngineActor") and a["State"] == "ALIVE"
        ]
        assert len({a["Address"]["NodeID"] for a in actors}) == 2  # one engine per node
    finally:
        for worker in manager.reward_loop_workers:
            ray.kill(worker)  # its RayScorer's actors go with their owner

    async def local() -> list[Any]:
        async with Engine(SETTINGS) as e:
            rows = [
                {"id": str(i), "completion": r, "task": t}
                for i, (r, t) in enumerate(zip(responses, tasks, strict=True))
            ]
            return await e.score(rows)

    import asyncio

    expected = [r.reward for r in asyncio.run(local())]
    assert expected[7] is None  # the broken task is an error, not a score
    assert scores[:7] == expected[:7]
    assert scores[7] == pytest.approx(sum(expected[4:7]) / 3)  # its group's judged mean
    prompt_len = batch.batch["prompts"].size(1)
    adv, _ = compute_grpo_outcome_advantage(
        token_level_rewards=output.batch["rm_scores"],
        response_mask=batch.batch["attention_mask"][:, prompt_len:],
        index=batch.non_tensor_batch["uid"],
    )
    assert abs(float(adv.sum(-1)[7])) < 1e-6
    assert output.non_tensor_batch["verifiers_valid"].tolist() == [1.0] * 7 + [0.0]


def _salted(base: dict[str, Any], row_id: str, salt: int) -> dict[str, Any]:
    """``base`` as a new task where its tests are code (a comment added): routed afresh."""
    tests = dict(base["task"]["spec"]["tests"])
    if isinstance(tests.get("code"), str):
        tests["code"] += f"\n# salt {salt}\n"
    spec = {**base["task"]["spec"], "tests": tests}
    return {**base, "id": row_id, "task": {**base["task"], "spec": spec}}


def test_raylet_kill_mid_run_is_retried_never_lost_or_scored(
    ray_cluster: Any, local_verdicts: list[tuple[Any, ...]]
) -> None:
    """Last in the module (it leaves a dead node behind): a third, disposable node joins;
    its raylet is SIGKILLed (by PID) while its actor has items in flight. Every line still
    gets exactly one result, in order, with the verdict the local engine gives; the kill
    shows as retries (items that took 2 attempts), never as scores or errors."""
    import asyncio
    import time

    from verifiers.ray import _task_key, wait_for_nodes

    victim_dir = ray_cluster.add_node('{"victim": 1}')
    wait_for_nodes(3, timeout_s=120)
    code = [r for r in _mixed() if r["task"].get("verifier", "") == "code.tests"]
    expected = {v[0]: v[1:] for v in local_verdicts}
    with RayScorer(settings=SETTINGS, cpus_per_actor=0.5, max_in_flight=2) as three:
        assert len({a["node"] for a in three.actors}) == 3
        import ray

        victim_node = next(
            n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("victim")
        )
        victim = next(a for a in three._actors if a.node == victim_node)
        # Ten cheap rows anywhere, and six 4-second rows on the victim (after the first two
        # cheap ones): the victim still has work when Ray declares its node dead (<= ~9 s;
        # until then its orphaned actor process keeps answering, with real verdicts).
        bases = [code[i % len(code)] for i in range(10)]
        cheap = [_salted(base, f"n{i}", i) for i, base in enumerate(bases)]
        slow: list[dict[str, Any]] = []
        j = 0
        while len(slow) < 6:
            row = _slow_code(4, f"s{j}")
            if three._route(_task_key(row)) is victim:
                slow.append(row)
            j += 1
        rows = cheap[:2] + [x for pair in zip(slow, cheap[2:8], strict=True) for x in pair]
        rows += cheap[8:]
        want = {r["id"]: expected[base["id"]] for r, base in zip(cheap, bases, strict=True)}
        want.update({r["id"]: expected["code-assert-pass"] for r in slow})  # a passing assert
        seen: list[Any] = []
        killed_at: list[float] = []

        async def run() -> None:
            async for result in three.stream(rows):
                seen.append(result)
                if len(seen) == 2 and not killed_at:
                    os.kill(ray_cluster.raylet_pid(victim_dir), signal.SIGKILL)
                    killed_at.append(time.monotonic())

        asyncio.run(run())
        assert killed_at
        assert [r.id for r in seen] == [r["id"] for r in rows]  # each once, in order
        assert all(r.status != "error" for r in seen), [r.error for r in seen if r.error]
        for r in seen:
            assert _verdict(r)[1:] == want[r.id], r.id
        assert three.stats.dead_actors == 1 and victim.dead
        assert three.stats.retried >= 1 and three.stats.attempts[2] >= 1
        assert sum(three.stats.attempts.values()) == len(rows)
