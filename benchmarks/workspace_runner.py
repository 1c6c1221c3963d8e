"""CPU cost of one hidden-test run of ``code.workspace``: the two-process runner against the
single-process one it replaced, interleaved A/B rounds in one run.

Each round lays out a task's starting tree plus its honest solution in a temp dir, as the
verification sandbox does, and runs the runner there (``python3 -I .verifiers/_pytest_run.py``,
job on stdin) on this machine's ``python3`` with pytest; it checks that every hidden test
passed and takes the CPU seconds of the runner and all its children (``RUSAGE_CHILDREN``),
which the machine's load inflates far less than wall time. The old runner is read from git
(``--old-ref``, default the session-14 fork point ``20ea0bf``).

    python benchmarks/workspace_runner.py [--task bugfix-calc] [--rounds 10]

Prints one JSON line: per runner the median CPU ms and wall ms per run, and
``cpu_ratio`` = new / old (what the cost of the trusted/project split is per run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verifiers.domains.workspace import _verifier
from verifiers.domains.workspace._strict import HELPER_MODULE, HELPER_SOURCE, harden_test_source

from verifiers.data import iter_jsonl

ROOT = Path(__file__).resolve().parents[1]


def _tree(files: dict[str, str]) -> str:
    d = tempfile.mkdtemp(prefix="wsbench")
    for path, text in files.items():
        full = os.path.join(d, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        Path(full).write_text(text, encoding="utf-8")
    return d


def _run(tree: str, job: dict[str, object]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(
        ["python3", "-I", ".verifiers/_pytest_run.py"],
        cwd=tree,
        input=json.dumps(job).encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, res.stdout.decode("utf-8", "replace")


def _all_passed(stdout: str, nonce: str, expected: list[str]) -> bool:
    for line in stdout.splitlines():
        if line.startswith(nonce + " "):
            data = json.loads(line[len(nonce) + 1 :])
            if "results" in data:
                results = data["results"]
                return all(results.get(t, {}).get("status") == "passed" for t in expected)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="bugfix-calc")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--old-ref", default="20ea0bf")
    args = parser.parse_args(argv)
    task = next(t for t in iter_jsonl("workspace", "tasks.jsonl") if t["id"] == args.task)
    spec = task["task"]["spec"]
    files = {**spec.get("files", {}), **task["solution"]}
    hardened = {p: harden_test_source(t) for p, t in spec["tests"].items()}
    expected = _verifier.static_test_ids(spec["tests"])
    old_runner = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.old_ref}:domains/workspace/_pytest_run.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    new_tree = _tree({**files, **_verifier._RUNNER_FILES})
    old_tree = _tree(
        {
            **files,
            **hardened,
            ".verifiers/_pytest_run.py": old_runner,
            f".verifiers/{HELPER_MODULE}.py": HELPER_SOURCE,
            ".verifiers/pytest.ini": "[pytest]\n",
        }
    )
    samples: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    for _ in range(args.rounds):
        for name in ("old", "new"):
            nonce = secrets.token_hex(16)
            if name == "new":
                job: dict[str, object] = {"nonce": nonce, "tests": hardened, "timeout_s": 60}
                cpu, wall, out = _run(new_tree, job)
            else:
                job = {"nonce": nonce, "files": sorted(p for p in hardened if p.endswith(".py"))}
                cpu, wall, out = _run(old_tree, job)
            if not _all_passed(out, nonce, expected):
                print(f"{name} runner did not pass {args.task}: {out[-500:]}", file=sys.stderr)
                return 1
            samples[name].append((cpu, wall))
    report: dict[str, object] = {"task": args.task, "rounds": args.rounds}
    for name, rows in samples.items():
        report[f"{name}_cpu_ms"] = round(1000 * statistics.median(c for c, _ in rows), 1)
        report[f"{name}_wall_ms"] = round(1000 * statistics.median(w for _, w in rows), 1)
    report["cpu_ratio"] = round(
        float(report["new_cpu_ms"]) / max(float(report["old_cpu_ms"]), 1e-9),  # type: ignore[arg-type]
        2,
    )
    report["loadavg_1m"] = os.getloadavg()[0]
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
