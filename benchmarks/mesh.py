"""Benchmark: ``mesh.constraints`` vs the same checks written directly with trimesh.

A ~1.3M-face subdivided icosphere (binary STL) is checked against a constraint suite: the
gate (loads, finite, watertight, consistently wound, positive volume), extents, volume,
bodies, genus and 1,000-point containment (inside/outside lists). Some constraints are
deliberately violated so that both sides must agree on pass *and* fail verdicts.

* ``verifiers``: ``verifiers.Engine`` (sandbox none, one worker process, so the JSON hop
  and the worker's imports are included; ``cold`` is the first call, ``warm`` a repeat).
* ``plain``: what a newcomer writes (``trimesh.load``, ``is_volume``, ``extents``,
  ``volume``, ``body_count``, ``euler_number``, ``signed_distance`` for containment), run
  in a child process in the same run so its peak memory is measured on its own.

Prints one JSON line. Usage::

    /work/venv/bin/python benchmarks/mesh.py [--subdivisions 8] [--points 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PLAIN = r"""
import json, sys, time
import numpy as np
import trimesh

path = sys.argv[1]
with open(sys.argv[2]) as fh:
    cfg = json.load(fh)
chunk = int(sys.argv[3])
t0 = time.perf_counter()
m = trimesh.load(path)
verdicts = {"gate": bool(m.is_volume and np.isfinite(m.vertices).all() and len(m.faces) > 0)}
tol = np.maximum(cfg["extents"]["abs_tol"], cfg["extents"]["rel_tol"] * np.abs(cfg["extents"]["target"]))
verdicts["extents"] = bool(np.all(np.abs(m.extents - cfg["extents"]["target"]) <= tol))
v = cfg["volume"]
verdicts["volume"] = bool(abs(m.volume - v["target"]) <= v["rel_tol"] * abs(v["target"]))
verdicts["bodies"] = bool(m.body_count == cfg["bodies"])
verdicts["genus"] = bool((2 * m.body_count - m.euler_number) / 2 == cfg["genus"])
t1 = time.perf_counter()
pts = np.array(cfg["inside"] + cfg["outside"])
# > 0 inside; in chunks only so that its memory stays within a shared machine (one call on
# all 1,000 points went past 13 GB here); the per-point work is the same.
sd = np.concatenate([trimesh.proximity.signed_distance(m, pts[i : i + chunk]) for i in range(0, len(pts), chunk)])
n_in = len(cfg["inside"])
verdicts["inside"] = bool(np.all(sd[:n_in] > 0))
verdicts["outside"] = bool(np.all(sd[n_in:] < 0))
t2 = time.perf_counter()
import resource
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"verdicts": verdicts, "properties_s": t1 - t0, "containment_s": t2 - t1, "total_s": t2 - t0, "peak_rss_mb": rss}))
"""


def make_mesh(path: Path, subdivisions: int) -> int:
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=subdivisions, radius=10.0)
    sphere.export(str(path))  # binary STL
    return len(sphere.faces)


def constraints(points: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    # Inside the sphere (r < 9.5) and outside (10.5 < r < 14), away from the faceted surface.
    direction = rng.normal(size=(points, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    radius = np.concatenate(
        [rng.uniform(0, 9.5, points // 2), rng.uniform(10.5, 14.0, points - points // 2)]
    )
    pts = direction * radius[:, None]
    inside = pts[: points // 2].tolist()
    outside = pts[points // 2 :].tolist()
    # Violations on purpose: volume target 5% high, genus 1 instead of 0, and ten outside
    # points in the inside list.
    return {
        "extents": {"target": [20.0, 20.0, 20.0], "abs_tol": 0.1, "rel_tol": 0.001},
        "volume": {"target": 4 / 3 * 3.141592653589793 * 1000 * 1.05, "rel_tol": 0.01},
        "bodies": 1,
        "genus": 1,
        "inside": inside[:-10] + outside[:10],
        "outside": outside[10:],
    }


def _cpu() -> float:
    """CPU seconds of this process plus its reaped children (worker processes, the peer)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def _score(path: Path, cons: dict[str, Any], calls: int) -> tuple[list[Any], list[float]]:
    from verifiers import Engine, EngineSettings

    item = {
        "id": "ico",
        "completion": "",
        "task": {
            "verifier": "mesh.constraints",
            "spec": {"constraints": cons, "memory_mb": 6144, "timeout_s": 600},
        },
        "artifacts": {"mesh": {"path": path.name}},
    }
    engine = Engine(
        EngineSettings(sandbox="none", workers=1, timeout_s=900, cache=False), base_dir=path.parent
    )
    results, walls = [], []
    try:
        for _ in range(calls):
            t0 = time.perf_counter()
            (result,) = await engine.score([item])
            walls.append(time.perf_counter() - t0)
            results.append(result)
    finally:
        await engine.aclose()
    return results, walls


def run_verifiers(path: Path, cons: dict[str, Any]) -> dict[str, Any]:
    """Cold (fresh worker: imports included) and warm (second call on the same engine)."""
    c0 = _cpu()
    (cold,), (cold_s,) = asyncio.run(_score(path, cons, 1))
    c1 = _cpu()
    (_, warm), (_, warm_s) = asyncio.run(_score(path, cons, 2))
    c2 = _cpu()
    if cold.status == "error":
        raise SystemExit(f"verifier error: {cold.error}")
    verdicts = {"gate": bool(cold.details["gate"]["passed"])}
    verdicts.update({c["name"]: bool(c["passed"]) for c in cold.details["checks"]})
    assert warm.components == cold.components
    cpu_cold = c1 - c0
    return {
        "verdicts": verdicts,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "cpu_cold_s": cpu_cold,
        "cpu_warm_s": (c2 - c1) - cpu_cold,
    }


def run_plain(path: Path, cons: dict[str, Any], chunk: int) -> tuple[dict[str, Any], float]:
    cfg = path.with_suffix(".json")
    cfg.write_text(json.dumps(cons))
    c0 = _cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN, str(path), str(cfg), str(chunk)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    cpu = _cpu() - c0
    if proc.returncode != 0:
        raise SystemExit(f"plain script failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["cpu_s"] = cpu
    return out, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subdivisions", type=int, default=8)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100, help="signed_distance points per call")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-mesh-") as tmp:
        path = Path(tmp) / "icosphere.stl"
        faces = make_mesh(path, args.subdivisions)
        cons = constraints(args.points)
        v = run_verifiers(path, cons)
        worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(json.dumps({k: val for k, val in v.items() if k != "verdicts"}), file=sys.stderr)
        plain, plain_wall = run_plain(path, cons, args.chunk)
        ours = v["verdicts"]
        out = {
            "benchmark": "mesh",
            "faces": faces,
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "points": args.points,
            "plain_chunk": args.chunk,
            "verifiers_cold_s": round(v["cold_s"], 2),
            "verifiers_warm_s": round(v["warm_s"], 2),
            "verifiers_cpu_cold_s": round(v["cpu_cold_s"], 2),
            "verifiers_cpu_warm_s": round(v["cpu_warm_s"], 2),
            "plain_cpu_s": round(plain["cpu_s"], 2),
            "ratio_cpu_cold": round(v["cpu_cold_s"] / plain["cpu_s"], 3),
            "ratio_cpu_warm": round(v["cpu_warm_s"] / plain["cpu_s"], 3),
            "plain_total_s": round(plain["total_s"], 2),
            "plain_properties_s": round(plain["properties_s"], 2),
            "plain_signed_distance_s": round(plain["containment_s"], 2),
            "plain_wall_s": round(plain_wall, 2),
            "plain_peak_rss_mb": round(plain["peak_rss_mb"]),
            "verifiers_worker_peak_rss_mb": round(worker_rss),
            "ratio_cold": round(v["cold_s"] / plain["total_s"], 3),
            "ratio_warm": round(v["warm_s"] / plain["total_s"], 3),
            "verdicts_identical": ours == plain["verdicts"],
            "verdicts": ours,
            "plain_verdicts": plain["verdicts"],
        }
    print(json.dumps(out))
    return 0 if out["verdicts_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
