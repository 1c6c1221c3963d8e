"""Scores every ``code.tests`` corpus and writes one JSONL line per row (for old/new diffs).

A refactor of ``domains/code`` must leave every verdict as it was: run this on the old tree and
on the new one, then compare the two files with ``--compare``. It leaves out what differs
between two runs of the same code (object addresses, work and temp dir names, and with a second
old run the rows whose verdicts race the machine's load) and the judge's own line numbers, which
a pytest collection error's traceback shows and any edit of the judge moves. Rows:
``datasets/code/*.jsonl`` trajectories (adversarial, cross-sample), ``datasets/code/languages``,
``datasets/examples/code.jsonl`` and the 164 HumanEval canonical solutions plus a broken variant
of each (body ``return None``). Each line holds corpus, id, status, reward, feedback and the
error kind; timings and other load-dependent details are left out.

Usage::

    git archive <fork point> domains/code | tar -x -C /tmp/base
    python benchmarks/code_corpora.py --sandbox local --code-from /tmp/base --out /tmp/old.jsonl
    python benchmarks/code_corpora.py --sandbox local --out /tmp/new.jsonl
    python benchmarks/code_corpora.py --sandbox local --code-from /tmp/base --out /tmp/old2.jsonl
    python benchmarks/code_corpora.py --compare /tmp/old.jsonl /tmp/new.jsonl /tmp/old2.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "domains" / "code"))
from humaneval import add_code_from, use_code_from  # noqa: E402 - benchmarks/humaneval.py


def corpora(humaneval: bool) -> dict[str, list[dict[str, Any]]]:
    """Every corpus's trajectories, by corpus name."""
    out: dict[str, list[dict[str, Any]]] = {}
    paths = [ROOT / "datasets" / "code" / "adversarial.jsonl"]
    paths += [ROOT / "datasets" / "code" / "cross_sample.jsonl"]
    paths += sorted((ROOT / "datasets" / "code" / "languages").glob("*.jsonl"))
    paths += [ROOT / "datasets" / "examples" / "code.jsonl"]
    for path in paths:
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        out[str(path.relative_to(ROOT))] = [
            {k: r[k] for k in ("id", "completion", "task") if k in r} for r in rows
        ]
    if humaneval:
        from code_helpers import humaneval_items

        out["humaneval"] = humaneval_items()
        out["humaneval-broken"] = humaneval_items(broken=True)
    return out


def score(sandbox: str, concurrency: int, humaneval: bool) -> list[dict[str, Any]]:
    from verifiers.engine import Engine, EngineSettings

    async def go() -> list[dict[str, Any]]:
        settings = EngineSettings(
            concurrency=concurrency,
            sandbox=sandbox,  # type: ignore[arg-type]
            cache=False,
            retries=0,
        )
        lines: list[dict[str, Any]] = []
        async with Engine(settings) as engine:
            for name, rows in corpora(humaneval).items():
                results = await engine.score(rows)
                for row, res in zip(rows, results, strict=True):
                    lines.append(
                        {
                            "corpus": name,
                            "id": row["id"],
                            "status": res.status,
                            "reward": res.reward,
                            "feedback": res.feedback,
                            "error": res.error.kind if res.error else None,
                        }
                    )
        return lines

    return asyncio.run(go())


_RUN_SPECIFIC = [
    (re.compile(r"0x[0-9a-f]{6,16}"), "0xADDR"),  # object addresses in reprs
    (re.compile(r"/work/job\d+/"), "/work/jobN/"),  # the runner's work dir
    (re.compile(r"\.t[a-z0-9_]{8}/"), ".tXXXXXXXX/"),  # the judge's temp dir of test files
    (re.compile(r"\.judge/harness\.py:\d+"), ".judge/harness.py:N"),  # the judge's line numbers
]
"""Parts of feedback that differ from one run to the next on the same code."""


def _stable(row: dict[str, Any]) -> dict[str, Any]:
    text = row.get("feedback") or ""
    for pattern, repl in _RUN_SPECIFIC:
        text = pattern.sub(repl, text)
    return {**row, "feedback": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--no-humaneval", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="OLD NEW [OLD_AGAIN]: rows that differ (OLD_AGAIN, a second run of the old code,"
        " names the rows that differ between runs of the same code: those are left out)",
    )
    add_code_from(parser)
    args = parser.parse_args(argv)
    use_code_from(args.code_from)
    if args.compare:
        if len(args.compare) not in (2, 3):
            parser.error("--compare takes OLD NEW [OLD_AGAIN]")
        runs = [
            {
                (r["corpus"], r["id"]): _stable(r)
                for r in map(json.loads, p.read_text().splitlines())
            }
            for p in args.compare
        ]
        old, new = runs[0], runs[1]
        # Rows whose verdict moves between two runs of the same old code (fork and memory bombs
        # racing their limits on a loaded machine, HumanEval tests that draw random inputs).
        again = runs[2] if len(runs) == 3 else old
        noisy = {k for k in old.keys() | again.keys() if old.get(k) != again.get(k)}
        differ = sorted(
            k for k in old.keys() | new.keys() if old.get(k) != new.get(k) and k not in noisy
        )
        for key in differ:
            print(json.dumps({"key": key, "old": old.get(key), "new": new.get(key)}))
        summary = {"rows_old": len(old), "rows_new": len(new), "differ": len(differ)}
        summary["noisy_left_out"] = sorted("/".join(k) for k in noisy)
        print(json.dumps(summary))
        return 1 if differ else 0
    lines = score(args.sandbox, args.concurrency, not args.no_humaneval)
    text = "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
