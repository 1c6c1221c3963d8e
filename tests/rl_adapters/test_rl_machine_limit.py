"""The machine-wide limit holds across real processes, and a dead holder frees its slot."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rl_helpers import max_overlap
from verifiers.rl_adapters import MachineSlots

HERE = Path(__file__).resolve().parent

CHILD = textwrap.dedent(
    """
    import json, os, pathlib, sys, time
    import rl_helpers
    from verifiers import EngineSettings
    from verifiers.rl_adapters import Scorer

    log_path, limit, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    machine = None if limit == "none" else int(limit)
    task = {"verifier": "rltest.slow", "spec": {"sleep_s": 0.25, "log_path": log_path}}
    # start together, as ranks do after a collective: wait until every rank is ready
    barrier = pathlib.Path(log_path + ".ready")
    barrier.mkdir(exist_ok=True)
    (barrier / str(os.getpid())).touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < ranks and time.monotonic() < deadline:
        time.sleep(0.01)
    with Scorer(EngineSettings(concurrency=4, sandbox="none", workers=1),
                machine_concurrency=machine, machine_key="limit-test") as scorer:
        results = scorer.score([{"completion": "x" * i, "task": task} for i in range(6)])
    print(json.dumps([r.status for r in results]))
    """
)


def _run_ranks(tmp_path: Path, limit: str, ranks: int = 3) -> tuple[Path, list[str]]:
    log = tmp_path / f"log-{limit}.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "VERIFIERS_LOCK_DIR": str(tmp_path),
        "LOCAL_WORLD_SIZE": str(ranks),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(log), limit, str(ranks)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(ranks)
    ]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outs.append(out.strip())
    return log, outs


def test_limit_is_per_machine_not_per_rank(tmp_path: Path) -> None:
    log, outs = _run_ranks(tmp_path, "2")
    assert all(o == '["fail", "pass", "fail", "pass", "fail", "pass"]' for o in outs), outs
    assert max_overlap(str(log)) == 2  # 3 ranks x concurrency 4, capped at 2 machine-wide
    # the control: without the limit the same ranks overlap far beyond 2
    log, _ = _run_ranks(tmp_path, "none")
    assert max_overlap(str(log)) > 4


def test_auto_follows_local_world_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.rl_adapters import Scorer

    from verifiers import EngineSettings

    monkeypatch.setenv("VERIFIERS_LOCK_DIR", str(tmp_path))
    monkeypatch.delenv("VERIFIERS_MACHINE_CONCURRENCY", raising=False)
    for name in ("LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert Scorer(EngineSettings(concurrency=3)).slots is None
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    slots = Scorer(EngineSettings(concurrency=3)).slots
    assert slots is not None and slots.slots == 3
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    monkeypatch.setenv("LOCAL_SIZE", "2")  # the DeepSpeed launcher's name for it
    slots = Scorer(EngineSettings(concurrency=3)).slots
    assert slots is not None and slots.slots == 3
    monkeypatch.setenv("VERIFIERS_MACHINE_CONCURRENCY", "0")
    assert Scorer(EngineSettings(concurrency=3)).slots is None
    monkeypatch.setenv("VERIFIERS_MACHINE_CONCURRENCY", "5")
    slots = Scorer(EngineSettings(concurrency=3)).slots
    assert slots is not None and slots.slots == 5


def test_slots_exclude_within_a_process_and_free_on_holder_death(tmp_path: Path) -> None:
    slots = MachineSlots(2, key="death", lock_dir=tmp_path)
    a, b = slots.try_acquire(), slots.try_acquire()
    assert a is not None and b is not None
    assert slots.try_acquire() is None
    slots.release(a)
    slots.release(b)
    # another process takes both slots and is killed with SIGKILL while holding them
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from verifiers.rl_adapters import MachineSlots; from pathlib import Path;"
            "s=MachineSlots(2,key='death',lock_dir=Path(sys.argv[1]));"
            "assert s.try_acquire() is not None and s.try_acquire() is not None;"
            "print('held',flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    with holder:  # closes its stdout pipe
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert slots.try_acquire() is None
        holder.kill()
        holder.wait()
    fd = slots.try_acquire()
    assert fd is not None
    slots.release(fd)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        MachineSlots(0)
    with pytest.raises(ValueError):
        MachineSlots(1, key="../etc")


def test_server_joins_the_machine_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx
    from rl_helpers import LiveServer
    from verifiers.rl_adapters.server import ServerSettings

    from verifiers import EngineSettings

    monkeypatch.setenv("VERIFIERS_LOCK_DIR", str(tmp_path))
    log = tmp_path / "server.jsonl"
    task = {"verifier": "rltest.slow", "spec": {"sleep_s": 0.1, "log_path": str(log)}}
    settings = ServerSettings(
        engine=EngineSettings(concurrency=8, sandbox="none", workers=1), machine_concurrency=2
    )
    with LiveServer(settings) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        body = {"trajectories": [{"completion": "x" * i, "task": task} for i in range(8)]}
        results = client.post("/v1/score", json=body).json()["results"]
        assert [r["reward"] for r in results] == [float(i % 2) for i in range(8)]
        assert "verifiers_machine_slots 2.0" in client.get("/metrics").text
    assert max_overlap(str(log)) == 2


@pytest.mark.rl
@pytest.mark.slow
def test_auto_limit_holds_across_ray_actors_on_one_node(tmp_path: Path) -> None:
    """veRL reward workers and OpenRLHF actors are Ray actors: no LOCAL_WORLD_SIZE there.
    Two real actors with the default ``machine_concurrency="auto"`` share one node budget."""
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    log = tmp_path / "ray.jsonl"
    runtime_env = {
        "env_vars": {
            "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "VERIFIERS_LOCK_DIR": str(tmp_path),
        }
    }
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
    try:

        @ray.remote(num_cpus=0)
        class Worker:
            def score(self, log_path: str) -> tuple[bool, list[str]]:
                import rl_helpers  # noqa: F401
                from verifiers.rl_adapters import Scorer

                from verifiers import EngineSettings

                task = {"verifier": "rltest.slow", "spec": {"sleep_s": 0.25, "log_path": log_path}}
                settings = EngineSettings(concurrency=2, sandbox="none", workers=1)
                with Scorer(settings, machine_key="ray-test") as scorer:
                    limited = scorer.slots is not None
                    results = scorer.score(
                        [{"completion": "x" * i, "task": task} for i in range(6)]
                    )
                return limited, [r.status for r in results]

        workers = [Worker.remote() for _ in range(2)]  # type: ignore[attr-defined]
        outs = ray.get([w.score.remote(str(log)) for w in workers], timeout=240)
    finally:
        ray.shutdown()
    assert all(limited for limited, _ in outs)
    assert all(s != "error" for _, statuses in outs for s in statuses)
    assert max_overlap(str(log)) <= 2  # per node, not 2 per actor


def test_auto_turns_on_in_a_ray_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from verifiers import EngineSettings
    from verifiers._machine import machine_slots_for

    for name in ("LOCAL_WORLD_SIZE", "LOCAL_SIZE", "VERIFIERS_MACHINE_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VERIFIERS_LOCK_DIR", str(tmp_path))
    settings = EngineSettings(concurrency=3)
    monkeypatch.delenv("RAY_RAYLET_PID", raising=False)
    assert machine_slots_for("auto", settings.concurrency, "k") is None
    monkeypatch.setenv("RAY_RAYLET_PID", "4242")
    slots = machine_slots_for("auto", settings.concurrency, "k")
    assert slots is not None and slots.slots == 3
