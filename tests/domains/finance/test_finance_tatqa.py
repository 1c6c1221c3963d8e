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


def test_at_least_99_percent_of_gold_derivations_pass(
    gold: list[tuple[TatqaItem, verifiers.Result]],
) -> None:
    passed = sum(r.status == "pass" for _, r in gold)
    assert passed / len(gold) >= 0.99, [r.feedback for _, r in gold if r.status != "pass"][:5]
    clean = sum(all(v == 1.0 for v in r.components.values()) for _, r in gold)
    assert clean / len(gold) >= 0.99  # grounded and consistent too, not just correct
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
