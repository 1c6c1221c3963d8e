"""The code judge's own wall limits and the starvation rule (unit tests of the judge's logic on
the real ``/proc``; the end-to-end rows under real load are in tests/sandbox/test_starvation.py).

* A step's window counts from the step's start: the CPU the judge and the candidate used
  before it (pytest's import, earlier tests) is not the step's, or every starved step would
  look fed.
* No step waits past the judge's exec end (its exec's limit less ``END_MARGIN_S``, counted
  from the judge process's start): a step still starved there is reported starved (the host
  abstains) before the runner's kill could make it a 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from verifiers.domains.code._judge_candidate import END_MARGIN_S, Clock, Patience, exec_end
from verifiers.sandbox._runner import CpuWindow

BURN = (
    "import sys, time\n"
    "end = time.process_time() + 0.4\n"
    "while time.process_time() < end:\n"
    "    pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_steps_window_leaves_out_the_cpu_its_processes_used_before_it() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"burnt\n"
        lifetime = CpuWindow(1.0, 1.0).verdict([proc.pid])
        window = CpuWindow(1.0, 1.0)
        window.already([proc.pid])
        step = window.verdict([proc.pid])
    finally:
        proc.kill()
        proc.communicate()
    assert lifetime["cpu_s"] >= 0.3, lifetime  # the process's whole life, as before
    assert step["cpu_s"] < 0.1, step  # only what it used since the window started


def test_a_process_that_replaced_one_seen_before_the_window_counts_whole() -> None:
    """``already`` keys each pid's CPU by its start time: a pid the kernel gave out again is
    a new task, whose CPU is all the window's (never less for someone else's past)."""
    window = CpuWindow(1.0, 1.0)
    proc = subprocess.Popen(
        [sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        window.cpu_before[proc.pid] = ("0", 100.0)  # another task of that pid, long gone
        assert proc.stdout is not None and proc.stdout.readline() == b"burnt\n"
        verdict = window.verdict([proc.pid])
    finally:
        proc.kill()
        proc.communicate()
    assert verdict["cpu_s"] >= 0.3, verdict


def test_exec_end_counts_from_the_judge_process_start() -> None:
    code = (
        "import time\n"
        "from verifiers.domains.code._judge_candidate import exec_end\n"
        "time.sleep(0.6)\n"
        "print(exec_end(3.0) - time.monotonic())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "VERIFIERS_JOB_STARTED"}
    left = float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, check=True, text=True, env=env
        ).stdout
    )
    # 3 s from the process's start, less the margin, less the 0.6 s slept and the start-up.
    assert 0.0 < left <= 3.0 - END_MARGIN_S - 0.6 + 0.05, left
    assert exec_end(None) is None


def test_exec_end_counts_from_the_runners_clock_start_when_it_names_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A zygote's spare is forked while the job before it runs: its process can be seconds
    older than its job, whose clock the runner names in VERIFIERS_JOB_STARTED. Counted from
    the process, an honest job's limits had all passed before it began."""
    now = time.monotonic()
    monkeypatch.setenv("VERIFIERS_JOB_STARTED", repr(now - 2.0))
    end = exec_end(8.0)
    assert end is not None and abs(end - (now - 2.0 + 8.0 - END_MARGIN_S)) < 0.05, end - now
    # Not a past time of this clock (garbage, the future, another boot's): the process start.
    for bad in ("", "soon", "nan", repr(now + 60.0), repr(now - 10 * 86400.0)):
        monkeypatch.setenv("VERIFIERS_JOB_STARTED", bad)
        fallback = exec_end(8.0)
        assert fallback is not None, bad
        monkeypatch.delenv("VERIFIERS_JOB_STARTED")
        plain = exec_end(8.0)
        assert plain is not None and abs(fallback - plain) < 0.05, bad


def _force(patience: Patience, monkeypatch: pytest.MonkeyPatch, starved: bool) -> list[int]:
    calls: list[int] = []

    def verdict(members: list[int]) -> dict[str, Any]:
        calls.append(len(members))
        return {"starved": starved, "wall_s": 0.0, "cpu_s": 0.0}

    monkeypatch.setattr(patience.window, "verdict", verdict)
    return calls


def test_a_starved_clock_runs_on_but_never_past_the_exec_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERIFIERS_JOB_CPU", "pids")
    end = time.monotonic() + 0.5
    clock = Clock(0.2, end)  # its own cap (4 x 0.2 s) lies past the end
    calls = _force(clock.patience, monkeypatch, starved=True)
    assert clock.deadline <= end
    time.sleep(0.25)
    assert not clock.expired()  # starved at its limit: it runs on
    assert clock.starved is None and calls
    assert clock.deadline <= end
    while time.monotonic() < end:
        time.sleep(0.05)
    assert clock.expired()  # at the end, still starved: reported, not waited on
    assert clock.starved is not None and "starved" not in clock.starved


def test_a_clock_whose_step_was_not_starved_expires_at_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERIFIERS_JOB_CPU", "pids")
    clock = Clock(0.1)
    calls = _force(clock.patience, monkeypatch, starved=False)
    assert not clock.expired()
    time.sleep(0.12)
    assert clock.expired() and calls == [calls[0]]
    assert clock.starved is None  # the model's timeout


def test_without_a_cpu_account_no_clock_is_ever_starved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIERS_JOB_CPU", "")
    clock = Clock(0.05)
    assert clock.patience.window is None
    time.sleep(0.06)
    assert clock.expired() and clock.starved is None
