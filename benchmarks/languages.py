"""code.tests per language: samples/s of a trivial io task, this project vs a `docker run` per
sample, same run, and the compile cost on its own.

Contenders, per language (the honest ``sum`` program of ``datasets/code/languages/<lang>.jsonl``,
three io cases):

* ``verifiers_docker``: ``code.tests`` through the engine and the Docker warm pool of the
  ``languages`` runtime (compile + 3 runs inside one judge exec per sample);
* ``verifiers_local``: the same through the local bubblewrap backend;
* ``docker_run``: one ``docker run --rm --network none`` of the same image per sample that
  compiles the program and runs the three cases (what a harness without a warm pool does).

``build_s`` is the median time from the judge's start to a built program (``details.build_s``);
the peer's ``build_s`` is its compile step timed inside its container. ``ratio`` compares
samples/s end to end; ``run_ratio`` compares the time per sample with each side's OWN median
compile time taken out (what the warm pool saves on everything but compiling).

Usage::

    python benchmarks/languages.py [--langs cpp,go] [--n 8] [--concurrency 2]

Prints one JSON line per language and a summary line.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LANGS = ["c", "cpp", "javascript", "typescript", "java", "go", "rust"]
SCRIPT = {
    # compile + run the three cases in one container (the peer's whole job)
    "c": "gcc -std=gnu17 -O2 -o /tmp/p /tmp/s.c -lm && R=/tmp/p",
    "cpp": "g++ -std=gnu++17 -O2 -o /tmp/p /tmp/s.cpp && R=/tmp/p",
    "javascript": "node --check /tmp/s.js && R='node /tmp/s.js'",
    "typescript": "cd /tmp && node -e \"const ts=require('typescript');const fs=require('fs');"
    "fs.writeFileSync('/tmp/s.js',ts.transpileModule(fs.readFileSync('/tmp/s.ts','utf8'),{}).outputText)\""
    " && R='node /tmp/s.js'",
    "java": "mkdir -p /tmp/b && javac -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -d /tmp/b /tmp/Main.java"
    " && R='java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp /tmp/b Main'",
    "go": "cd /tmp && go build -o /tmp/p /tmp/s.go && R=/tmp/p",
    "rust": "rustc --edition 2021 -C opt-level=1 -o /tmp/p /tmp/s.rs && R=/tmp/p",
}
EXT = {
    "c": "s.c",
    "cpp": "s.cpp",
    "javascript": "s.js",
    "typescript": "s.ts",
    "java": "Main.java",
    "go": "s.go",
    "rust": "s.rs",
}


def honest(lang: str) -> dict[str, Any]:
    path = ROOT / "datasets" / "code" / "languages" / f"{lang}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return next(r for r in rows if r["id"] == f"{lang}-sum")


def image_tag() -> str:
    from verifiers.sandbox._runtimes import load_runtime, runtime_hash
    from verifiers.sandbox._settings import SandboxSettings

    runtime = load_runtime(ROOT / "sandbox" / "images" / "languages")
    assert runtime is not None
    return f"verifiers-sandbox/languages:{runtime_hash(runtime, SandboxSettings())}"


def items(lang: str, n: int) -> list[dict[str, Any]]:
    row = honest(lang)
    comment = "//"
    out = []
    for i in range(n):
        # distinct programs (a comment), so nothing could be shared between samples
        completion = row["completion"].replace("```\n", f"{comment} sample {i}\n```\n", 1)
        out.append({**row, "id": f"{lang}-{i}", "completion": completion})
    return out


def run_verifiers(lang: str, n: int, concurrency: int, sandbox: str) -> dict[str, Any]:
    """One engine (one warm pool) for the warm-up and the timed batch: ``verifiers.score``
    makes a fresh engine per call, so warming with it warmed a pool the timed run never saw
    (the first version of this benchmark timed a pool start with every batch)."""
    import asyncio

    from verifiers.engine import Engine, EngineSettings

    batch = items(lang, n + concurrency)
    warm, timed = batch[:concurrency], batch[concurrency:]

    async def go() -> tuple[float, list[Any]]:
        settings = EngineSettings.from_env(sandbox=sandbox, concurrency=concurrency, retries=0)
        async with Engine(settings) as engine:
            await engine.score(warm)  # one runner per slot started and used once
            t0 = time.perf_counter()
            results = await engine.score(timed)
            return time.perf_counter() - t0, results

    wall, results = asyncio.run(go())
    builds = [float(r.details.get("build_s") or 0) for r in results if r.details]
    return {
        "wall_s": round(wall, 3),
        "samples_per_s": round(n / wall, 3),
        "passed": sum(r.status == "pass" for r in results),
        "build_s": round(statistics.median(builds), 3) if builds else None,
    }


def run_docker_run(lang: str, n: int, concurrency: int, tag: str) -> dict[str, Any]:
    row = honest(lang)
    code = row["completion"].split("\n", 3)[3].rsplit("```", 1)[0]
    cases = row["task"]["spec"]["tests"]["cases"]
    runs = " && ".join(
        f"echo '{c['stdin'].strip()}' | $R > /tmp/o{k}; cat /tmp/o{k}; echo '@@'"
        for k, c in enumerate(cases)
    )
    script = (
        f"printf '%s' \"$SRC\" > /tmp/{EXT[lang]} && t0=$(date +%s%N) && {SCRIPT[lang]}"
        f' && t1=$(date +%s%N) && {runs} && echo "@@B $(((t1 - t0) / 1000))"'
    )
    builds: list[float] = []

    def one(i: int) -> bool:
        argv = [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "--memory",
            "1g",
            "-e",
            f"SRC={code}// {i}\n",
            "-e",
            "HOME=/tmp",
            "-e",
            "GOCACHE=/tmp/gc",
            "-e",
            "GO111MODULE=off",
            tag,
            "sh",
            "-c",
            script,
        ]
        res = subprocess.run(argv, capture_output=True, timeout=300, check=False)
        text = res.stdout.decode()
        if "@@B " in text:
            builds.append(int(text.rsplit("@@B ", 1)[1].split()[0]) / 1e6)
        outs = text.split("@@\n")
        return res.returncode == 0 and all(
            outs[k].split() == c["stdout"].split() for k, c in enumerate(cases)
        )

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        ok = list(pool.map(one, range(n)))
    wall = time.perf_counter() - t0
    return {
        "wall_s": round(wall, 3),
        "samples_per_s": round(n / wall, 3),
        "passed": sum(ok),
        "build_s": round(statistics.median(builds), 3) if builds else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--skip", default="", help="contenders to skip (comma-separated)")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    tag = image_tag()
    summary: dict[str, Any] = {}
    for lang in args.langs.split(","):
        out: dict[str, Any] = {"lang": lang, "n": args.n, "concurrency": args.concurrency}
        for name, fn in (
            (
                "verifiers_docker",
                lambda lang=lang: run_verifiers(lang, args.n, args.concurrency, "docker"),
            ),
            (
                "verifiers_local",
                lambda lang=lang: run_verifiers(lang, args.n, args.concurrency, "local"),
            ),
            ("docker_run", lambda lang=lang: run_docker_run(lang, args.n, args.concurrency, tag)),
        ):
            if name not in skip:
                out[name] = fn()
        peer = out.get("docker_run")
        for ours in ("verifiers_docker", "verifiers_local"):
            mine = out.get(ours)
            if peer and mine:
                mine["ratio"] = round(mine["samples_per_s"] / peer["samples_per_s"], 2)
                per_peer = peer["wall_s"] * args.concurrency / args.n - (peer.get("build_s") or 0)
                per_mine = mine["wall_s"] * args.concurrency / args.n - (mine.get("build_s") or 0)
                if per_mine > 0 and per_peer > 0:
                    mine["run_ratio"] = round(per_peer / per_mine, 2)
        print(json.dumps(out), flush=True)
        summary[lang] = {k: v.get("ratio") for k, v in out.items() if isinstance(v, dict)}
    print(
        json.dumps(
            {"summary": summary, "machine": platform.node(), "python": sys.version.split()[0]}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
