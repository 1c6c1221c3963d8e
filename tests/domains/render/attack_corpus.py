"""The render attack corpus (``datasets/render/attacks.jsonl``) and how a row is judged.

Shared by the local and the docker tests: the same trajectory must get the same verdict on
every backend. Rows run in file order on one warm runner, so a poisoning row is followed by a
reader that would profit from a leak, and every row marked ``honest_after`` is followed by an
honest scene that must still pass.
"""

from __future__ import annotations

import json
from typing import Any

from render_helpers import GOOD_SCENE, RenderRunner

from verifiers.data import data_path


def attack_rows() -> list[dict[str, Any]]:
    with open(data_path("render", "attacks.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def check_row(runner: RenderRunner, item: dict[str, Any]) -> None:
    body = item["completion"].split("```python\n", 1)[1].rsplit("```", 1)[0]
    result = runner.verify(body, item["task"]["spec"])
    meta = item["metadata"]
    # Always a score, never an abstain, and always serialisable (no lone surrogates).
    result.model_dump_json().encode("utf-8")
    json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    assert result.status == meta["expected_status"], (item["id"], result.feedback, result.error)
    assert meta["expected_feedback"] in result.feedback, (item["id"], result.feedback)
    if meta["expected_status"] == "fail":
        assert result.reward is not None and result.reward < 1.0
    if meta.get("honest_after"):
        honest = runner.verify(GOOD_SCENE)
        assert honest.status == "pass", (item["id"], "poisoned the next job", honest.feedback)
