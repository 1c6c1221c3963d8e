"""The engine's inline fast path (``verify_inline``) and the inline-document caches.

The fast path must give exactly the verdict of the async ``verify`` path, take only inline
documents of bounded size, and leave PDFs, CSV and HTML to the async path.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from finance_helpers import GROWTH, TABLE, item
from verifiers.domains.finance import FinanceSpec, FormulaCrossCheck, synth
from verifiers.domains.finance._sources import (
    _MAX_INLINE_CELLS,
    clear_inline_caches,
    load_inline,
)

import verifiers
from verifiers.context import VerifierContext
from verifiers.types import Result, Trajectory

REF = {"answer": 24.41, "scale": "percent"}


def _pair(raw: dict[str, Any]) -> tuple[Trajectory, FinanceSpec]:
    traj = Trajectory.model_validate(raw)
    return traj, FinanceSpec.model_validate(traj.task.spec or {})


def _async_verdict(traj: Trajectory, spec: FinanceSpec, base: Path) -> Result:
    ctx = VerifierContext(deadline=time.monotonic() + 60, base_dir=base)
    return asyncio.run(FormulaCrossCheck().verify(traj, spec, ctx))


def _perturbed(seed: int) -> list[dict[str, Any]]:
    """Gold trajectories of a synthetic report and wrong variants of each."""
    rng = random.Random(seed)
    report = synth.make_report(seed, pages=3)
    out: list[dict[str, Any]] = []
    for gold in synth.gold_trajectories(report, synth.inline_document(report)):
        out.append(gold)
        body = json.loads(gold["completion"].split("```json\n")[1].split("\n```")[0])
        for change in ("answer", "operand", "scale"):
            wrong = json.loads(json.dumps(body))
            if change == "answer":
                wrong["answer"] = round(wrong["answer"] * rng.choice((1.03, -1.0, 100.0)), 2)
            elif change == "operand":
                name = next(iter(wrong["operands"]))
                wrong["operands"][name]["value"] = "9,999,999"
            else:
                wrong["scale"] = "billion"
            variant = json.loads(json.dumps(gold))
            variant["completion"] = "```json\n" + json.dumps(wrong) + "\n```"
            out.append(variant)
    return out


def test_inline_verdicts_equal_async_verdicts(tmp_path: Path) -> None:
    raws = _perturbed(3) + [
        item(GROWTH, reference=REF),
        item(GROWTH),
        item({**GROWTH, "answer": 30.0}, reference=REF),
        item("no answer here", reference=REF),
        item(
            GROWTH,
            document={"table": TABLE, "text": ["Total sales were $1,496.5 million."]},
        ),
        item(
            {"answer": 1496.5, "formula": "x", "operands": {"x": {"value": "1,496.5"}}},
            document={"text": "Total sales were $1,496.5 million."},
        ),
        item({**GROWTH, "formula": "__import__('os')"}, reference=REF),
    ]
    verifier = FormulaCrossCheck()
    for raw in raws:
        traj, spec = _pair(raw)
        fast = verifier.verify_inline(traj, spec)
        assert fast is not None
        slow = _async_verdict(traj, spec, tmp_path)
        assert fast.model_dump() == slow.model_dump(), raw["completion"]
    clear_inline_caches()


@pytest.mark.parametrize(
    "document",
    [{"pdf": "report.pdf"}, {"csv": "a,b\n1,2"}, {"html": "<table></table>"}, {}],
)
def test_files_and_non_inline_sources_take_the_async_path(document: dict[str, Any]) -> None:
    traj, spec = _pair(item(GROWTH, reference=REF, document=document))
    assert FormulaCrossCheck().verify_inline(traj, spec) is None


def test_large_inline_tables_take_the_async_path_with_the_same_verdict() -> None:
    width = 4
    filler = [[f"Line {i}", "1", "2", "3"] for i in range(_MAX_INLINE_CELLS // width + 1)]
    big = {"table": TABLE + filler}
    traj, spec = _pair(item(GROWTH, reference=REF, document=big))
    assert load_inline(spec.document) is None
    assert FormulaCrossCheck().verify_inline(traj, spec) is None
    result = verifiers.score([item(GROWTH, reference=REF, document=big)])[0]
    assert result.status == "pass", result.feedback
    small = verifiers.score([item(GROWTH, reference=REF)])[0]
    assert result.components == small.components


def test_unjudgeable_inline_inputs_keep_the_async_error() -> None:
    bad_scale = item(GROWTH, reference=REF, document={"table": TABLE, "scale": "gazillion"})
    bad_text = item(GROWTH, reference=REF, document={"table": TABLE, "text": [1, 2]})
    bad_ref = item(GROWTH, reference={"answer": "n/a"})
    verifier = FormulaCrossCheck()
    for raw, message in (
        (bad_scale, "document scale"),
        (bad_text, "document.text"),
        (bad_ref, "not a number"),
    ):
        traj, spec = _pair(raw)
        assert verifier.verify_inline(traj, spec) is None
        result = verifiers.score([raw])[0]
        assert result.status == "error" and result.error is not None
        assert result.error.kind == "bad_input" and message in result.error.message
        assert result.verifier == f"finance.formula@{FormulaCrossCheck.version}"


def test_documents_are_parsed_once_per_spec_and_per_content() -> None:
    clear_inline_caches()
    spec = FinanceSpec.model_validate({"document": {"table": TABLE}})
    assert spec.document is not None
    first = load_inline(spec.document)
    again = load_inline(spec.document)
    assert first is not None and again is not None
    assert again[0] is first[0]  # same spec object: found by identity
    assert again[1] == first[1] and again[1] is not first[1]  # details never shared
    twin = FinanceSpec.model_validate({"document": json.loads(json.dumps({"table": TABLE}))})
    assert twin.document is not None
    found = load_inline(twin.document)
    assert found is not None and found[0] is first[0]  # equal content: found by content key
    other = FinanceSpec.model_validate({"document": {"table": TABLE[:-1]}})
    assert other.document is not None
    different = load_inline(other.document)
    assert different is not None and different[0] is not first[0]
    clear_inline_caches()
    fresh = load_inline(spec.document)
    assert fresh is not None and fresh[0] is not first[0]


def test_engine_scores_grpo_groups_on_the_inline_path() -> None:
    raws = []
    for raw in _perturbed(5)[:24]:
        for k in range(4):
            copy = json.loads(json.dumps(raw))
            copy["id"] = f"{k}"
            raws.append(copy)
    results = verifiers.score(raws)
    assert all(r.verifier == f"finance.formula@{FormulaCrossCheck.version}" for r in results)
    for i in range(0, len(raws), 4):
        group = [r.model_dump(exclude={"duration_s", "id"}) for r in results[i : i + 4]]
        assert all(g == group[0] for g in group)
    assert {r.status for r in results} == {"pass", "fail"}
