"""Benchmark: finance.formula throughput vs math-verify, and PDF extraction cold vs cached.

Throughput is reported on two clocks: ``cpu`` (this process's CPU time, robust when other
jobs share the machine; everything here runs in one process) and ``wall``.

Part 1 scores N trajectories over inline tables (synthetic reports, 80% right answers, 20%
wrong by a few percent) with ``verifiers.score`` (the engine, end to end) and with the
verifier's synchronous core ``judge`` (no engine), and runs Hugging Face math-verify's
``verify(parse(gold), parse(pred))`` on the same answers in the same process.

Part 2 writes a 20-page synthetic report and loads it as a document: cold (pdfplumber
extraction), cached in memory, and cached on disk (memory layer cleared).

Usage::

    python benchmarks/finance.py [--n 5000] [--pages 20] [--rounds 3] [--group 1] [--skip-pdf]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from verifiers.domains.finance import FinanceSpec, Reference, judge, load_document, pdf_cache, synth
from verifiers.domains.finance._sources import _inline_documents

import verifiers
from verifiers.context import VerifierContext
from verifiers.types import Trajectory


def build_items(n: int, group: int = 1) -> list[dict[str, Any]]:
    """``n`` trajectories: each question answered ``group`` times (a GRPO group), 20% wrong.

    Every item is its own JSON-decoded dict, as when read from a JSONL file.
    """
    rng = random.Random(0)
    items: list[dict[str, Any]] = []
    seed = 0
    while len(items) < n:
        report = synth.make_report(seed, pages=3)
        seed += 1
        for gold in synth.gold_trajectories(report, synth.inline_document(report)):
            for k in range(group):
                traj = json.loads(json.dumps(gold))
                traj["id"] = f"{gold['id']}-{k}"
                if rng.random() < 0.2:
                    body = json.loads(traj["completion"].split("```json\n")[1].split("\n```")[0])
                    body["answer"] = round(
                        body["answer"] * rng.choice((1.03, 0.97, -1.0, 100.0)), 2
                    )
                    traj["completion"] = "```json\n" + json.dumps(body) + "\n```"
                items.append(traj)
    return items[:n]


def stated_answer(traj: dict[str, Any]) -> str:
    body = json.loads(traj["completion"].split("```json\n")[1].split("\n```")[0])
    return str(body["answer"])


def bench_throughput(n: int, rounds: int, group: int) -> dict[str, Any]:
    """Interleave the three measurements ``rounds`` times; report medians (shared CPUs)."""
    from math_verify import parse, verify

    items = build_items(n, group)
    verifiers.score(items[:50])  # warm imports
    trajectories = [Trajectory.model_validate(i) for i in items]
    specs = [FinanceSpec.model_validate(i["task"]["spec"]) for i in items]
    refs = [Reference(i["task"]["reference"]) for i in items]
    golds = [str(i["task"]["reference"]["answer"]) for i in items]
    preds = [stated_answer(i) for i in items]
    wall: dict[str, list[float]] = {"engine": [], "core": [], "peer": []}
    cpu: dict[str, list[float]] = {"engine": [], "core": [], "peer": []}

    def timed(name: str, fn: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall[name].append(time.perf_counter() - w)
        cpu[name].append(time.process_time() - c)
        return out

    for _ in range(rounds):
        _inline_documents.clear()
        results = timed("engine", lambda: verifiers.score(items))
        _inline_documents.clear()
        direct_results = timed("core", lambda: asyncio.run(_judge_all(trajectories, specs, refs)))
        mv = timed(
            "peer",
            lambda: [bool(verify(parse(g), parse(p))) for g, p in zip(golds, preds, strict=True)],
        )

    ours = [r.components.get("correct") == 1.0 for r in results]
    agree = sum(a == b for a, b in zip(ours, mv, strict=True)) / n
    assert [r.status for r in results] == [r.status for r in direct_results]
    rates: dict[str, Any] = {"n": n, "group": group, "rounds": rounds}
    for clock, data in (("cpu", cpu), ("wall", wall)):
        engine, core, peer = (statistics.median(data[k]) for k in ("engine", "core", "peer"))
        rates[clock] = {
            "finance_engine_items_per_s": round(n / engine, 1),
            "finance_core_items_per_s": round(n / core, 1),
            "math_verify_pairs_per_s": round(n / peer, 1),
            "speedup_engine_vs_math_verify": round(peer / engine, 1),
            "speedup_core_vs_math_verify": round(peer / core, 1),
        }
    return {
        **rates,
        "pass_rate": round(sum(r.status == "pass" for r in results) / n, 4),
        "agreement_with_math_verify_on_correct": round(agree, 4),
    }


async def _load(spec: FinanceSpec, traj: Trajectory) -> Any:
    ctx = VerifierContext(deadline=time.monotonic() + 600, base_dir=Path("."))
    assert spec.document is not None
    return await load_document(
        spec.document, traj, ctx, pdf_timeout=600, pdf_memory_mb=4096, max_pages=300
    )


async def _judge_all(
    trajectories: list[Trajectory], specs: list[FinanceSpec], refs: list[Reference]
) -> list[verifiers.Result]:
    out = []
    for traj, spec, ref in zip(trajectories, specs, refs, strict=True):
        document, details = await _load(spec, traj)
        out.append(judge(verifiers.completion_text(traj), spec, document, ref, details))
    return out


def bench_pdf(pages: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        report = synth.make_report(99, pages=pages)
        synth.write_pdf(report, base / "report.pdf", ruled=True)
        synth.write_pdf(report, base / "report-unruled.pdf", ruled=False)
        saved = pdf_cache.directory
        pdf_cache.directory = base / "cache"
        out: dict[str, Any] = {"pages": pages, "pdf_bytes": (base / "report.pdf").stat().st_size}
        try:
            for name in ("report.pdf", "report-unruled.pdf"):
                key = "ruled" if name == "report.pdf" else "unruled"
                traj = Trajectory.model_validate(synth.gold_trajectories(report, {"pdf": name})[0])
                spec = FinanceSpec.model_validate(traj.task.spec)

                async def load(traj: Trajectory = traj, spec: FinanceSpec = spec) -> Any:
                    ctx = VerifierContext(deadline=time.monotonic() + 600, base_dir=base)
                    assert spec.document is not None
                    return await load_document(
                        spec.document, traj, ctx, pdf_timeout=600, pdf_memory_mb=4096, max_pages=300
                    )

                pdf_cache.clear_memory()
                start, start_cpu = time.perf_counter(), time.process_time()
                doc, details = asyncio.run(load())
                cold = time.perf_counter() - start
                cold_cpu = time.process_time() - start_cpu
                assert details["pdf_cached"] is False and len(doc.tables) == pages
                warm = []
                for _ in range(20):
                    start = time.perf_counter()
                    asyncio.run(load())
                    warm.append(time.perf_counter() - start)
                disk = []
                for _ in range(5):
                    pdf_cache.clear_memory()
                    start = time.perf_counter()
                    _, details = asyncio.run(load())
                    disk.append(time.perf_counter() - start)
                    assert details["pdf_cached"] is True
                mem = statistics.median(warm)
                out[key] = {
                    "cold_s": round(cold, 3),
                    "cold_cpu_s": round(cold_cpu, 3),
                    "cold_s_per_page": round(cold / pages, 3),
                    "cached_memory_s": round(mem, 5),
                    "cached_disk_s": round(statistics.median(disk), 5),
                    "speedup_memory": round(cold / mem, 1),
                    "speedup_disk": round(cold / statistics.median(disk), 1),
                }
        finally:
            pdf_cache.directory = saved
            pdf_cache.clear_memory()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group", type=int, default=1, help="completions per question (GRPO)")
    parser.add_argument("--skip-pdf", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "benchmark": "finance",
        **bench_throughput(args.n, args.rounds, args.group),
    }
    if not args.skip_pdf:
        result["pdf"] = bench_pdf(args.pages)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
