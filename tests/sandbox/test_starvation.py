"""Machine load is never the model's score: the wall backstop tells starved from slow.

A job's budget is CPU time (``RLIMIT_CPU``), which load does not move; the wall-clock deadline
is only the backstop for jobs that sleep or block. When it fires, the runner decides whether
the machine starved the job (little CPU, long run delay, the CPUs busy with others, its own
priority untouched): then ``ExecResult.starved`` is set and the engine turns the item's
``fail`` into ``error/infra`` (retried, then an abstain). Everything a job can do by itself
(sleep, block, stop, spin on many threads, fork, yield, burst, nice itself, SCHED_IDLE, its
autogroup) stays the model's ``fail``.

The corpus (``datasets/sandbox/deadline_attacks.jsonl``) holds each attack with its verdict on
a quiet machine (``quiet``) and under real load (``under_load``: CPU hogs outside the job, one
session each so that autogroup scheduling weighs them as the separate programs they are).
Each condition is one engine run over the rows (concurrency 1: concurrent rows would load
each other), through a verifier that scores a timed-out job 0 as every domain does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import score_rows

from verifiers import Result, Spec, Trajectory, Verifier, VerifierContext, register

CORPUS = Path(__file__).resolve().parents[2] / "datasets" / "sandbox" / "deadline_attacks.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x]
BACKSTOP_S = 0.8
"""The rows' wall backstop: short, since every row runs into it."""
CPU_S = 0.4
"""The rows' CPU budget. A spinning row uses it up (its fail) within the runner's starvation
grace of 4 x the backstop unless the machine leaves it under 1/8 of a CPU."""

HOG = r"""
import os, sys, time
stop = time.monotonic() + float(sys.argv[2])  # never outlives the test, whatever happens
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        os.setsid()  # a session (autogroup) of its own, as separate programs have
        while time.monotonic() < stop:
            pass
        os._exit(0)
print("ready", flush=True)
while time.monotonic() < stop:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


class ProbeSpec(Spec):
    program: str
    cpu_s: float = CPU_S
    load: bool = False
    """Run the program with the CPU hogs running (they are stopped at all other times, so
    runners restart at full speed between rows)."""


HOGS: list[int] = []
"""The pids of the running test's CPU hogs (see :func:`cpu_hogs`)."""


def _signal_hogs(sig: signal.Signals) -> None:
    for pid in HOGS:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


@register("test.deadline_probe")
class DeadlineProbe(Verifier[ProbeSpec]):
    """Runs the row's program; a timeout is the model's 0, as in every domain."""

    Spec = ProbeSpec
    cacheable = False

    async def verify(self, trajectory: Trajectory, spec: ProbeSpec, ctx: VerifierContext) -> Result:
        async with ctx.sandbox("python", timeout_s=BACKSTOP_S, cpu_s=spec.cpu_s, pids=64) as sb:
            assert not spec.load or HOGS, "a row under load needs the cpu_hogs fixture"
            if spec.load:
                _signal_hogs(signal.SIGCONT)
            try:
                run = await sb.exec(["python3", "-c", spec.program])
            finally:
                if spec.load:
                    _signal_hogs(signal.SIGSTOP)
        if run.timed_out:
            return Result.failed("timed out", details={"starvation": run.starvation})
        return Result.scored(1.0 if run.returncode == 0 else 0.0)


def _score(provider: Any, condition: str, retries: int) -> dict[str, tuple[str, Any]]:
    rows = [
        {
            "id": r["id"],
            "completion": "",
            "task": {
                "verifier": "test.deadline_probe",
                "spec": {
                    "program": r["program"],
                    "cpu_s": r["cpu_s"] or CPU_S,
                    "load": condition == "under_load",
                },
            },
        }
        for r in ROWS
        if r[condition] is not None
    ]

    results = score_rows(provider, rows, retries=retries, retry_backoff_s=0.05, cache=False)
    # An abstain keeps its evidence (the runner's numbers are in the message) for the report.
    return {
        r.id: (
            r.status,
            f"{r.error.kind}: {r.error.message}" if r.error else r.details.get("starvation"),
        )
        for r in results
    }


def _expected(condition: str) -> dict[str, str]:
    return {r["id"]: r[condition] for r in ROWS if r[condition] is not None}


def _verdict(status: str, detail: Any) -> str:
    """``fail``; ``starved`` for an infra abstain or a pass (a slow honest job that the
    runner's grace let finish: the other way load must never become a fail)."""
    if status == "pass" or (status == "error" and str(detail).split(":")[0] == "infra"):
        return "starved"
    return status


@pytest.fixture()
def cpu_hogs() -> Iterator[None]:
    """Eight spinning processes per CPU, outside the job, each in its own session; stopped
    until a row under load runs (:class:`DeadlineProbe` continues them for its job only)."""
    count = 8 * len(os.sched_getaffinity(0))
    hog = subprocess.Popen(
        [sys.executable, "-c", HOG, str(count), "120"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert hog.stdout is not None and hog.stdout.readline() == b"ready\n"
        HOGS[:] = _descendants(hog.pid)
        assert len(HOGS) == count
        _signal_hogs(signal.SIGSTOP)
        yield
    finally:
        HOGS.clear()
        for pid in _descendants(hog.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        hog.kill()
        hog.wait()
        hog.stdout.close()


def _descendants(parent: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_jobs_own_doings_stay_its_fail(new_provider: Any) -> None:
    # This machine is shared, and load from outside the test is real load: a spinning row
    # it starves is rightly retried (as the engine retries every starved fail). An attack
    # that made itself look starved would look so on every try.
    verdicts = _score(new_provider(pool_size=1), "quiet", retries=2)
    assert {k: _verdict(*v) for k, v in verdicts.items()} == _expected("quiet"), verdicts


def test_a_starved_job_abstains_and_a_self_inflicted_wait_does_not(
    new_provider: Any, cpu_hogs: None
) -> None:
    # Retried as the engine retries by default (EngineSettings.retries=2): an attack must look
    # starved on every try to abstain, in production as here. A single try also abstained on
    # a rare starved flood (ci20: output-flood, CPU budget 0.1 s, got < 0.1 CPU-s in the 3.2 s
    # grace), a verdict the retry, under the same load, turns back into the fail.
    verdicts = _score(new_provider(pool_size=1), "under_load", retries=2)
    print(json.dumps(verdicts))  # the evidence, in full, when it fails
    assert {k: _verdict(*v) for k, v in verdicts.items()} == _expected("under_load"), verdicts


def test_the_engine_never_lets_a_fail_stand_on_a_starved_job() -> None:
    """The one place every verifier goes through: a ``fail`` on a starved job is retried as
    ``infra`` and then abstains, with ``wall-starved`` in its resources (what ``/metrics``
    counts); the same timeout without starvation stays the model's ``fail``."""
    from verifiers.sandbox import ExecResult, FakeProvider

    evidence = {"wall_s": 4.0, "cpu_s": 0.1, "run_delay_s": 3.5, "others_cpu_s": 7.5, "cpus": 2}

    def handler(call: Any) -> ExecResult:
        starved = "starve" in call.argv[-1]
        return ExecResult(
            returncode=-9, timed_out=True, starved=starved, starvation=evidence if starved else None
        )

    def row(name: str) -> dict[str, Any]:
        spec = {"program": name}
        return {
            "id": name,
            "completion": "",
            "task": {"verifier": "test.deadline_probe", "spec": spec},
        }

    provider = FakeProvider(handler)
    results = score_rows(provider, [row("starve"), row("spin")], retries=1, retry_backoff_s=0.0)
    starved, spun = results
    assert starved.status == "error" and starved.error is not None
    assert starved.error.kind == "infra" and starved.error.attempts == 2
    assert "starved of CPU by machine load" in starved.error.message
    assert starved.details["resources"]["limit_hit"] == ["wall-starved"]
    assert spun.status == "fail" and spun.details["resources"]["limit_hit"] == ["timeout"]
    assert len(provider.calls) == 3  # the starved row was tried twice


@pytest.mark.bwrap
def test_without_a_cpu_account_a_job_whose_tasks_died_is_never_starved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A host with no writable cgroup (simulated: the local backend gets none) has no CPU
    account with the job's dead tasks in it. Then the runner counts the pids the job's private
    PID namespace gave out: any that is gone (an auto-reaped child, an exited thread) and the
    live processes' CPU is not all of the job's, so it is never starved; a job whose tasks all
    live is still judged (``all_cpu_counted``)."""
    import asyncio

    import verifiers.sandbox._local as local
    from verifiers.sandbox import LocalProvider, SandboxSettings

    monkeypatch.setattr(local, "make_runner_cgroup", lambda tag: None)
    programs = {r["id"]: r["program"] for r in ROWS}

    async def main() -> dict[str, Any]:
        provider = LocalProvider(SandboxSettings(local_isolation="bwrap", pool_size=1))
        seen: dict[str, Any] = {}
        try:
            for name in ("churn-sigign", "churn-threads", "sleep-forever"):
                async with provider.session("python", timeout_s=0.5, cpu_s=0.4, pids=64) as sb:
                    run = await sb.exec(["python3", "-c", programs[name]])
                    seen[name] = (run.starved, run.starvation)
                    seen["report"] = sb.runner_hello.get("isolation", {}).get("starvation")
        finally:
            await provider.close()
        return seen

    seen = asyncio.run(main())
    assert seen.pop("report") == "pids", seen
    counted = {
        name: (starved, evidence["all_cpu_counted"]) for name, (starved, evidence) in seen.items()
    }
    assert counted == {
        "churn-sigign": (False, False),
        "churn-threads": (False, False),
        "sleep-forever": (False, True),
    }, seen


def test_pids_given_out_wrap_as_the_kernel_wraps_them() -> None:
    from verifiers.sandbox._runner import pids_since

    assert pids_since(10, 12, 4096) == [10, 11, 12]
    assert pids_since(4094, 301, 4096) == [4094, 4095, 300, 301]


JUDGE_ROWS: dict[str, tuple[str, str | None, str | None]] = {
    # id: (the candidate program of one io case, verdict quiet, verdict under load)
    "io-honest": (
        "total = 0\nfor i in range(2_500_000):\n    total += i\nprint('ok')\n",
        None,  # ~0.15 CPU-s: on this shared machine a share of 1/7 to 1/4 CPU times it out
        "starved",
    ),
    "io-spin": ("while True:\n    pass\n", "fail", None),
    "io-churn": (next(r["program"] for r in ROWS if r["id"] == "churn-sigign"), "fail", None),
    "io-sleep": ("import time\ntime.sleep(60)\n", "fail", "fail"),
    "io-nice": ("import os\nos.nice(19)\nwhile True:\n    pass\n", "fail", "fail"),
}
"""The code judge's own per-test limit (``test_timeout_s``) asks the runner's rule too: an
honest case of about 0.15 CPU-s under a 1 s limit, starved by the CPU hogs, passes within the
grace or abstains (it never fails for the load), and whatever a candidate does by itself stays
its fail."""


def _judge_rows(condition: int) -> list[dict[str, Any]]:
    spec = {"language": "python", "timeout_s": 1, "test_timeout_s": 1}
    cases = [{"stdin": "", "stdout": "ok\n"}]
    return [
        {
            "id": name,
            "completion": f"```python\n{program}```\n",
            "task": {
                "verifier": "code.tests",
                "spec": {**spec, "tests": {"kind": "io", "cases": cases}},
            },
        }
        for name, (program, *verdicts) in JUDGE_ROWS.items()
        if verdicts[condition] is not None
    ]


def test_the_judges_own_time_limits_tell_starved_from_slow(
    new_provider: Any, cpu_hogs: None
) -> None:
    seen = {}
    for condition in (0, 1):
        if condition:
            _signal_hogs(signal.SIGCONT)
        try:
            # Quiet, as in the corpus's quiet run: outside load that starves a row is retried.
            retries = 0 if condition else 2
            rows = _judge_rows(condition)
            results = score_rows(
                new_provider(pool_size=1), rows, retries=retries, retry_backoff_s=0.05
            )
        finally:
            _signal_hogs(signal.SIGSTOP)
        for r in results:
            detail = r.error.kind if r.error else r.details.get("starved_step")
            seen[(r.id, condition)] = (_verdict(r.status, detail), r.status, detail)
    expected = {
        (name, c): verdicts[c]
        for name, (_, *verdicts) in JUDGE_ROWS.items()
        for c in (0, 1)
        if verdicts[c] is not None
    }
    assert {k: v[0] for k, v in seen.items()} == expected, seen


_HONEST_F = (
    "def f():\n    total = 0\n    for i in range(2_500_000):\n        total += i\n    return 1\n"
)
_SPIN_F = "def f():\n    while True:\n        pass\n"
_CHILDREN_F = (
    "import os\n\ndef f():\n    for _ in range(4):\n        if os.fork() == 0:\n"
    "            while True:\n                pass\n    os.wait()\n"
)
_F_TESTS: dict[str, dict[str, Any]] = {
    "assert": {
        "kind": "assert",
        "entry_point": "f",
        "code": "def check(f):\n    assert f() == 1\n",
    },
    "call": {"kind": "call", "entry_point": "f", "cases": [{"args": [], "expected": 1}]},
    "pytest": {
        "kind": "pytest",
        "files": {"test_f.py": "from solution import f\n\ndef test_f():\n    assert f() == 1\n"},
    },
    "collect": {  # the candidate runs while pytest collects the module
        "kind": "pytest",
        "files": {
            "test_f.py": "from solution import f\nVALUE = f()\n\ndef test_f():\n    assert VALUE == 1\n"
        },
    },
    "fixture": {
        "kind": "pytest",
        "files": {
            "test_f.py": "import pytest\nfrom solution import f\n\n@pytest.fixture\ndef value():\n"
            "    return f()\n\ndef test_f(value):\n    assert value == 1\n"
        },
    },
}
CANDIDATE_ROWS: dict[str, tuple[str, str, str | None, str | None]] = {
    # id: (tests, the candidate's module, verdict quiet, verdict under load)
    "assert-honest": ("assert", _HONEST_F, None, "starved"),
    "call-honest": ("call", _HONEST_F, None, "starved"),
    "pytest-honest": ("pytest", _HONEST_F, None, "starved"),
    "collect-honest": ("collect", _HONEST_F, None, "starved"),
    "fixture-honest": ("fixture", _HONEST_F, None, "starved"),
    "import-honest": ("assert", _HONEST_F + "f()\n", None, "starved"),
    "assert-spin": ("assert", _SPIN_F, "spun", "spun"),
    "call-spin": ("call", _SPIN_F, "spun", "spun"),
    "collect-spin": ("collect", _SPIN_F, "spun", "spun"),
    "fixture-spin": ("fixture", _SPIN_F, "spun", "spun"),
    "import-spin": ("assert", "while True:\n    pass\n", "spun", "spun"),
    "import-spin-pytest": ("pytest", "while True:\n    pass\n", "spun", "spun"),
    "spinner-children": ("assert", _CHILDREN_F, "spun", "spun"),
    "import-churn": (
        "assert",
        next(r["program"] for r in ROWS if r["id"] == "churn-sigign")
        + "\ndef f():\n    return 1\n",
        "spun",
        "spun",
    ),
    "sleep-forever": ("assert", "import time\n\ndef f():\n    time.sleep(60)\n", "fail", "fail"),
    "import-sleep": ("assert", "import time\ntime.sleep(60)\n", "fail", "fail"),
    "fixture-sleep": ("fixture", "import time\n\ndef f():\n    time.sleep(60)\n", "fail", "fail"),
    "collect-blocked": (
        "collect",
        "import os\n\ndef f():\n    r, w = os.pipe()\n    os.read(r, 1)\n",
        "fail",
        "fail",
    ),
    "nice-spin": (
        "assert",
        "import os\n\ndef f():\n    os.nice(19)\n    while True:\n        pass\n",
        "fail",
        "fail",
    ),
}
"""The Python candidate's own limits in the judge (per call, per import, pytest collection and
fixtures, the total) ask the runner's rule too, over a window from the step's start: an honest
candidate of about 0.15 CPU-s under a 1 s limit, starved by the CPU hogs, passes within the
grace or abstains (``starved``), never fails; a candidate that sleeps, blocks or lowers itself
fails, quiet and under load. A spinning one (``spun``) fails, or abstains only with the
evidence that it was starved and had not used its limit in CPU: the rule cannot tell it from an
honest step that needs more of the CPU it is denied (the runner's own ``spin`` row is the
same), and it never passes. On a quiet machine (other processes used under a quarter of the
CPU in the second before) it must fail; on a shared machine outside load is real load (4
spinning children of a 1 s limit abstained "quiet" at load 7-15, all three tries), so there a
"quiet" abstain with that evidence is accepted."""


def _candidate_rows(condition: int) -> list[dict[str, Any]]:
    spec = {"language": "python", "timeout_s": 2, "test_timeout_s": 1}
    return [
        {
            "id": name,
            "completion": f"```python\n{module}```\n",
            "task": {"verifier": "code.tests", "spec": {**spec, "tests": _F_TESTS[tests]}},
        }
        for name, (tests, module, *verdicts) in CANDIDATE_ROWS.items()
        if verdicts[condition] is not None
    ]


def _outside_busy(seconds: float = 1.0) -> float:
    """Share of the machine's CPU that other processes used over ``seconds`` (``/proc/stat``)."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])

    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    return (busy1 - busy0) / max(1, total1 - total0)


def test_the_python_candidates_limits_tell_starved_from_slow(
    new_provider: Any, cpu_hogs: None
) -> None:
    seen = {}
    quiet_machine = False
    for condition in (0, 1):
        if condition:
            _signal_hogs(signal.SIGCONT)
        else:
            # A spinning candidate may abstain "quiet" only when the machine is not: on a
            # shared machine other processes' load is real starvation. When nothing else runs
            # (CI, a developer's idle box) it must fail, so a rule that calls every spinner
            # starved cannot pass this test there.
            quiet_machine = _outside_busy() < 0.25
        try:
            retries = 0 if condition else 2
            rows = _candidate_rows(condition)
            results = score_rows(
                new_provider(pool_size=1), rows, retries=retries, retry_backoff_s=0.05
            )
        finally:
            _signal_hogs(signal.SIGSTOP)
        for r in results:
            detail = r.error.kind if r.error else r.details.get("starved_step")
            verdict = _verdict(r.status, detail)
            spun = CANDIDATE_ROWS[r.id][2 + condition] == "spun"
            if spun and not condition and quiet_machine:
                verdict = "spun" if verdict == "fail" else verdict
            elif spun and r.status != "pass":
                message = r.error.message if r.error else ""
                if verdict == "fail" or "starved of CPU by machine load" in message:
                    verdict = "spun"
            seen[(r.id, condition)] = (verdict, r.status, detail, r.error and r.error.message)
    expected = {
        (name, c): verdicts[c]
        for name, (_, _, *verdicts) in CANDIDATE_ROWS.items()
        for c in (0, 1)
        if verdicts[c] is not None
    }
    print(json.dumps({f"{k[0]}/{k[1]}": v for k, v in seen.items()}))
    assert {k: v[0] for k, v in seen.items()} == expected, seen


_LONG_F = (
    "def f():\n    total = 0\n    for i in range(25_000_000):\n        total += i\n    return 1\n"
)
LATE_SPEC = {"language": "python", "timeout_s": 4, "test_timeout_s": 4}
"""A 4 s limit: the judge's exec has 4 + 5 s, so a starved step's grace (4 x 4 s) lies past
it, and the judge must stop at its exec end (9 s less END_MARGIN_S from its start)."""


def _starved_late_abstains_or_passes(new_provider: Any, row: dict[str, Any]) -> None:
    """Score ``row`` under the running hogs: a pass (the load let it finish) or an abstain with
    the trusted side's own evidence (its done/verdict line, not the runner's kill at its
    backstop) within the exec's 9 s wall limit (the step's grace alone would run longer);
    never the model's fail."""

    _signal_hogs(signal.SIGCONT)
    try:
        started = time.monotonic()
        (result,) = score_rows(new_provider(pool_size=1), [row], retries=0)
        took = time.monotonic() - started
    finally:
        _signal_hogs(signal.SIGSTOP)
    message = result.error.message if result.error else ""
    print("\nLATE", row["id"], result.status, took, message, json.dumps(result.details)[:1500])
    assert result.status in ("pass", "error"), (result.status, result.feedback)
    if result.status == "error":
        assert result.error is not None and result.error.kind == "infra", result.error
        assert message.startswith("1 timed step(s) in a sandbox job ran out of wall time"), message
        wall = result.details["resources"]["wall_s"]
        assert wall < 9, wall


@pytest.mark.parametrize("tests", ["assert", "pytest"])
def test_a_step_starved_past_its_exec_limit_abstains_before_the_runner_kills_it(
    new_provider: Any, cpu_hogs: None, tests: str
) -> None:
    """An honest candidate of about 1.5 CPU-s, starved by the hogs, reaches the judge's exec
    end still starved: the judge reports it (the host abstains) and ends before the runner's
    wall limit, where the runner would kill it (no done line: a 0) unless its own window over
    the whole job also found it starved. Never a fail; a pass only if the load let it finish."""

    row = {
        "id": f"late-{tests}",
        "completion": f"```python\n{_LONG_F}```\n",
        "task": {"verifier": "code.tests", "spec": {**LATE_SPEC, "tests": _F_TESTS[tests]}},
    }
    _starved_late_abstains_or_passes(new_provider, row)


def test_a_workspace_run_starved_past_its_limit_abstains_never_scores_0(
    new_provider: Any, cpu_hogs: None
) -> None:
    """``code.workspace``'s trusted runner keeps its run's limit by the same rule as the code
    judge (``Clock`` over ``_vj``): an honest project call of about 1.5 CPU-s, starved by the
    hogs past the run's 4 s limit, runs on to the exec end and is reported starved (the host
    abstains), before the sandbox's kill at its wall limit. Never a fail (the model's 0); a
    pass only if the load let it finish."""

    row = {
        "id": "late-workspace",
        "completion": json.dumps({"calc.py": _LONG_F}),
        "task": {
            "verifier": "code.workspace",
            "spec": {
                "files": {"calc.py": "def f():\n    return 0\n"},
                "tests": {
                    "tests/test_calc.py": "from calc import f\n\ndef test_f():\n    assert f() == 1\n"
                },
                "timeout_s": 4,
            },
        },
    }
    _starved_late_abstains_or_passes(new_provider, row)
