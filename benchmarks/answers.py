"""Benchmark: ``answer.math`` throughput vs Hugging Face math-verify, in the same run.

The items are the ``answer.math`` regression corpora (``datasets/answers/math.jsonl`` and
``math_classes.jsonl``: real MATH/NuminaMath-style answers, right and wrong), repeated to
``--n`` items (each a fresh dict with its own id; the result cache is off, so nothing is
reused between repeats). Ours: ``verifiers.score`` end to end (the engine, extraction, the
text fast path and the sympy comparison in ``--workers`` worker processes). Theirs:
``math_verify.verify(math_verify.parse(gold), math_verify.parse(completion))`` in this
process, on the same items. Both clocks are wall time; ``ratio`` is ours over theirs in
items/s. ``agreement`` is the share of items where both give the same verdict (math-verify's
verdict is True/False; ours is pass/other), for orientation only: the corpora hold cases on
which the two differ by design (see docs/answers.md).

Usage::

    python benchmarks/answers.py [--n 2000] [--workers 2] [--mv-n 600]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import verifiers

REPO = Path(__file__).resolve().parents[1]
CORPORA = ("math.jsonl", "math_classes.jsonl")


def load_items() -> list[dict[str, Any]]:
    out = []
    for name in CORPORA:
        path = REPO / "datasets" / "answers" / name
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line:
                continue
            item = json.loads(line)
            if isinstance(item["task"].get("reference"), str):
                out.append(item)
    return out


def repeat(items: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return [{**items[i % len(items)], "id": f"b{i}"} for i in range(n)]


def run_ours(items: list[dict[str, Any]], workers: int) -> tuple[float, list[bool]]:
    started = time.perf_counter()
    results = verifiers.score(items, base_dir=REPO, workers=workers, timeout_s=60)
    elapsed = time.perf_counter() - started
    return elapsed, [r.status == "pass" for r in results]


def run_theirs(items: list[dict[str, Any]]) -> tuple[float, list[bool], list[float]]:
    from math_verify import parse, verify

    verdicts = []
    times = []
    started = time.perf_counter()
    for item in items:
        one = time.perf_counter()
        gold = parse(f"${item['task']['reference']}$")
        pred = parse(str(item["completion"]))
        verdicts.append(bool(verify(gold, pred)))
        times.append(time.perf_counter() - one)
    return time.perf_counter() - started, verdicts, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="items scored by answer.math")
    parser.add_argument("--mv-n", type=int, default=600, help="items scored by math-verify")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    base = load_items()
    ours_items = repeat(base, args.n)
    theirs_items = repeat(base, args.mv_n)
    run_ours(repeat(base, 20), args.workers)  # warm imports (sympy in this process too)
    ours_s, ours_verdicts = run_ours(ours_items, args.workers)
    theirs_s, theirs_verdicts, theirs_times = run_theirs(theirs_items)
    # Items on which math-verify ran into its own 5 s timeouts (hostile answers) dominate its
    # wall time; the ratio without them is the conservative figure.
    slow = [t for t in theirs_times if t > 1.0]
    theirs_fast_rate = (len(theirs_times) - len(slow)) / max(1e-9, theirs_s - sum(slow))
    ours_rate = args.n / ours_s
    theirs_rate = args.mv_n / theirs_s
    same = sum(ours_verdicts[i] == theirs_verdicts[i] for i in range(min(args.n, args.mv_n))) / min(
        args.n, args.mv_n
    )
    print(
        json.dumps(
            {
                "benchmark": "answers.math_vs_math_verify",
                "distinct_items": len(base),
                "ours": {
                    "items": args.n,
                    "wall_s": round(ours_s, 3),
                    "items_per_s": round(ours_rate, 1),
                },
                "math_verify": {
                    "items": args.mv_n,
                    "wall_s": round(theirs_s, 3),
                    "items_per_s": round(theirs_rate, 1),
                },
                "ratio": round(ours_rate / theirs_rate, 2),
                "math_verify_items_over_1s": len(slow),
                "ratio_without_those": round(ours_rate / theirs_fast_rate, 2),
                "workers": args.workers,
                "agreement": round(same, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
