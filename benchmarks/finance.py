"""Benchmark: finance.formula throughput vs math-verify, and PDF extraction cold vs cached.

Throughput is reported on two clocks: ``cpu`` (this process's CPU time, robust when other
jobs share the machine; everything here runs in one process) and ``wall``. ``gc_cpu_share``
is the part of each measurement's CPU time spent in Python's cyclic garbage collector, and
``cpu_excluding_gc`` the rates without it (each measurement starts after ``gc.collect()``).

Part 1 scores N trajectories over inline tables (synthetic reports, 80% right answers, 20%
wrong by a few percent) with ``verifiers.score`` (the engine, end to end; ``engine_async``
is the same with the verifier's ``verify_inline`` fast path switched off, i.e. the engine
path used before it existed; both must give identical results) and with the
verifier's core ``load_document`` + ``judge`` (no engine), and runs Hugging Face math-verify's
``verify(parse(gold), parse(pred))`` on the same answers in the same process.

Part 2 writes a 20-page synthetic report and loads it as a document: cold (pdfplumber
extraction), cached in memory, and cached on disk (memory layer cleared).

Usage::

    python benchmarks/finance.py [--n 5000] [--pages 20] [--rounds 3] [--group 1] [--skip-pdf]
    python benchmarks/finance.py --lazy-only --lazy-pages 300

Part 3 (``--lazy-pages N``) writes an N-page unruled synthetic report and answers one question
cold (empty caches, fresh process, engine end to end with its worker processes), twice: one
whose operands cite their page, and a FinQA program whose figures are uncited literals. It
reports wall and CPU time, pages read and peak RSS of the host and of the workers; ``whole``
is the peer: every page extracted in one process, what the first question cost before.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from verifiers.domains.finance import (
    FinanceSpec,
    FormulaCrossCheck,
    Reference,
    judge,
    load_document,
    pdf_cache,
    synth,
)
from verifiers.domains.finance._sources import clear_inline_caches

import verifiers
from verifiers.context import VerifierContext
from verifiers.protocol import Verifier
from verifiers.settings import cache_dir
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
    sections = ("engine", "engine_async", "core", "peer")
    wall: dict[str, list[float]] = {k: [] for k in sections}
    cpu: dict[str, list[float]] = {k: [] for k in sections}
    gc_cpu: dict[str, list[float]] = {k: [] for k in sections}
    collecting: dict[str, float] = {"started": 0.0, "total": 0.0}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        # CPU time of Python's cyclic garbage collector, which runs whenever allocations
        # cross its thresholds and walks every live container (5,000 decoded items here).
        if phase == "start":
            collecting["started"] = time.process_time()
        else:
            collecting["total"] += time.process_time() - collecting["started"]

    def timed(name: str, fn: Any) -> Any:
        # Start every measurement from a clean collector, so that each one pays for the
        # collections its own allocations trigger, not for debt left by the one before.
        gc.collect()
        collecting["total"] = 0.0
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall[name].append(time.perf_counter() - w)
        cpu[name].append(time.process_time() - c)
        gc_cpu[name].append(collecting["total"])
        return out

    gc.callbacks.append(on_gc)

    for _ in range(rounds):
        clear_inline_caches()
        results = timed("engine", lambda: verifiers.score(items))
        clear_inline_caches()
        async_results = timed("engine_async", lambda: _score_without_inline_path(items))
        clear_inline_caches()
        direct_results = timed("core", lambda: asyncio.run(_judge_all(trajectories, specs, refs)))
        mv = timed(
            "peer",
            lambda: [bool(verify(parse(g), parse(p))) for g, p in zip(golds, preds, strict=True)],
        )

    gc.callbacks.remove(on_gc)
    ours = [r.components.get("correct") == 1.0 for r in results]
    agree = sum(a == b for a, b in zip(ours, mv, strict=True)) / n
    assert [r.status for r in results] == [r.status for r in direct_results]
    strip = {"duration_s"}
    assert [r.model_dump(exclude=strip) for r in results] == [
        r.model_dump(exclude=strip) for r in async_results
    ]
    rates: dict[str, Any] = {"n": n, "group": group, "rounds": rounds}
    no_gc = {k: [c - g for c, g in zip(cpu[k], gc_cpu[k], strict=True)] for k in sections}
    for clock, data in (("cpu", cpu), ("wall", wall), ("cpu_excluding_gc", no_gc)):
        engine, slow, core, peer = (statistics.median(data[k]) for k in sections)
        rates[clock] = {
            "finance_engine_items_per_s": round(n / engine, 1),
            "finance_engine_async_path_items_per_s": round(n / slow, 1),
            "finance_core_items_per_s": round(n / core, 1),
            "math_verify_pairs_per_s": round(n / peer, 1),
            "speedup_engine_vs_math_verify": round(peer / engine, 1),
            "speedup_engine_async_path_vs_math_verify": round(peer / slow, 1),
            "speedup_core_vs_math_verify": round(peer / core, 1),
        }
    rates["gc_cpu_share"] = {
        k: round(sum(gc_cpu[k]) / sum(cpu[k]), 3) if sum(cpu[k]) else 0.0 for k in cpu
    }
    return {
        **rates,
        "pass_rate": round(sum(r.status == "pass" for r in results) / n, 4),
        "agreement_with_math_verify_on_correct": round(agree, 4),
    }


def _score_without_inline_path(items: list[dict[str, Any]]) -> list[verifiers.Result]:
    """The engine as before ``verify_inline``: a task, context and deadline per item."""
    saved = FormulaCrossCheck.__dict__["verify_inline"]
    setattr(FormulaCrossCheck, "verify_inline", Verifier.verify_inline)  # noqa: B010
    try:
        return verifiers.score(items)
    finally:
        setattr(FormulaCrossCheck, "verify_inline", saved)  # noqa: B010


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


def _lazy_one(pdf: str, question: str, base: str) -> dict[str, Any]:
    """One cold question over a large report, in this (fresh) process: wall, CPU, peak RSS."""
    import os
    import resource

    os.environ["VERIFIERS_CACHE_DIR"] = tempfile.mkdtemp()
    pdf_cache.directory = cache_dir() / "finance-pdf"
    pdf_cache.clear_memory()
    pages = int(Path(pdf).stem.split("-")[-1])
    report = synth.make_report(5, pages=pages)
    golds = synth.gold_trajectories(report, {"pdf": Path(pdf).name})
    programs = synth.gold_trajectories(report, {"pdf": Path(pdf).name}, use_programs=True)
    if question == "cited":
        traj = golds[len(golds) // 2]  # operands cite page, row and column
    else:  # a FinQA program: its figures are literals, cited nowhere
        traj = next(p for p in programs[len(programs) // 2 :] if '"program"' in p["completion"])
    start, cpu = time.perf_counter(), time.process_time()
    if question == "whole":  # what the first question cost before lazy reading
        from verifiers.domains.finance import extract_tables

        data = extract_tables({"path": pdf, "max_pages": pages})
        result = verifiers.Result.scored(1.0, details={"document": {"pages_read": data["pages"]}})
    else:
        result = verifiers.score([traj], base_dir=base)[0]
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "question": question,
        "status": result.status,
        "wall_s": round(wall, 2),
        "host_cpu_s": round(time.process_time() - cpu, 2),
        "worker_cpu_s": round(children.ru_utime + children.ru_stime, 2),
        "pages_read": result.details.get("document", {}).get("pages_read"),
        "host_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "worker_peak_rss_mb": round(children.ru_maxrss / 1024),
    }


def bench_lazy_pdf(pages: int) -> list[dict[str, Any]]:
    """Cold questions over a ``pages``-page unruled report, each in a fresh process."""
    import subprocess
    import sys

    base = tempfile.mkdtemp()
    pdf = Path(base) / f"report-{pages}.pdf"
    synth.write_pdf(synth.make_report(5, pages=pages), pdf, ruled=False)
    out = []
    for question in ("cited", "uncited", "whole"):
        run = subprocess.run(
            [sys.executable, __file__, "--lazy-one", question, "--lazy-pdf", str(pdf)],
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group", type=int, default=1, help="completions per question (GRPO)")
    parser.add_argument("--skip-pdf", action="store_true")
    parser.add_argument("--lazy-pages", type=int, default=0, help="also: cold questions, N pages")
    parser.add_argument("--lazy-one", choices=("cited", "uncited", "whole"), help=argparse.SUPPRESS)
    parser.add_argument("--lazy-pdf", help=argparse.SUPPRESS)
    parser.add_argument("--lazy-only", action="store_true", help="only the cold-question part")
    args = parser.parse_args()
    if args.lazy_one:
        base = str(Path(args.lazy_pdf).parent)
        print(json.dumps(_lazy_one(args.lazy_pdf, args.lazy_one, base)))
        return
    if args.lazy_only:
        print(json.dumps({"benchmark": "finance", "lazy_pdf": bench_lazy_pdf(args.lazy_pages)}))
        return
    result: dict[str, Any] = {
        "benchmark": "finance",
        **bench_throughput(args.n, args.rounds, args.group),
    }
    if not args.skip_pdf:
        result["pdf"] = bench_pdf(args.pages)
    if args.lazy_pages:
        result["lazy_pdf"] = bench_lazy_pdf(args.lazy_pages)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
