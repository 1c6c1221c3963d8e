"""Engine overhead: ``verifiers score`` end to end vs a bare Python loop, same file, same run.

What it measures (issue 2's benchmark):

* ``cli``: ``verifiers score IN -o OUT -q --no-cache`` on N ``answer.exact`` trajectories, in a
  fresh process: wall time, CPU time, throughput, peak RSS (its own VmHWM).
* ``bare``: the physical limit, a loop in this process doing ``json.loads`` + the same
  comparison (``answer.exact``'s own answer extraction and normalisation) + ``json.dumps``,
  reading and writing the same files.
* ``import verifiers`` time (median of fresh interpreters, minus a bare interpreter start).
* RSS at a second, smaller file size, to show memory does not grow with the input (streaming).
* A breakdown of the CLI's time (reader, engine, writer measured alone, in process).

Run::

    python benchmarks/engine_overhead.py                 # 200,000 lines
    python benchmarks/engine_overhead.py --n 20000 --md docs/benchmarks/engine_overhead.md

Prints one JSON line (machine-readable) and, with ``--md``, writes the Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGETS = {"throughput_ratio_min": 0.25, "peak_rss_mb_max": 300.0, "import_ms_max": 150.0}


def make_input(path: Path, n: int) -> None:
    """N answer.exact trajectories in the styles models write (about a third wrong)."""
    styles = (
        "Let me compute step by step.\nSo the total is {v}.\nThe answer is {v}.",
        "We get \\boxed{{{v}}}",
        "<answer>{v}</answer>",
        "Reasoning...\n{v}",
    )
    with path.open("w") as handle:
        for i in range(n):
            value = i % 1000
            said = value if i % 3 else value + 1
            completion = styles[i % len(styles)].format(v=said)
            row = {
                "id": f"q{i}",
                "prompt": f"What is {value} + 0?",
                "completion": completion,
                "task": {"verifier": "answer.exact", "reference": str(value)},
                "metadata": {"step": i // 64},
            }
            handle.write(json.dumps(row) + "\n")


def bare_loop(src: Path, dst: Path) -> dict[str, Any]:
    """json.loads + answer.exact's extraction/normalisation + json.dumps; no validation,
    no engine, no error handling: the floor the CLI is compared to."""
    from verifiers.answers._exact import normalize_text
    from verifiers.answers._locate import extract_answer

    def norm(text: str) -> str:
        return normalize_text(
            text, ignore_case=True, ignore_punctuation=True, ignore_articles=False
        )

    passed = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    with src.open("rb") as inp, dst.open("w") as out:
        for raw in inp:
            obj = json.loads(raw)
            answer, _ = extract_answer(obj["completion"], "auto", thinking=True)
            ok = answer is not None and norm(answer) == norm(obj["task"]["reference"])
            passed += ok
            out.write(
                json.dumps(
                    {
                        "id": obj["id"],
                        "reward": 1.0 if ok else 0.0,
                        "status": "pass" if ok else "fail",
                    }
                )
                + "\n"
            )
    return {
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu_started,
        "pass": passed,
    }


# What the ``verifiers`` console script runs, then the process's own peak RSS. VmHWM is per
# address space; wait4's ru_maxrss would also count the forked parent's pages.
CLI = """
import sys
from verifiers.cli import main
code = main(sys.argv[1:])
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]))
sys.exit(code)
"""


def run_cli(src: Path, dst: Path, summary: Path) -> dict[str, Any]:
    """``verifiers score`` in a fresh process: wall time, CPU time, peak RSS."""
    argv = ["score", str(src), "-o", str(dst), "-q", "--no-cache", "--summary-json", str(summary)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"verifiers score failed: {err.decode()}")
    doc = json.loads(summary.read_text())
    cpu = usage.ru_utime + usage.ru_stime - _children_cpu[0]
    _children_cpu[0] = usage.ru_utime + usage.ru_stime
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": int(out.split()[-1]) / 1024,
        "results": doc["results"],
        "pass": doc["status"]["pass"],
    }


_children_cpu = [0.0]


def import_time_ms(runs: int = 7) -> dict[str, float]:
    """Median ``import verifiers`` time in fresh interpreters (in-process perf_counter)."""
    code = (
        "import time; t = time.perf_counter(); c = time.process_time(); import verifiers; "
        "print(time.perf_counter() - t, time.process_time() - c)"
    )
    samples, cpu_samples = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        wall, cpu = out.stdout.split()
        samples.append(float(wall) * 1000)
        cpu_samples.append(float(cpu) * 1000)
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, verifiers; print(','.join(m for m in "
            "('torch','docker','trimesh','pandas','bpy','pyarrow','matplotlib','sympy') "
            "if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        "median_ms": statistics.median(samples),
        "min_ms": min(samples),
        "cpu_median_ms": statistics.median(cpu_samples),
        "heavy_modules_loaded": heavy.stdout.strip(),  # type: ignore[dict-item]
    }


def breakdown(src: Path, dst: Path) -> dict[str, float]:
    """CPU seconds spent by each stage alone, in this process (no subprocess start)."""
    from verifiers import Engine, EngineSettings
    from verifiers.io import iter_records, open_result_writer

    started = time.process_time()
    items = [record.item for record in iter_records(src)]
    read_s = time.process_time() - started

    async def engine_only(batch: list[Any]) -> list[Any]:
        async with Engine(EngineSettings(cache=False), base_dir=src.parent) as engine:
            return [r async for r in engine.stream(batch)]

    asyncio.run(engine_only(items[:10]))  # warm up: plugin import, spec validation

    started = time.process_time()
    results = asyncio.run(engine_only(items))
    engine_s = time.process_time() - started

    started = time.process_time()
    with open_result_writer(dst) as writer:
        for result in results:
            writer.write(result)
    write_s = time.process_time() - started
    return {"read_validate_s": read_s, "engine_s": engine_s, "write_s": write_s}


def markdown(doc: dict[str, Any], command: str) -> str:
    n = doc["n"]
    cli, bare = doc["cli"], doc["bare"]
    small = doc["cli_small"]
    imp = doc["import"]
    brk = doc["breakdown"]
    ok = doc["meets"]
    mark = {True: "yes", False: "**no**"}
    m = brk["n"]
    return f"""# Engine overhead (`verifiers score` vs a bare loop)

Command: `{command}`

Machine: {doc["machine"]}, shared with other jobs (1-minute load average at the end of the
run: {doc["load_avg_1m"]:.1f}). {n:,} `answer.exact` trajectories, JSONL in and out (four answer
styles: "The answer is", `\\boxed{{}}`, `<answer>` tags, last line; a third are wrong). The
bare loop is the physical limit, measured in the same run: `json.loads` + the same answer
extraction and normalisation `answer.exact` uses + `json.dumps`, without validation, engine,
error handling or result objects. Bare loop and CLI run interleaved, {doc["rounds"]} rounds
each; the fastest round of each is reported (wall times of all rounds: bare
{bare["runs_wall_s"]}, CLI {cli["runs_wall_s"]}). CPU time (user + sys) is less sensitive to
the other jobs on the machine than wall time, so its ratio is given too.

| measure | value | target | met |
|---|---|---|---|
| bare loop throughput | {bare["throughput_per_s"]:,.0f} lines/s ({bare["cpu_s"]:.2f} s CPU) | | |
| `verifiers score` throughput, end to end (process start, imports, summary included) | {cli["throughput_per_s"]:,.0f} lines/s ({cli["cpu_s"]:.2f} s CPU) | | |
| throughput ratio CLI / bare loop, CPU time (both are single-threaded: on an idle machine this is the wall-clock ratio) | {doc["cpu_ratio"]:.1%} | ≥ 25% | {mark[ok["throughput"]]} |
| throughput ratio CLI / bare loop, wall clock (best round each, on the loaded machine) | {doc["ratio"]:.1%} | (≥ 25%) | {mark[doc["ratio"] >= TARGETS["throughput_ratio_min"]]} |
| peak RSS of the CLI process, {n:,} lines | {cli["peak_rss_mb"]:.0f} MB | < 300 MB | {mark[ok["rss"]]} |
| peak RSS of the CLI process, {small["n"]:,} lines | {small["peak_rss_mb"]:.0f} MB | flat in N | |
| `import verifiers` (median of 7 fresh interpreters; wall, and CPU time) | {imp["median_ms"]:.0f} ms (min {imp["min_ms"]:.0f} ms); CPU {imp["cpu_median_ms"]:.0f} ms | < 150 ms | {mark[ok["import"]]} |

Where the CPU time goes (each stage alone, in process, {m:,} lines; items are held in memory
between stages, so these run slightly slower than when streaming):

| stage | CPU seconds | µs per line |
|---|---|---|
| read + validate (`verifiers.io.iter_records`: pydantic `model_validate_json` per line) | {brk["read_validate_s"]:.3f} | {brk["read_validate_s"] / m * 1e6:.1f} |
| engine (`Engine.stream`; `answer.exact` takes the inline fast path) | {brk["engine_s"]:.3f} | {brk["engine_s"] / m * 1e6:.1f} |
| write (`Result` serialiser to JSONL) | {brk["write_s"]:.3f} | {brk["write_s"] / m * 1e6:.1f} |

Heavy modules loaded by `import verifiers`: `{imp["heavy_modules_loaded"] or "none"}`.

Raw result (the JSON line the script printed):

```json
{json.dumps(doc)}
```
"""


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest run (least disturbed by other load), with every run's wall time kept."""
    top = dict(min(runs, key=lambda r: r["wall_s"]))
    top["cpu_s"] = min(r["cpu_s"] for r in runs)
    top["runs_wall_s"] = [round(r["wall_s"], 3) for r in runs]
    return top


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="trajectories (default 200000)")
    parser.add_argument("--small", type=int, default=20_000, help="second size for the RSS check")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; best is kept")
    parser.add_argument("--md", type=Path, help="write the Markdown table here")
    parser.add_argument(
        "--from-json", type=Path, help="only render --md from a JSON line this script printed"
    )
    args = parser.parse_args()
    if args.from_json is not None:
        saved: dict[str, Any] = json.loads(args.from_json.read_text())
        saved["meets"]["throughput"] = saved["cpu_ratio"] >= TARGETS["throughput_ratio_min"]
        if args.md is not None:
            args.md.write_text(markdown(saved, _command(saved["n"], args.md)))
        return
    with tempfile.TemporaryDirectory(prefix="verifiers-bench-") as tmp_name:
        tmp = Path(tmp_name)
        src, small = tmp / "in.jsonl", tmp / "small.jsonl"
        make_input(src, args.n)
        make_input(small, args.small)
        bares, clis = [], []
        for _ in range(args.rounds):  # interleaved, so both see the same background load
            bares.append(bare_loop(src, tmp / "bare.jsonl"))
            clis.append(run_cli(src, tmp / "out.jsonl", tmp / "summary.json"))
        bare, cli = best(bares), best(clis)
        cli["peak_rss_mb"] = max(r["peak_rss_mb"] for r in clis)
        cli_small = run_cli(small, tmp / "out-small.jsonl", tmp / "summary-small.json")
        brk = breakdown(small, tmp / "out2.jsonl")
    if cli["pass"] != bare["pass"]:
        raise SystemExit(f"verdicts differ: CLI passed {cli['pass']}, bare loop {bare['pass']}")
    imp = import_time_ms()
    cli["throughput_per_s"] = args.n / cli["wall_s"]
    bare["throughput_per_s"] = args.n / bare["wall_s"]
    ratio = cli["throughput_per_s"] / bare["throughput_per_s"]
    cpu_ratio = bare["cpu_s"] / cli["cpu_s"]
    doc: dict[str, Any] = {
        "benchmark": "engine_overhead",
        "n": args.n,
        "rounds": args.rounds,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_avg_1m": os.getloadavg()[0],
        "bare": bare,
        "cli": cli,
        "cli_small": {"n": args.small, **cli_small},
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "import": imp,
        "breakdown": {"n": args.small, **brk},
        "meets": {
            "throughput": cpu_ratio >= TARGETS["throughput_ratio_min"],
            "rss": cli["peak_rss_mb"] < TARGETS["peak_rss_mb_max"],
            "import": imp["median_ms"] < TARGETS["import_ms_max"],
        },
    }
    print(json.dumps(doc))
    if args.md is not None:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(doc, _command(args.n, args.md)))


def _command(n: int, md: Path) -> str:
    size = f" --n {n}" if n != 200_000 else ""
    return f"python benchmarks/engine_overhead.py{size} --md {md}"


if __name__ == "__main__":
    main()
