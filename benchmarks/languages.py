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

``cpu_per_sample_s`` does not move with the machine's load (wall time does: eight agents share
two cores here): the CPU seconds of the timed batch divided by its samples. Ours: this
process's own CPU plus every process below it (the local backend's bubblewrap runners, read
from ``/proc``) or the pool's containers (their cpuacct cgroups). The peer's: its containers'
cgroups (read at the end of each container's script) plus the ``docker`` CLI processes; the
Docker daemon's and runc's share is in neither side (it is larger for the peer, which starts a
container per sample). ``cpu_ratio`` = peer CPU per sample / ours: the gate to compare on a
loaded machine.

Usage::

    python benchmarks/languages.py [--langs cpp,go] [--n 8] [--concurrency 2]

Prints one JSON line per language (``verifiers_docker``, ``verifiers_local``, ``docker_run``:
each with ``samples_per_s``, ``build_s``, ``cpu_per_sample_s``; ours with ``ratio``,
``run_ratio`` and ``cpu_ratio`` against ``docker_run``; target >= 10) and a summary line with
the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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
    # the same type check as ours (tsc's own CLI; no start-up snapshot)
    "typescript": "cd /tmp && node /opt/npm/node_modules/typescript/bin/tsc --pretty false"
    " --target es2020 --module commonjs --lib es2020 --types node"
    " --typeRoots /opt/npm/node_modules/@types --skipLibCheck --outDir /tmp /tmp/s.ts"
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


def _tree_cpu() -> float:
    """CPU seconds of this process and all its live descendants (each one's own time plus its
    waited-for children's: nothing counted twice)."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    spent: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        spent[int(entry)] = sum(int(x) for x in fields[11:15]) / tick
    me = os.getpid()
    total = 0.0
    for pid in spent:
        p = pid
        while p not in (0, 1, me):
            p = parent.get(p, 0)
        if p == me:
            total += spent[pid]
    return total


def _cgroup_cpu(container_id: str) -> float:
    """CPU seconds a container has used (cgroup v1 cpuacct or v2 cpu.stat)."""
    for path, scale in (
        (f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage", 1e-9),
        (f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat", 1e-6),
        (f"/sys/fs/cgroup/docker/{container_id}/cpu.stat", 1e-6),
    ):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        if path.endswith("cpu.stat"):
            text = text.split("usage_usec", 1)[1].split()[0]
        return int(text.strip()) * scale
    return 0.0


def _pool_cpu() -> float:
    """CPU seconds of this process's warm-pool containers (by the pool's owner label)."""
    from verifiers.sandbox._docker import OWNER_LABEL, owner_label

    done = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"label={OWNER_LABEL}={owner_label()}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return sum(_cgroup_cpu(cid) for cid in done.stdout.split())


def run_verifiers(lang: str, n: int, concurrency: int, sandbox: str) -> dict[str, Any]:
    """One engine (one warm pool) for the warm-up and the timed batch: ``verifiers.score``
    makes a fresh engine per call, so warming with it warmed a pool the timed run never saw
    (the first version of this benchmark timed a pool start with every batch)."""
    import asyncio

    from verifiers.engine import Engine, EngineSettings

    batch = items(lang, n + concurrency)
    warm, timed = batch[:concurrency], batch[concurrency:]

    def cpu() -> float:
        return _tree_cpu() + (_pool_cpu() if sandbox == "docker" else 0.0)

    async def go() -> tuple[float, float, list[Any]]:
        settings = EngineSettings.from_env(sandbox=sandbox, concurrency=concurrency, retries=0)
        async with Engine(settings) as engine:
            await engine.score(warm)  # one runner per slot started and used once
            c0 = cpu()
            t0 = time.perf_counter()
            results = await engine.score(timed)
            wall = time.perf_counter() - t0
            return wall, cpu() - c0, results

    wall, spent, results = asyncio.run(go())
    builds = [float(r.details.get("build_s") or 0) for r in results if r.details]
    return {
        "wall_s": round(wall, 3),
        "samples_per_s": round(n / wall, 3),
        "passed": sum(r.status == "pass" for r in results),
        "build_s": round(statistics.median(builds), 3) if builds else None,
        "cpu_per_sample_s": round(spent / n, 3),
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
        # the container's own CPU (its cgroup, as the container sees it)
        ' && echo "@@C $(cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null'
        " || echo $(( $(sed -n 's/usage_usec //p' /sys/fs/cgroup/cpu.stat) * 1000 )))\""
    )
    builds: list[float] = []
    inside: list[float] = []

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
        if "@@C " in text:
            inside.append(int(text.rsplit("@@C ", 1)[1].split()[0]) / 1e9)
        outs = text.split("@@\n")
        return res.returncode == 0 and all(
            outs[k].split() == c["stdout"].split() for k, c in enumerate(cases)
        )

    cli0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        ok = list(pool.map(one, range(n)))
    wall = time.perf_counter() - t0
    cli1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli = cli1.ru_utime + cli1.ru_stime - cli0.ru_utime - cli0.ru_stime
    return {
        "wall_s": round(wall, 3),
        "samples_per_s": round(n / wall, 3),
        "passed": sum(ok),
        "build_s": round(statistics.median(builds), 3) if builds else None,
        "cpu_per_sample_s": round((sum(inside) + cli) / n, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--skip", default="", help="contenders to skip (comma-separated)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
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
                if mine.get("cpu_per_sample_s") and peer.get("cpu_per_sample_s"):
                    mine["cpu_ratio"] = round(
                        peer["cpu_per_sample_s"] / mine["cpu_per_sample_s"], 2
                    )
        print(json.dumps(out), flush=True)
        summary[lang] = {
            k: {"ratio": v.get("ratio"), "cpu_ratio": v.get("cpu_ratio")}
            for k, v in out.items()
            if isinstance(v, dict) and k != "docker_run"
        }
    print(
        json.dumps(
            {
                "summary": summary,
                "loadavg_before": [round(x, 1) for x in load_before],
                "loadavg_after": [round(x, 1) for x in os.getloadavg()],
                "machine": platform.node(),
                "python": sys.version.split()[0],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
