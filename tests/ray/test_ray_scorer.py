"""``verifiers.ray.RayScorer`` and ``verifiers score --ray`` on a real two-node Ray cluster
(tests/ray/conftest.py; one module, so the cluster is started once and ended before other
folders' tests call ``ray.init`` themselves).

A mixed file (answers, code.tests in the local bubblewrap sandbox, finance) scored through
Ray must give what ``verifiers score`` gives locally, line for line; a killed actor's items
are retried elsewhere (never lost, never duplicated, never a score); the named detached
limit actor bounds items in verification across actors.
"""

from __future__ import annotations

import json
import os
import signal
import threading
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
    ray_cluster: Any, tmp_path: Path
) -> None:
    from verifiers.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(
            (EXAMPLES / n).read_text(encoding="utf-8") for n in ("code.jsonl", "quickstart.jsonl")
        ),
        encoding="utf-8",
    )
    common = ["score", str(src), "-q", "--no-cache", "--sandbox", "local"]
    assert main([*common, "-o", str(tmp_path / "local.jsonl")]) == 0
    summary = tmp_path / "summary.json"
    ray_out = tmp_path / "ray.jsonl"
    args = [*common, "-o", str(ray_out), "--ray", ray_cluster.address]
    assert main([*args, "--summary-json", str(summary)]) == 0
    assert _file_rows(ray_out) == _file_rows(tmp_path / "local.jsonl")
    assert json.loads(summary.read_text())  # the summary is written as without Ray
    # --resume through Ray: nothing left to score, the file is unchanged
    before = ray_out.read_text(encoding="utf-8")
    assert main([*args, "--resume"]) == 0
    assert ray_out.read_text(encoding="utf-8") == before


@pytest.fixture(scope="module")
def scorer(ray_cluster: Any) -> Iterator[RayScorer]:
    with RayScorer(settings=SETTINGS, base_dir=EXAMPLES, cpus_per_actor=0.5) as s:
        yield s


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


def test_killed_actor_items_are_retried_never_lost_or_scored(ray_cluster: Any) -> None:
    """SIGKILL one actor's process (by PID) mid-run: every line still gets exactly one
    result, none is an error or a made-up score, and the kill shows as retries."""
    code = [r for r in _mixed() if r["task"].get("verifier", "") == "code.tests"]
    rows = [{**code[i % len(code)], "id": f"k{i}"} for i in range(40)]
    with RayScorer(settings=SETTINGS, cpus_per_actor=0.5, max_in_flight=4) as fresh:
        expected = {r.id: _verdict(r)[1:] for r in fresh.score(rows[: len(code)])}
        from collections import Counter

        from verifiers.ray import _task_key

        routed = Counter(fresh._route(_task_key(r)).index for r in rows)  # type: ignore[union-attr]
        victim = fresh.actors[routed.most_common(1)[0][0]]  # the actor with work to lose
        seen: list[Any] = []
        killed = threading.Event()

        async def run() -> None:
            async for result in fresh.stream(rows):
                seen.append(result)
                if len(seen) == 3 and not killed.is_set():
                    os.kill(victim["pid"], signal.SIGKILL)
                    killed.set()

        import asyncio

        asyncio.run(run())
        assert killed.is_set()
        assert [r.id for r in seen] == [r["id"] for r in rows]  # each once, in order
        assert all(r.status != "error" for r in seen), [r.error for r in seen if r.error]
        for i, r in enumerate(seen):
            assert _verdict(r)[1:] == expected[f"k{i % len(code)}"]
        assert fresh.stats.dead_actors == 1
        assert fresh.stats.retried >= 1
        assert [a["alive"] for a in fresh.actors].count(False) == 1


def test_no_live_actor_is_infra_error_not_score(ray_cluster: Any) -> None:
    rows = [r for r in _mixed() if r["task"].get("verifier", "").startswith("answer.")][:3]
    with RayScorer(num_actors=1, settings=SETTINGS, cpus_per_actor=0.5) as one:
        os.kill(one.actors[0]["pid"], signal.SIGKILL)
        results = one.score(rows)
    assert [r.status for r in results] == ["error"] * 3
    assert all(r.reward is None and r.error and r.error.kind == "infra" for r in results)
    assert [r.id for r in results] == [r["id"] for r in rows]
    assert results[0].error is not None and results[0].error.attempts >= 1


def test_cluster_wide_limit_is_one_named_detached_actor(ray_cluster: Any) -> None:
    import ray

    code = [r for r in _mixed() if r["task"].get("verifier", "") == "code.tests"]
    rows = [{**code[i % len(code)], "id": f"l{i}"} for i in range(8)]
    name = "verifiers-test-limit"
    with RayScorer(
        settings=SETTINGS, cpus_per_actor=0.5, cluster_concurrency=1, limit_name=name
    ) as limited:
        limit = ray.get_actor(name, namespace="verifiers")
        results = limited.score(rows)
        state = ray.get(limit.state.remote())
    assert all(r.status != "error" for r in results)
    assert state["size"] == 1 and state["held"] == 0 and state["peak"] == 1
    ray.kill(limit)
