"""TAT-QA dev: every arithmetic question as a gold trajectory, and its perturbations."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from verifiers.domains.finance.tatqa import TatqaItem, convert, load_tatqa, perturb

import verifiers


@pytest.fixture(scope="module")
def gold(shared_data: Path) -> list[tuple[TatqaItem, verifiers.Result]]:
    pairs = list(load_tatqa(shared_data / "tatqa" / "tatqa_dataset_dev.json"))
    assert len(pairs) == 718
    items = [convert(doc, question) for doc, question in pairs]
    converted = [i for i in items if i is not None]
    assert len(converted) == len(pairs)  # every arithmetic question becomes a trajectory
    results = verifiers.score([i.trajectory for i in converted])
    return list(zip(converted, results, strict=True))


def test_every_gold_derivation_passes(
    gold: list[tuple[TatqaItem, verifiers.Result]],
) -> None:
    passed = sum(r.status == "pass" for _, r in gold)
    assert passed == len(gold), [r.feedback for _, r in gold if r.status != "pass"][:5]
    # Grounded and consistent too, not just correct. The few that are not say why, and each
    # reason is one of these: a gold derivation that restates one figure (``x1 / 1``,
    # ``-x1 - 0``, or ``(x1 + x2) / 2`` over one figure quoted twice without a column) computes
    # nothing; an average of 2019 and 2018 minus an average of 2018 and 2017 cancels the 2018
    # figure exactly (dead, twice); one derivation contradicts its own answer's sign; one
    # figure is printed nowhere in the document. Honest zero changes (``(x1 - x2) / x3`` with
    # x1 = x2 printed in two cells) are clean: cells are perturbed independently.
    unclean = [r for _, r in gold if not all(v == 1.0 for v in r.components.values())]
    assert len(unclean) <= 9, [r.feedback for r in unclean]
    reasons = collections.Counter(
        "restates"
        if "only restates one figure" in r.feedback
        else "dead"
        if "do not affect" in r.feedback
        else "sign"
        if "the formula gives -185" in r.feedback
        else "not printed"
        if "grounding:" in r.feedback
        else r.feedback
        for r in unclean
    )
    assert reasons == {"restates": 5, "dead": 2, "sign": 1, "not printed": 1}, reasons
    assert not [r for _, r in gold if r.status == "error"]


def test_perturbations_fail_at_the_right_component(
    gold: list[tuple[TatqaItem, verifiers.Result]],
) -> None:
    clean = [item for item, r in gold if all(v == 1.0 for v in r.components.values())]
    perturbations = [p for item in clean for p in perturb(item)]
    kinds = collections.Counter(p.kind for p in perturbations)
    assert kinds["operand"] > 600 and kinds["sign"] > 600 and kinds["scale"] > 300
    assert kinds["percent_as_fraction"] > 200
    results = verifiers.score([p.trajectory for p in perturbations])
    wrong: list[tuple[str, str, dict[str, float]]] = []
    for p, r in zip(perturbations, results, strict=True):
        c = r.components
        if p.kind == "operand":
            ok = c["grounding"] < 1.0 and c["consistency"] == 1.0
        elif p.kind == "scale":
            ok = (
                c["correct"] == 0.0
                and c["consistency"] == 1.0
                and c["grounding"] == 1.0
                and "scale" in r.feedback
            )
        elif p.kind == "sign":
            ok = c["consistency"] == 0.0 and c["correct"] == 0.0
        else:
            ok = c["correct"] == 0.0 and "percent_fraction_confusion" in r.details
        if not (ok and r.status == "fail" and c[p.at_fault] < 1.0):
            wrong.append((p.kind, r.feedback, c))
    assert not wrong, wrong[:5]


NOREF_PASS_MIN = 679
"""Gold derivations scored without their reference that pass ``relevance`` too (of 718).

Was 632 with the literal row-label test (86 honest answers failed). The 39 left cite figures
their question names only by meaning (``total expenses`` for revenue minus operating income,
``COGS``, ``debt-to-asset``), cite a year the question does not name (a gold derivation's
own slip), or count header years (``/(2019 - 2017 + 1)``). Raising this number is welcome;
lowering it is a regression."""


def test_gold_without_reference_names_what_the_question_asks(
    gold: list[tuple[TatqaItem, verifiers.Result]],
) -> None:
    trajectories = []
    for item, _ in gold:
        t = dict(item.trajectory)
        t["task"] = {**t["task"], "reference": None}
        trajectories.append(t)
    results = verifiers.score(trajectories)
    assert not [r for r in results if r.status == "error"]
    passed = sum(r.status == "pass" for r in results)
    assert passed >= NOREF_PASS_MIN, passed
    # And a gold answer whose operand is moved to another cell still earns nothing there.
    clean = [item for (item, _), r in zip(gold, results, strict=True) if r.status == "pass"]
    moved = [p for item in clean for p in perturb(item) if p.kind in ("operand", "sign")]
    for p in moved:
        p.trajectory["task"] = {**p.trajectory["task"], "reference": None}
    rewarded = [
        (p.kind, r.feedback)
        for p, r in zip(moved, verifiers.score([p.trajectory for p in moved]), strict=True)
        if r.status == "pass"
    ]
    assert not rewarded, rewarded[:5]
