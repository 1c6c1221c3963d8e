"""Benchmark: cad.script's warm workers vs a cold CAD interpreter per check (same run).

``--checks`` small parametric parts (a plate with a hole of varying size) are verified

* **warm**: through ``cad.script`` on the shared sandbox stack (``ctx.sandbox("cadquery")``:
  a warm runner whose zygote imported CadQuery/OCP once; per check one untrusted script
  session and one fresh judge session, each a fork of the zygote; full checks on the host);
* **cold**: the same two programs (``_worker.py script`` then ``_worker.py judge``, same
  sessions, same files) run as ``python -I``: a fresh interpreter that imports CadQuery/OCP
  for every check, which is what a peer that shells out to a CAD script per sample pays.

Both use the same runtime, backend and runner pool, so the difference is the engine's start.
Prints one JSON line. Usage::

    python benchmarks/cad.py [--checks 12] [--backend local|docker] [--library cadquery]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from verifiers.domains.cad import CadScript, CadSpec
from verifiers.domains.cad._verifier import _WORKER
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Trajectory

SCRIPTS = {
    "cadquery": (
        "import cadquery as cq\n"
        "result = cq.Workplane('XY').box(40, 20, 5).faces('>Z').workplane().hole({d})\n"
    ),
    "build123d": (
        "from build123d import *\n"
        "with BuildPart() as p:\n"
        "    Box(40, 20, 5)\n"
        "    Cylinder({r}, 5, mode=Mode.SUBTRACT)\n"
        "result = p\n"
    ),
}


def _script(library: str, i: int) -> str:
    d = 4 + (i % 7) * 0.5
    return SCRIPTS[library].format(d=d, r=d / 2)


async def _warm(provider: Any, library: str, n: int) -> tuple[float, list[str]]:
    verifier = CadScript()
    spec = CadSpec.model_validate(
        {"library": library, "expect": {"holes": [{"diameter": 4, "min_count": 0}]}}
    )

    async def one(i: int) -> str:
        traj = Trajectory(
            completion=f"```python\n{_script(library, i)}```", task={"verifier": "cad.script"}
        )
        ctx = VerifierContext(
            deadline=time.monotonic() + 600, base_dir=Path("."), sandboxes=provider
        )
        return (await verifier.verify(traj, spec, ctx)).status

    await one(-1)  # start the runner and its zygote (not timed)
    started = time.perf_counter()
    statuses = [await one(i) for i in range(n)]
    return time.perf_counter() - started, statuses


async def _cold(provider: Any, library: str, n: int) -> tuple[float, list[bool]]:
    job = json.dumps({"result": "result", "max_faces": 20000, "deflection": 1e-3}).encode()
    limits: dict[str, Any] = {"timeout_s": 300, "memory_mb": 2048, "pids": 64}
    started = time.perf_counter()
    oks = []
    for i in range(n):
        async with provider.session(library, **limits) as sb:
            await sb.write_files({"part.py": _script(library, i)})
            await sb.write_files({"_worker.py": _WORKER, "job.json": job}, readonly=True)
            await sb.exec(["python", "-I", "_worker.py", "script"], timeout=300)
            brep = await sb.read_file("part.brep")
        async with provider.session(library, **limits) as sb:
            await sb.write_files(
                {"_worker.py": _WORKER, "job.json": job, "part.brep": brep}, readonly=True
            )
            run = await sb.exec(["python", "-I", "_worker.py", "judge"], timeout=300)
            report = json.loads(await sb.read_file("report.json"))
        oks.append(run.ok and bool(report.get("valid")))
    return time.perf_counter() - started, oks


async def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", type=int, default=12)
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--library", default="cadquery", choices=sorted(SCRIPTS))
    args = parser.parse_args(argv)
    provider = open_provider(args.backend, SandboxSettings(pool_size=1))
    try:
        warm_s, statuses = await _warm(provider, args.library, args.checks)
        cold_s, oks = await _cold(provider, args.library, args.checks)
    finally:
        await provider.close()
    out = {
        "benchmark": "cad",
        "backend": args.backend,
        "library": args.library,
        "checks": args.checks,
        "warm_checks_per_s": round(args.checks / warm_s, 3),
        "cold_checks_per_s": round(args.checks / cold_s, 3),
        "speedup": round(cold_s / warm_s, 2),
        "warm_all_pass": all(s == "pass" for s in statuses),
        "cold_all_valid": all(oks),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    asyncio.run(main())
