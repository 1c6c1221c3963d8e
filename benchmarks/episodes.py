"""Episode overhead per tool call: ``await ep.run(["true"])`` in a warm episode, against
``docker exec <container> true`` (the docker SDK, one exec per call into one running container,
the usual way agent harnesses run a tool call) measured in the same run.

Modes (``--calls N`` each, sequential, after ``--warmup`` calls):

  sandbox/local    the same call on a bare sandbox session (what the episode layer adds)
  episode/local    Engine(sandbox="local").episode(...).run(["true"])   (bubblewrap runner)
  episode/docker   Engine(sandbox="docker").episode(...).run(["true"])  (warm container pool)
  docker exec      container.exec_run(["true"]) into a running container of the same image

Prints one JSON line per mode (median, p90, mean in ms) and a summary line; ``--markdown``
also prints the table for docs/benchmarks. The bare-session modes also report CPU per call:
``sandbox_cpu_ms`` (runner, zygote and the reaped jobs, from ``/proc/<pid>/stat`` of the
sandbox's processes: load-independent, unlike wall time on a shared machine) and
``host_cpu_ms`` (this process).

    python benchmarks/episodes.py --calls 200 --markdown

``--no-peer`` leaves out the ``docker exec`` mode (minutes under load); ``--ab OTHER`` runs
the bare-session and episode modes alternately from this checkout and from ``OTHER`` (a
checkout with its own ``.venv``, e.g. the code before a change), ``--rounds`` times, and
prints one JSON line per side with the medians over rounds: an old/new comparison in one run,
under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from verifiers import Engine, EngineSettings

TASK = {
    "id": "bench",
    "task": {
        "verifier": "code.workspace",
        "spec": {
            "files": {"a.py": "x = 1\n"},
            "io": [{"name": "x", "argv": ["true"], "stdout": ""}],
        },
    },
}


def stats(mode: str, times: list[float]) -> dict[str, Any]:
    ms = sorted(t * 1000 for t in times)
    return {
        "mode": mode,
        "calls": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(len(ms) * 0.9) - 1], 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


async def episode_mode(backend: str, calls: int, warmup: int) -> dict[str, Any]:
    async with Engine(EngineSettings(sandbox=backend)) as engine:
        async with engine.episode(
            TASK, max_turns=calls + warmup + 5, max_commands=calls + warmup + 5
        ) as ep:
            if ep.lost:
                raise SystemExit(f"{backend}: {ep.lost}")
            for _ in range(warmup):
                await ep.run(["true"])
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                out = await ep.run(["true"])
                times.append(time.perf_counter() - started)
                assert out.returncode == 0, out
    return stats(f"episode/{backend}", times)


def _sandbox_pids(provider: Any, backend: str) -> list[int]:
    """The processes of the provider's runners: its containers' (docker), or this process's
    descendants (local: bubblewrap, runner, zygote)."""
    if backend == "docker":
        pids: list[int] = []
        for cid in list(provider._containers):
            top = provider._client.api.top(cid)
            at = top["Titles"].index("PID")
            pids += [int(row[at]) for row in top["Processes"]]
        return pids
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cpu_ms(pids: list[int]) -> float:
    """utime + stime + reaped children's, in ms, summed over ``pids``."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(x) for x in fields[11:15])
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


async def raw_mode(backend: str, calls: int, warmup: int) -> dict[str, Any]:
    """The same call on the sandbox session directly: what the episode layer adds is the
    difference."""
    from verifiers.sandbox import open_provider

    provider = open_provider(backend)
    try:
        async with provider.session("python") as sb:
            for _ in range(warmup):
                await sb.exec(["true"])
            pids = _sandbox_pids(provider, backend)
            sandbox_cpu, host_cpu = _cpu_ms(pids), time.process_time()
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                out = await sb.exec(["true"])
                times.append(time.perf_counter() - started)
                assert out.returncode == 0
            sandbox_cpu = (_cpu_ms(pids) - sandbox_cpu) / calls
            host_cpu = (time.process_time() - host_cpu) * 1000 / calls
    finally:
        await provider.close()
    row = stats(f"sandbox/{backend} exec", times)
    row.update(sandbox_cpu_ms=round(sandbox_cpu, 2), host_cpu_ms=round(host_cpu, 2))
    return row


def docker_exec_mode(calls: int, warmup: int) -> dict[str, Any]:
    import docker

    client = docker.from_env()
    image = "verifiers-sandbox/python:latest"
    container = client.containers.run(
        image,
        ["sleep", "600"],
        detach=True,
        network_mode="none",
        labels={"verifiers-bench": "episodes"},
    )
    try:
        for _ in range(warmup):
            container.exec_run(["true"])
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            code, _ = container.exec_run(["true"])
            times.append(time.perf_counter() - started)
            assert code == 0
    finally:
        container.remove(force=True)
    return stats("docker exec", times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--backends", default="local,docker")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-peer", action="store_true", help="skip the docker exec mode")
    parser.add_argument("--ab", metavar="CHECKOUT", help="alternate with another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.ab:
        ab(args)
        return
    rows = []
    for backend in [b for b in args.backends.split(",") if b]:
        rows.append(asyncio.run(raw_mode(backend, args.calls, args.warmup)))
        print(json.dumps(rows[-1]), flush=True)
        rows.append(asyncio.run(episode_mode(backend, args.calls, args.warmup)))
        print(json.dumps(rows[-1]), flush=True)
    if args.no_peer:
        return
    rows.append(docker_exec_mode(args.calls, args.warmup))
    print(json.dumps(rows[-1]), flush=True)
    peer = rows[-1]["median_ms"]
    summary = {r["mode"]: round(peer / r["median_ms"], 2) for r in rows[:-1]}
    print(json.dumps({"summary": "docker exec median / episode median", **summary}))
    if args.markdown:
        print("| mode | median ms | p90 ms | mean ms |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r['mode']} | {r['median_ms']} | {r['p90_ms']} | {r['mean_ms']} |")


def ab(args: argparse.Namespace) -> None:
    """Old/new rounds, interleaved: each round runs both sides once per backend."""
    import subprocess
    import sys

    here = Path(__file__).resolve().parents[1]
    sides = {"this": here, "other": Path(args.ab).resolve()}
    seen: dict[str, dict[str, list[dict[str, Any]]]] = {k: {} for k in sides}
    for _ in range(args.rounds):
        for side, root in sides.items():
            command = [str(root / ".venv/bin/python"), str(Path(__file__).resolve())]
            command += ["--calls", str(args.calls), "--warmup", str(args.warmup)]
            command += ["--backends", args.backends, "--no-peer"]
            load = os.getloadavg()[0]
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=True)
            for line in done.stdout.splitlines():
                row = json.loads(line)
                row["load"] = round(load, 1)
                seen[side].setdefault(row["mode"], []).append(row)
    for side, modes in seen.items():
        summary: dict[str, Any] = {"side": side, "checkout": str(sides[side])}
        for mode, rows in modes.items():
            summary[mode] = {
                key: statistics.median(r[key] for r in rows)
                for key in ("median_ms", "sandbox_cpu_ms", "host_cpu_ms")
                if key in rows[0]
            }
        summary["load"] = [r["load"] for rows in modes.values() for r in rows][:: len(modes)]
        print(json.dumps(summary), file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()
