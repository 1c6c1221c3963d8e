"""Ray scale-out overhead: ``RayScorer`` versus the local engine, in the same run.

The workload is ``code.tests`` (the examples' code rows, repeated with fresh ids and a
per-item salt in the test code so the cache never answers) in the local sandbox. Rows:

- ``engine``: ``Engine.score`` in this process (the baseline);
- ``ray`` with 1..``--max-actors`` actors on a Ray cluster (``--address``, default a local
  ``ray.init`` with this machine's CPUs): each actor hosts one warm engine with the same
  settings.

Each measurement is the median of ``--repeats`` timed rounds after one warm-up round (the
warm-up starts the actors' sandbox runners and worker processes). The engine and the 1-actor
scorer are both kept warm and timed in alternating rounds, so a machine whose load drifts
(this one is shared) weighs on both alike; that pair gives ``ratio_1_actor``. Reported: seconds,
items/s, the ratio to the engine, and the per-item cost the numbers imply (what one would
extrapolate to N nodes: with work spread evenly and per-node engines as fast as here,
throughput scales with nodes until the driver's per-item overhead, ``driver_ms_per_item``,
is the limit).

Run:  python benchmarks/ray.py [--items 48] [--repeats 3] [--max-actors 2] [--address auto]
Prints one JSON line per measurement, then a summary JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, this file's folder is sys.path[0], and this file is named ray.py: drop
# the folder so that ``import ray`` finds Ray, not this benchmark.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from verifiers import Engine, EngineSettings, Trajectory  # noqa: E402
from verifiers.io import read_trajectories  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _items(n: int, salt: str) -> list[dict[str, Any]]:
    rows = [  # the example file's valid lines (its broken ones come back as results)
        t.model_dump(mode="json", exclude_none=True)
        for t in read_trajectories(REPO / "datasets/examples/code.jsonl")
        if isinstance(t, Trajectory)
    ]
    out = []
    for i in range(n):
        row = json.loads(json.dumps(rows[i % len(rows)]))
        row["id"] = f"{salt}-{i}"
        tests = row["task"].get("spec", {}).get("tests", {})
        if isinstance(tests.get("code"), str):
            tests["code"] += f"\n# {salt}-{i}\n"  # a fresh task: no cache hit, no dedup
        out.append(row)
    return out


def _time(fn: Any, rounds: int, n: int) -> tuple[float, list[Any]]:
    fn(_items(n, "warm"))
    times = []
    last: list[Any] = []
    for r in range(rounds):
        batch = _items(n, f"r{r}-{time.monotonic_ns()}")
        t0 = time.perf_counter()
        last = fn(batch)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), last


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--items", type=int, default=48)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-actors", type=int, default=2)
    p.add_argument("--address", default=None, help="Ray cluster (default: a local ray.init)")
    p.add_argument("--concurrency", type=int, default=2, help="engine concurrency")
    p.add_argument("--sandbox", default="local")
    args = p.parse_args(argv)
    settings = EngineSettings(
        sandbox=args.sandbox, cache=False, concurrency=args.concurrency, workers=1, timeout_s=60
    )
    rows: list[dict[str, Any]] = []

    async def engine_round(items: list[dict[str, Any]], engine: Engine) -> list[Any]:
        return await engine.score(items)

    loop = asyncio.new_event_loop()
    engine = Engine(settings, base_dir=REPO / "datasets/examples")

    def run_engine(items: list[dict[str, Any]]) -> list[Any]:
        return loop.run_until_complete(engine_round(items, engine))

    import ray

    from verifiers.ray import RayScorer

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    try:
        with RayScorer(
            1,
            settings=settings,
            base_dir=REPO / "datasets/examples",
            cpus_per_actor=min(1.0, cpus),
            placement="DEFAULT",
        ) as one:
            run_engine(_items(args.items, "warm-e"))
            one.score(_items(args.items, "warm-r"))
            engine_times, ray_times = [], []
            for r in range(args.repeats):  # alternating rounds: same load for both
                batch = _items(args.items, f"e{r}-{time.monotonic_ns()}")
                t0 = time.perf_counter()
                results = run_engine(batch)
                engine_times.append(time.perf_counter() - t0)
                batch = _items(args.items, f"r{r}-{time.monotonic_ns()}")
                t0 = time.perf_counter()
                ray_results = one.score(batch)
                ray_times.append(time.perf_counter() - t0)
                assert [x.status for x in ray_results] == [x.status for x in results]
        loop.run_until_complete(engine.aclose())
        loop.close()
        base = statistics.median(engine_times)
        verdicts = [x.status for x in results]
        rows.append(
            {"path": "engine", "actors": 0, "seconds": base, "items_per_s": args.items / base}
        )
        print(json.dumps(rows[-1]), flush=True)
        for actors in range(1, args.max_actors + 1):
            if actors == 1:
                seconds = statistics.median(ray_times)
            else:
                with RayScorer(
                    actors,
                    settings=settings,
                    base_dir=REPO / "datasets/examples",
                    cpus_per_actor=min(1.0, cpus / actors),
                    placement="DEFAULT",
                ) as scorer:
                    seconds, results = _time(scorer.score, args.repeats, args.items)
                    assert [r.status for r in results] == verdicts, "Ray changed a verdict"
            rows.append(
                {
                    "path": "ray",
                    "actors": actors,
                    "seconds": seconds,
                    "items_per_s": args.items / seconds,
                    "ratio_to_engine": seconds / base,
                    "ms_per_item": 1000 * seconds / args.items,
                    "engine_ms_per_item": 1000 * base / args.items,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        # The driver's own cost per item: a trivially cheap verifier through one actor.
        cheap = [
            {
                "id": str(i),
                "completion": f"x {i}",
                "task": {"verifier": "answer.exact", "reference": "x"},
            }
            for i in range(400)
        ]
        with RayScorer(1, settings=settings, cpus_per_actor=min(1.0, cpus)) as scorer:
            scorer.score(cheap[:50])
            t0 = time.perf_counter()
            scorer.score(cheap)
            driver = (time.perf_counter() - t0) / len(cheap)
    finally:
        if not loop.is_closed():
            loop.run_until_complete(engine.aclose())
            loop.close()
        ray.shutdown()
    summary = {
        "summary": "ray",
        "items": args.items,
        "cpus": cpus,
        "engine_items_per_s": args.items / base,
        "ray": {str(r["actors"]): r["items_per_s"] for r in rows if r["path"] == "ray"},
        "ratio_1_actor": next(r["ratio_to_engine"] for r in rows if r.get("actors") == 1),
        "driver_ms_per_item": 1000 * driver,
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
