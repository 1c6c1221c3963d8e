"""The runner's launcher: non-python jobs start by ``posix_spawn`` from a process that holds
what a job inherits (see ``_launcher_main`` in sandbox/_runner.py), on both backends.

Attacks on it (``datasets/sandbox/launcher_attacks.jsonl``: signal, renice, pin, idle
scheduling or I/O class, prlimit, read its memory, a background hunter of its threads) run in
one session, each followed by a probe job; every probe must see exactly what the first one
saw (uids, no capabilities, no new privileges, seccomp, oom_score_adj, nice, affinity,
scheduling and I/O class, rlimits) and the attacks themselves must be refused.
test_runner_protocol.py checks that the launcher is the path taken and falls back where it must.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifiers.sandbox import Limits

CORPUS = Path(__file__).resolve().parents[2] / "datasets" / "sandbox" / "launcher_attacks.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x]

PROBE = [
    "/bin/sh",
    "-c",
    "grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Amb)|NoNewPrivs|Seccomp|Cpus_allowed_list):' "
    "/proc/self/status; cut -d' ' -f18,19,41 /proc/self/stat; cat /proc/self/oom_score_adj; "
    "ionice; for o in t f n u; do ulimit -H -$o; done; umask; pwd; echo fds $(ls /proc/self/fd)",
]


def test_corpus_covers_every_family() -> None:
    families = {r["family"] for r in ROWS}
    assert {"signal", "priority", "affinity", "scheduler", "io", "rlimit", "inspect"} <= families
    assert len({r["id"] for r in ROWS}) == len(ROWS)


def test_attacks_on_the_launcher_change_nothing_later_jobs_inherit(run_with: Any) -> None:
    """The corpus, then the limits profiles (a new launcher per profile), in one session."""

    async def body(provider: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with provider.session("python", timeout_s=10) as sb:
            first = await sb.exec(PROBE)
            out["baseline"] = first
            for row in ROWS:
                attack = await sb.exec(row["argv"])
                probe = await sb.exec(PROBE)
                out[row["id"]] = (attack, probe)
            out["limits"] = await _limit_profiles(sb)
        return out

    got = run_with(body)
    _check_limit_profiles(*got.pop("limits"))
    baseline = got.pop("baseline")
    assert baseline.ok, baseline
    status = baseline.text()
    uid = status.split("Uid:")[1].split()[0]
    assert uid != "0" and f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}" in status, status
    for cap in ("CapPrm", "CapEff", "CapAmb"):  # (bubblewrap leaves CapInh set: inert)
        assert f"{cap}:\t0000000000000000" in status, status
    assert "NoNewPrivs:\t1" in status and "Seccomp:\t2" in status, status
    assert status.endswith("\nfds 0 1 2 3\n"), status  # stdio, and ls's own directory
    wrong = {}
    for row in ROWS:
        attack, probe = got[row["id"]]
        if attack.text() != row["stdout"] or not attack.ok:
            wrong[row["id"]] = ("attack", attack.returncode, attack.stdout, attack.stderr[-300:])
        elif probe.text() != status or not probe.ok:
            wrong[row["id"]] = ("probe", probe.stdout, probe.stderr[-300:])
    assert not wrong, (status, wrong)


async def _limit_profiles(sb: Any) -> list[Any]:
    """Each limits profile gets its own launcher (it cannot raise its own limits back)."""
    ulimits = ["/bin/sh", "-c", "for o in t f n; do ulimit -H -$o; done"]
    small = Limits(timeout_s=5, cpu_s=2, file_bytes=1 << 20)
    big = Limits(timeout_s=5, cpu_s=4, file_bytes=8 << 20)
    return [
        await sb.exec(ulimits, limits=small),
        await sb.exec(ulimits, limits=big),
        await sb.exec(ulimits, limits=small),
        await sb.exec(["/bin/sh", "-c", "head -c 2000000 /dev/zero > f"], limits=small),
        await sb.exec(["no-such-command"], limits=small),
    ]


def _check_limit_profiles(small: Any, big: Any, again: Any, too_big: Any, missing: Any) -> None:
    assert small.text().split()[:3] == ["2", "2048", "1024"], small
    assert big.text().split()[:3] == ["4", "16384", "1024"], big
    assert again.text() == small.text(), again
    assert too_big.returncode != 0, too_big  # RLIMIT_FSIZE: SIGXFSZ / EFBIG
    assert missing.returncode == 127 and b"no-such-command" in missing.stderr, missing
