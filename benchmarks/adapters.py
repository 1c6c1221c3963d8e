"""Adapter overhead and reward-server throughput.

Part 1: a batch of 256 completions scored through each adapter versus ``Engine.score`` called
directly, in the same run, with the same verifier (median of ``--repeats`` after a warm-up).
Target: adapter / engine <= 1.05. The verifiers are cheap on purpose (``answer.numeric`` is
inline, microseconds per item; ``answer.math`` goes through the engine's task path), which is
where an adapter's own cost would show; with a real sandboxed verifier the ratio only moves
closer to 1.

Part 2: ``verifiers serve`` (a separate uvicorn process) on loopback under 1, 8 and 64
concurrent clients, each posting batches to ``/v1/score`` back to back for ``--duration``
seconds: requests/s, items/s, p50 and p95 latency.

Run:  python benchmarks/adapters.py [--repeats 15] [--duration 5] [--batch 16]
Prints one JSON line per measurement, then a summary JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
from verifiers.rl_adapters import Scorer

from verifiers import Engine, EngineSettings

N = 256


def _rows(verifier: str) -> tuple[list[str], list[str], list[str]]:
    prompts = [f"What is {i} + {i}?" for i in range(N)]
    if verifier == "code.tests":
        tests = "def check(f):\n    assert f(1, 2) == 3\n    assert f(0, 0) == 0\n"
        spec = {"tests": {"kind": "assert", "entry_point": "add", "code": tests}}
        completions = [
            f"```python\ndef add(a, b):\n    return a + b + {i % 2}\n```" for i in range(N)
        ]
        tasks = [json.dumps({"verifier": verifier, "spec": spec}) for _ in range(N)]
        return prompts, completions, tasks
    completions = [
        f"Adding them gives {2 * i if i % 3 else 2 * i + 1}. "
        f"The answer is {2 * i if i % 3 else 2 * i + 1}"
        for i in range(N)
    ]
    tasks = [json.dumps({"verifier": verifier, "reference": str(2 * i)}) for i in range(N)]
    return prompts, completions, tasks


def adapter_overhead(verifier: str, repeats: int, sandbox: str) -> list[dict[str, Any]]:
    """Each adapter and the engine, measured round-robin (so drift hits all alike)."""
    from verifiers.rl_adapters import openrlhf, verl
    from verifiers.rl_adapters.deepspeed import DeepSpeedReward
    from verifiers.rl_adapters.trl import TRLRewards

    settings = EngineSettings(sandbox=sandbox, workers=2, concurrency=8)  # type: ignore[arg-type]
    prompts, completions, tasks = _rows(verifier)
    dict_items = [
        {"prompt": p, "completion": c, "task": json.loads(t)}
        for p, c, t in zip(prompts, completions, tasks, strict=True)
    ]
    loop = asyncio.new_event_loop()
    engine = Engine(settings)
    scorer = Scorer(settings, machine_concurrency=None)
    trl_sync = TRLRewards(asynchronous=False, scorer=scorer)
    trl_async = TRLRewards(asynchronous=True, scorer=scorer)
    ds = DeepSpeedReward(scorer=scorer)
    verl_kwargs = {
        "sandbox": sandbox,
        "workers": 2,
        "concurrency": 8,
        "machine_concurrency": None,
    }
    infos = [{"task": t} for t in tasks]
    orlhf = openrlhf.make_reward_func(settings=settings, machine_concurrency=None)
    queries = [p + " " + c for p, c in zip(prompts, completions, strict=True)]

    cases: dict[str, Callable[[], Any]] = {
        "engine.score (direct)": lambda: loop.run_until_complete(engine.score(dict_items)),
        "TRL sync reward func": lambda: trl_sync.funcs[0](
            prompts=list(prompts), completions=list(completions), task=tasks
        ),
        "TRL async reward func": lambda: loop.run_until_complete(
            trl_async.funcs[0](prompts=list(prompts), completions=list(completions), task=tasks)
        ),
        "DeepSpeed reward_fn (tensors)": lambda: ds(prompts, completions, tasks=tasks),
        "veRL compute_score_batch": lambda: verl.compute_score_batch(
            ["bench"] * N, completions, [None] * N, infos, **verl_kwargs
        ),
        "OpenRLHF reward_func (file mode)": lambda: orlhf(queries, prompts, tasks),
    }
    if verifier != "code.tests":  # one call per sample: how veRL's naive manager calls it
        cases["veRL compute_score (256 calls)"] = lambda: [
            verl.compute_score("bench", c, None, i, **verl_kwargs)
            for c, i in zip(completions, infos, strict=True)
        ]

    async def noop() -> None:
        return None

    # the fixed cost every sync adapter call pays: one round trip to the engine's loop thread
    cases["(Scorer thread round trip, no work)"] = lambda: scorer._submit(noop()).result()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm-up: workers, sandboxes, imports
        fn()
    for _ in range(repeats):
        for name, fn in cases.items():
            started = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - started)
    loop.run_until_complete(engine.aclose())
    loop.close()
    scorer.close()
    orlhf.scorer.close()  # type: ignore[attr-defined]
    base = statistics.median(samples["engine.score (direct)"])
    out: list[dict[str, Any]] = []
    for name, values in samples.items():
        median = statistics.median(values)
        row = {
            "bench": "adapter_overhead",
            "verifier": verifier,
            "sandbox": sandbox,
            "adapter": name,
            "n": N,
            "repeats": repeats,
            "median_s": round(median, 6),
            "engine_s": round(base, 6),
            "ratio": round(median / base, 3),
            "overhead_ms_per_item": round(1000 * (median - base) / N, 4),
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _raw_client(
    host: str, port: int, payload: bytes, stop: float, latencies: list[float]
) -> int:
    """One keep-alive HTTP/1.1 connection posting ``payload`` until ``stop``; returns errors.

    A raw asyncio client: httpx's pool itself saturates well below 64 concurrent requests on
    a 2-core machine (even ``GET /healthz`` collapsed), which would measure the load
    generator instead of the server.
    """
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST /v1/score HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    errors = 0
    try:
        while time.perf_counter() < stop:
            started = time.perf_counter()
            writer.write(head + payload)
            await writer.drain()
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            if b" 200 " not in status_line:
                errors += 1
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()
    return errors


async def _load(url: str, clients: int, batch: int, duration: float) -> dict[str, Any]:
    body = {
        "trajectories": [
            {
                "completion": f"The answer is {i}",
                "task": {"verifier": "answer.numeric", "reference": i},
            }
            for i in range(batch)
        ]
    }
    payload = json.dumps(body).encode()
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    started = time.perf_counter()
    stop = started + duration
    errors = sum(
        await asyncio.gather(
            *(_raw_client(host, int(port), payload, stop, latencies) for _ in range(clients))
        )
    )
    elapsed = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    return {
        "bench": "server",
        "clients": clients,
        "batch": batch,
        "requests": len(latencies),
        "errors": errors,
        "req_per_s": round(len(latencies) / elapsed, 1),
        "items_per_s": round(len(latencies) * batch / elapsed, 1),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "p95_ms": round(1000 * p95, 2),
    }


def server_throughput(duration: float, batch: int) -> list[dict[str, Any]]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "verifiers.rl_adapters.server",
            "--port",
            str(port),
            "--sandbox",
            "none",
            "--workers",
            "1",
            "--log-level",
            "warning",
        ],
        env={**os.environ},
    )
    url = f"http://127.0.0.1:{port}"
    out = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        asyncio.run(_load(url, 4, batch, 1.0))  # warm-up
        for clients in (1, 8, 64):
            row = asyncio.run(_load(url, clients, batch, duration))
            print(json.dumps(row), flush=True)
            out.append(row)
    finally:
        proc.terminate()
        proc.wait(30)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--skip-server", action="store_true")
    p.add_argument("--skip-overhead", action="store_true")
    p.add_argument(
        "--code-repeats",
        type=int,
        default=0,
        help="also measure code.tests (local sandbox) with this many repeats (~20 s each here)",
    )
    args = p.parse_args(argv)
    rows = []
    for verifier in () if args.skip_overhead else ("answer.numeric", "answer.math"):
        rows += adapter_overhead(verifier, args.repeats, "none")
    if args.code_repeats:
        rows += adapter_overhead("code.tests", args.code_repeats, "local")
    if not args.skip_server:
        rows += server_throughput(args.duration, args.batch)
    print(
        json.dumps(
            {
                "bench": "summary",
                "cpu_count": os.cpu_count(),
                "python": sys.version.split()[0],
                "max_adapter_ratio": max(
                    (
                        r["ratio"]
                        for r in rows
                        if r["bench"] == "adapter_overhead" and not r["adapter"].startswith("(")
                    ),
                    default=None,
                ),
                "load_avg_1m": os.getloadavg()[0],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
