"""Sandbox throughput: the warm pool and the local backend against the usual peers, same run.

Runs N short Python programs (each prints a line; every fifth raises) with C-way concurrency:

  (a) docker warm pool      verifiers.sandbox DockerProvider: one session + exec per program
  (b) local backend         verifiers.sandbox LocalProvider (bubblewrap): same
  (c) docker run --rm       one container per program (SWE-bench-style harnesses), docker SDK
  (d) docker exec           one exec per program into one running container, docker SDK
  (e) plain subprocess      /usr/bin/python3 per program, no isolation at all
  (f) bare fork-server      one warm interpreter that forks per program, no isolation

``--baseline DIR`` adds (a0): (a) with another copy of the ``sandbox/`` package (e.g. an
earlier commit's, extracted to ``/tmp/base/sandbox_before``; it is imported under its folder's
name), run just before (a), for before/after in the same run;
``--rounds N`` repeats (a0), (a) and (f) N times, interleaved, and keeps each one's best round.

Every output is checked (right line printed, non-zero exit for the raising programs), so a
mode that is fast because it is wrong fails loudly. Prints one JSON line per mode and a final
JSON summary line; ``--markdown`` also prints the table for docs/benchmarks.

    python benchmarks/sandbox_throughput.py --programs 500 --concurrency 2 --markdown
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

PYTHON = "/usr/bin/python3"


def program(i: int) -> tuple[str, bytes, bool]:
    """Source, expected stdout, whether it must fail."""
    if i % 5 == 4:
        return f"print({i})\nraise ValueError('program {i} fails')", f"{i}\n".encode(), True
    return f"x = {i}\nprint(x * x)", f"{i * i}\n".encode(), False


@dataclass
class Outcome:
    stdout: bytes
    returncode: int


@dataclass
class ModeResult:
    mode: str
    programs: int
    seconds: float
    latencies: list[float]
    errors: int

    def row(self) -> dict[str, float | int | str]:
        lat = sorted(self.latencies)
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else 0.0
        return {
            "mode": self.mode,
            "programs": self.programs,
            "seconds": round(self.seconds, 3),
            "programs_per_s": round(self.programs / self.seconds, 2) if self.seconds else 0.0,
            "p50_ms": round(1000 * statistics.median(lat), 1) if lat else 0.0,
            "p95_ms": round(1000 * p95, 1),
            "wrong": self.errors,
        }


async def drive(
    mode: str, count: int, concurrency: int, run_one: Callable[[str], Awaitable[Outcome]]
) -> ModeResult:
    queue = list(range(count))
    latencies: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal errors
        while queue:
            i = queue.pop()
            source, expected, fails = program(i)
            started = time.perf_counter()
            outcome = await run_one(source)
            latencies.append(time.perf_counter() - started)
            if outcome.stdout != expected or (outcome.returncode != 0) != fails:
                errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ModeResult(mode, count, time.perf_counter() - started, latencies, errors)


# -- (a), (b): verifiers.sandbox -----------------------------------------------------------------


async def mode_provider(mode: str, provider, count: int, concurrency: int) -> ModeResult:  # type: ignore[no-untyped-def]
    await provider.warm("python", concurrency)

    async def run_one(source: str) -> Outcome:
        async with provider.session("python") as sb:
            result = await sb.exec([PYTHON, "-c", source])
        return Outcome(result.stdout, result.returncode)

    try:
        await drive(mode, min(count, 20), concurrency, run_one)  # warm-up, not measured
        return await drive(mode, count, concurrency, run_one)
    finally:
        await provider.close()


# -- (c), (d): docker SDK peers ------------------------------------------------------------------


def _image() -> str:
    from verifiers.sandbox import SandboxSettings
    from verifiers.sandbox._images import get_image, image_tag

    settings = SandboxSettings()
    return image_tag(get_image("python", settings), settings)


async def mode_docker_run(count: int, concurrency: int) -> ModeResult:
    import docker

    client = docker.from_env(timeout=120)
    image = _image()

    def blocking(source: str) -> Outcome:
        container = client.containers.create(
            image, [PYTHON, "-c", source], network_mode="none", labels={"bench": "run"}
        )
        try:
            container.start()
            status = container.wait(timeout=60)
            out = container.logs(stdout=True, stderr=False)
            return Outcome(out, int(status["StatusCode"]))
        finally:
            container.remove(force=True)

    async def run_one(source: str) -> Outcome:
        return await asyncio.to_thread(blocking, source)

    try:
        return await drive("c_docker_run", count, concurrency, run_one)
    finally:
        client.close()


async def mode_docker_exec(count: int, concurrency: int) -> ModeResult:
    import docker

    client = docker.from_env(timeout=120)
    container = client.containers.run(
        _image(), ["sleep", "infinity"], detach=True, network_mode="none", labels={"bench": "exec"}
    )

    def blocking(source: str) -> Outcome:
        result = client.api.exec_create(container.id, [PYTHON, "-c", source], stderr=False)
        out = client.api.exec_start(result["Id"])
        code = client.api.exec_inspect(result["Id"])["ExitCode"]
        return Outcome(out, int(code))

    async def run_one(source: str) -> Outcome:
        return await asyncio.to_thread(blocking, source)

    try:
        return await drive("d_docker_exec", count, concurrency, run_one)
    finally:
        container.remove(force=True)
        client.close()


# -- (e): plain subprocess -----------------------------------------------------------------------


async def mode_subprocess(count: int, concurrency: int) -> ModeResult:
    async def run_one(source: str) -> Outcome:
        proc = await asyncio.create_subprocess_exec(
            PYTHON,
            "-c",
            source,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        return Outcome(out, proc.returncode or 0)

    return await drive("e_subprocess", count, concurrency, run_one)


# -- (f): bare fork-server -----------------------------------------------------------------------

FORK_SERVER = r"""
import os, struct, sys, traceback
rd, wr = sys.stdin.buffer, sys.stdout.buffer
def read(n):
    data = b""
    while len(data) < n:
        chunk = rd.read(n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data
while True:
    (n,) = struct.unpack(">I", read(4))
    source = read(n).decode()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        code = 0
        try:
            exec(compile(source, "<program>", "exec"), {"__name__": "__main__"})
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    wr.write(struct.pack(">II", os.waitstatus_to_exitcode(status) & 0xFF, len(out)) + out)
    wr.flush()
"""


async def mode_fork_server(count: int, concurrency: int) -> ModeResult:
    servers = [
        await asyncio.create_subprocess_exec(
            PYTHON,
            "-c",
            FORK_SERVER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(concurrency)
    ]
    free: asyncio.Queue[asyncio.subprocess.Process] = asyncio.Queue()
    for server in servers:
        free.put_nowait(server)

    async def run_one(source: str) -> Outcome:
        server = await free.get()
        try:
            assert server.stdin is not None and server.stdout is not None
            data = source.encode()
            server.stdin.write(struct.pack(">I", len(data)) + data)
            await server.stdin.drain()
            code, size = struct.unpack(">II", await server.stdout.readexactly(8))
            out = await server.stdout.readexactly(size)
            return Outcome(out, code)
        finally:
            free.put_nowait(server)

    try:
        return await drive("f_fork_server", count, concurrency, run_one)
    finally:
        for server in servers:
            server.kill()
            await server.wait()


def _baseline_provider(folder: str, args: argparse.Namespace) -> object:
    """A DockerProvider from another copy of the sandbox package (imported under its folder's
    name, so it lives next to this checkout's ``verifiers.sandbox``)."""
    import importlib
    from pathlib import Path

    path = Path(folder).resolve()
    sys.path.insert(0, str(path.parent))
    docker_mod = importlib.import_module(f"{path.name}._docker")
    settings_mod = importlib.import_module(f"{path.name}._settings")
    settings = settings_mod.SandboxSettings(
        pool_size=args.concurrency, jobs_per_worker=args.jobs_per_worker
    )
    return docker_mod.DockerProvider(settings)


async def main(args: argparse.Namespace) -> list[ModeResult]:
    from verifiers.sandbox import LocalProvider, SandboxSettings

    settings = SandboxSettings(pool_size=args.concurrency, jobs_per_worker=args.jobs_per_worker)
    results: list[ModeResult] = []
    wanted = set(args.modes)
    order = ["a0"] if args.baseline and "a" in wanted else []
    order += ["a", "b", "c", "d", "e", "f"]
    best: dict[str, ModeResult] = {}
    for round_no in range(max(1, args.rounds)):
        for name in order:
            if name != "a0" and name not in wanted:
                continue
            if round_no and name not in ("a0", "a", "f"):
                continue
            res = await _run_mode(name, args, settings, LocalProvider)
            print(json.dumps({"round": round_no, **res.row()}), flush=True)
            kept = best.get(res.mode)
            if kept is None or res.seconds < kept.seconds or res.errors:
                best[res.mode] = res
    results.extend(best.values())
    return results


async def _run_mode(name: str, args: argparse.Namespace, settings, local_cls) -> ModeResult:  # type: ignore[no-untyped-def]
    if name == "a0":
        provider = _baseline_provider(args.baseline, args)
        return await mode_provider(
            "a0_docker_pool_baseline", provider, args.programs, args.concurrency
        )
    if name == "a":
        from verifiers.sandbox._docker import DockerProvider

        return await mode_provider(
            "a_docker_pool", DockerProvider(settings), args.programs, args.concurrency
        )
    if name == "b":
        local = local_cls(settings.model_copy(update={"local_isolation": "bwrap"}))
        return await mode_provider("b_local_bwrap", local, args.programs, args.concurrency)
    if name == "c":
        return await mode_docker_run(args.peer_programs or args.programs, args.concurrency)
    if name == "d":
        return await mode_docker_exec(args.peer_programs or args.programs, args.concurrency)
    if name == "e":
        return await mode_subprocess(args.programs, args.concurrency)
    return await mode_fork_server(args.programs, args.concurrency)


def _ratio(rows: dict[str, dict[str, float | int | str]], a: str, b: str) -> float | None:
    if a in rows and b in rows and float(rows[b]["programs_per_s"]):
        return round(float(rows[a]["programs_per_s"]) / float(rows[b]["programs_per_s"]), 2)
    return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--programs", type=int, default=500)
    parser.add_argument("--peer-programs", type=int, default=0, help="cap for (c) and (d)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--jobs-per-worker", type=int, default=200)
    parser.add_argument("--modes", default="abcdef")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--baseline", default="", help="another sandbox/ copy to run as (a0)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat (a0), (a), (f)")
    arguments = parser.parse_args()
    measured = asyncio.run(main(arguments))
    rows = {r.mode: r.row() for r in measured}
    summary = {
        "benchmark": "sandbox_throughput",
        "programs": arguments.programs,
        "concurrency": arguments.concurrency,
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "python": subprocess.run(
            [PYTHON, "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "rows": list(rows.values()),
        "a_over_c": _ratio(rows, "a_docker_pool", "c_docker_run"),
        "a_over_d": _ratio(rows, "a_docker_pool", "d_docker_exec"),
        "a_over_e": _ratio(rows, "a_docker_pool", "e_subprocess"),
        "a_over_f": _ratio(rows, "a_docker_pool", "f_fork_server"),
        "a0_over_f": _ratio(rows, "a0_docker_pool_baseline", "f_fork_server"),
        "a_over_a0": _ratio(rows, "a_docker_pool", "a0_docker_pool_baseline"),
        "rounds": arguments.rounds,
        "b_over_e": _ratio(rows, "b_local_bwrap", "e_subprocess"),
    }
    print(json.dumps(summary), flush=True)
    if any(r.errors for r in measured):
        print("some programs gave wrong results", file=sys.stderr)
        sys.exit(1)
    if arguments.markdown:
        print(
            "\n| mode | programs | programs/s | p50 ms | p95 ms | wrong |\n|---|---|---|---|---|---|"
        )
        for row in rows.values():
            print(
                f"| {row['mode']} | {row['programs']} | {row['programs_per_s']} | {row['p50_ms']} "
                f"| {row['p95_ms']} | {row['wrong']} |"
            )
