"""answer.math at the field's standard: datasets/answers/math_classes.jsonl, class by class.

Each line is a MATH/NuminaMath-style trajectory with the verdict it must get. The corpus
covers the classes of issues 12 and 22 (several equations and hedges, connectives, several
``\\boxed{}``, inequalities and intervals, sets and ``\\pm``, named quantities, MATH
thousands separators, text and base-n answers, percent words and ``\\approx``, equations up
to scale, matrices, references that must parse, abstain buttons, tiny references, sampling
across signs, superscripts). Its lines run, directly and through the engine with real worker
processes, in test_answers_corpora.py with every other answers corpus.
"""

from __future__ import annotations

import time

import pytest
from corpus_lines import lines

import verifiers


def test_corpus_shape() -> None:
    corpus = lines("math_classes")
    ids = [line["id"] for line in corpus]
    assert len(ids) >= 150 and len(ids) == len(set(ids))
    verdicts = [line["metadata"]["expect"]["status"] for line in corpus]
    assert verdicts.count("fail") >= 60 and verdicts.count("pass") >= 60
    wrong = lines("math_wrong")
    assert len(wrong) >= 60 and {line["metadata"]["expect"]["status"] for line in wrong} == {"fail"}


# -- bounds on the new paths ---------------------------------------------------------------

HOSTILE = [
    "x^{200} > \\sin(x)",  # sympy's inequality solver would run for half a minute
    "\\begin{pmatrix}" + "&".join(["x"] * 30) + "\\end{pmatrix}^{20}",
    "\\begin{pmatrix}1 & 1 \\\\ 1 & 0\\end{pmatrix}^{100000}",
    "1 < x < 2 < x < 3 < x",
    ",".join(["x=1"] * 300),
    "(" + "and".join(["1"] * 300) + ")",
    "\\text{" + "a" * 900 + "}",
    "204_{37}",
    "\\operatorname{binomial}(7)",
    "\\begin{pmatrix}1 & 2\\end{pmatrix} + 1",
    "\\begin{pmatrix}\\begin{pmatrix}1\\end{pmatrix}\\end{pmatrix}",
    "\\ln|x",
    "10^{-20} \\approx",
    "\\sum_{k=1}^{n}" * 150 + "k",
    "\\sum_{k=1}^{10^{9}} \\sin(k)^{k}",
    "\\prod_{k=1}^{1000} k^{1000}",
    "\\sum_{k=1}^{1000} k^{k}",
    "\\int_0^1" * 100 + " x dx",
    "\\int_0^1 e^{x^{x}} \\, dx",
    "\\int x dx",
    "\\lim_{x \\to 0} x^{x^{x}}",
    "\\lim_{x \\to 0}" * 100 + " x",
    "\\lim_{x \\to \\infty} \\sin(x)",
    "\\lim x",
    "F_{" + "n-" * 30 + "1}",
    "\\{x \\mid x^{200} > \\sin x\\}",
    "\\begin{vmatrix}" + "&".join(["x"] * 30) + "\\end{vmatrix}",
    "1,5" * 300,
    "5m" * 300,
]


def _short(text: str) -> str:
    return f"{text[:24]!r}x{len(text)}"


@pytest.mark.parametrize("candidate", HOSTILE, ids=_short)
def test_hostile_answers_are_fast_fails(candidate: str) -> None:
    from verifiers.answers import equivalent

    started = time.process_time()  # CPU: the bound holds on a loaded machine
    out = equivalent({"candidate": candidate, "references": ["(2, \\infty)"], "rel_tol": 1e-9})
    assert out["equal"] is False and not out.get("bad_reference")
    assert time.process_time() - started < 3.0


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed x " * 300_000,
        "\\boxed{" * 100_000,
        "\\boxed{1} and " * 100_000,
        "\\(" * 100_000,
        "is " * 300_000,
        "The answer is 5. " * 100_000,
        "<|im_start|>" * 100_000,
        "\\boxed{1} Final Answer: " * 100_000,
        "$" * 300_000,
        "1,000.99m" * 100_000,
    ],
    ids=_short,
)
def test_box_and_formula_scans_are_linear(text: str) -> None:
    # These run inline in the event loop, before any worker: linear in the completion.
    from verifiers.answers._locate import extract_answer
    from verifiers.answers._mathboxes import boxed_group, last_math_segment

    started = time.process_time()  # CPU: the bound holds on a loaded machine
    boxed_group(text)
    last_math_segment(text[:1000], text)
    last_math_segment(text, text, sentences=True)
    assert time.process_time() - started < 5.0
    started = time.process_time()  # CPU: the bound holds on a loaded machine
    extract_answer(text, "auto")  # one more full scan of the boxes: its own budget
    assert time.process_time() - started < 5.0


@pytest.mark.parametrize("combine", ["mean", "min", "all"])
@pytest.mark.parametrize("required", [True, False])
def test_model_text_errors_never_abstain_through_checks(combine: str, required: bool) -> None:
    # binomial(7) used to raise sympy's TypeError out of the worker: an `error` (abstain)
    # that a model could aim for, carried through task.checks as a whole-item abstain.
    line = {
        "completion": "\\boxed{\\operatorname{binomial}(7)}",
        "task": {
            "combine": combine,
            "checks": [
                {"verifier": "answer.math", "reference": "21", "required": required},
                {"verifier": "format.regex", "spec": {"patterns": ["boxed"]}},
            ],
        },
    }
    (result,) = verifiers.score([line], workers=1)
    assert result.status == "fail" and result.reward is not None and result.reward < 1.0
    assert result.error is None


def test_answer_built_to_vanish_at_the_test_points_differs() -> None:
    # The points are seeded (verdicts must be reproducible), so they can be read from the
    # source: x + (x - p1)...(x - p16) agrees with x at every one of them. The exact check
    # after the points agree (cancel on rational functions) must still reject it.
    import sympy

    from verifiers.answers import equivalent
    from verifiers.answers._mathparse import _points

    x = sympy.Symbol("x")
    points = [p[x].real for p in _points([x])]
    candidate = "x + " + "".join(f"(x - ({v!r}))" for v in points)
    out = equivalent({"candidate": candidate, "references": ["x"], "rel_tol": 1e-9})
    assert out["equal"] is False, out
