"""Same trajectory, same reward on Docker: a workspace episode and a few offline corpus items
through the Docker warm pool give the verdicts the local backend gives (test_workspace_corpus)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from episode_helpers import HACKS, TASKS, row, with_engine

from verifiers import Engine

pytestmark = pytest.mark.docker

OFFLINE = [
    "conftest-root",
    "builtins-patch",
    "exit-127-at-import",
    "file-over-dir-conflict",
    "forge-runner-infra-error",
    "name-too-long",
    "lone-surrogate-text",
    # The two-process runner's families (test_workspace_corpus has them all; the two rows
    # that only stall until the deadline are left to it: the deadline is the host's, the same
    # code on both backends).
    "forge-verdict-frames",
    "forge-verdict-frames-in-call",
    "forge-verdict-gc-nonce",
    "forge-verdict-proc-parent",
    "forge-verdict-ptrace",
    "forge-lines-on-stdout-stderr",
    "rpc-forged-reply-frames",
    "rpc-garbage-frame",
    "rpc-outcome-exceptions",
    "rpc-pytest-skip-from-project",
    "kill-trusted-runner",
    "sigint-trusted-runner",
    "kill-every-process",
    "cli-child-kills-runner",
    "cli-child-forges-through-proc",
    "plant-files-trusted-reads",
    "oracle-read-hidden-tests",
    "eq-true-object-int",
    "int-subclass-eq-true",
    "huge-return-value",
    "deep-return-value",
    "exit-inside-call",
    "orphan-forger",
    "star-import-rebinds-builtins",
]


def test_docker_backend_gives_the_same_verdicts() -> None:
    hacks = {h["id"]: h for h in HACKS}

    async def body(engine: Engine) -> Any:
        items = [
            row(
                "bugfix-diff-offline",
                id="honest",
                completion=TASKS["bugfix-diff-offline"]["solution"],
            ),
            row(
                "project-inventory",
                id="honest-proxies",
                completion=json.dumps(TASKS["project-inventory"]["solution"]),
            ),
        ]
        items += [
            row(hacks[h]["task_id"], id=h, completion=hacks[h]["completion"]) for h in OFFLINE
        ]
        offline = await engine.score(items)
        async with engine.episode(row("bugfix-calc")) as ep:
            await ep.write_file("calc.py", "def add(a, b):\n    return a + b\n")  # breaks mul
            first = await ep.submit()
            await ep.write_file("calc.py", TASKS["bugfix-calc"]["solution"]["calc.py"])
            second = await ep.submit()
            final = await ep.finish()
        return offline, first, second, final

    offline, first, second, final = with_engine(body, sandbox="docker")
    for result in offline[:2]:
        assert (result.status, result.reward) == ("pass", 1.0), (result.id, result.feedback)
    for result in offline[2:]:
        assert (result.status, result.reward) == ("fail", 0.0), (
            result.id,
            result.error,
            result.feedback,
        )
    assert first.reward == 0.0 and first.components["pass_to_pass"] == 0.0
    assert second.reward == 1.0 and final.reward == 1.0
    assert json.loads(json.dumps(final.details["episode"]["attempts"])) == [0.0, 1.0]
