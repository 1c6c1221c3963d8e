"""Peer suite: Math-Verify's public gold/prediction pairs, scored by ``answer.math``.

Math-Verify (Hugging Face) is the checker math RL users know; its own test files hold a few
hundred gold/prediction pairs with the verdict it must give. This script converts those pairs
at run time into ``answer.math`` trajectories (the gold is ``task.reference``, the prediction
is the ``completion``) and reports how many of the equivalent pairs pass, how many of the
wrong pairs fail, and every ``error``. Their data is never copied into this repository: the
installed ``math_verify`` package does not ship its tests, so point ``--tests`` at the
``tests/`` folder of a Math-Verify checkout (``git clone
https://github.com/huggingface/Math-Verify``).

How a pair is read: each ``@pytest.mark.parametrize`` whose argument names start with
``gold`` and ``pred`` (test files read with :mod:`ast`, literals only: nothing of theirs is
imported or executed), with the expected verdict and the options the test passes to its
``compare_strings`` helper (``match_types``, ``precision``, ``strict``,
``allow_set_relation_comp``). A pair is kept only when the installed Math-Verify, run with the
same options, gives the expected verdict (so the suite is what Math-Verify itself agrees
with). The options map to ``answer.math`` spec fields: ``precision`` to ``decimal_places``,
``allow_set_relation_comp`` to ``inequality_for_interval`` (and a ``precision`` other than 6 sets
``decimal_rel_tol`` to ``10**(1 - precision)``); ``strict=False`` pairs (a renamed
variable that Math-Verify then accepts) are reported apart, as the project never equates
renamed unknowns.

Usage::

    python benchmarks/math_peer.py --tests /path/to/Math-Verify/tests [--show fail,error]

Prints the failing pairs (when asked) and one JSON summary line.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

import verifiers


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _call_options(func: ast.FunctionDef) -> dict[str, Any] | None:
    """Options of the ``compare_strings(...)`` call in a test body (None: not such a test)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "compare_strings":
            options: dict[str, Any] = {"match_types": ["latex", "expr"], "precision": 6}
            options.update(strict=True, allow_set_relation_comp=False)
            for keyword in node.keywords:
                if keyword.arg is None:
                    continue
                if isinstance(keyword.value, ast.Name):
                    options[keyword.arg] = ("param", keyword.value.id)
                else:
                    options[keyword.arg] = _literal(keyword.value)
            return options
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "verify":
            # ``verify(parse(gold), parse(pred))``: Math-Verify's default extraction.
            return {"match_types": None, "precision": 6, "strict": True}
    return None


def load_pairs(tests: Path) -> list[dict[str, Any]]:
    """Every (gold, pred, expected, options) of the parametrized ``compare_strings`` tests."""
    pairs: list[dict[str, Any]] = []
    for path in sorted(tests.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in tree.body:
            if not isinstance(func, ast.FunctionDef):
                continue
            options = _call_options(func)
            if options is None:
                continue
            for deco in func.decorator_list:
                if not (isinstance(deco, ast.Call) and len(deco.args) >= 2):
                    continue
                names = _literal(deco.args[0])
                if not isinstance(names, str):
                    continue
                argnames = [n.strip() for n in names.split(",")]
                if argnames[:2] != ["gold", "pred"] or not isinstance(deco.args[1], ast.List):
                    continue
                for index, element in enumerate(deco.args[1].elts):
                    row = _literal(element)
                    if not isinstance(row, tuple) or len(row) != len(argnames):
                        continue
                    values = dict(zip(argnames, row, strict=True))
                    resolved = {
                        key: values[val[1]] if isinstance(val, tuple) else val
                        for key, val in options.items()
                    }
                    pairs.append(
                        {
                            "where": f"{path.name}::{func.name}[{index}]",
                            "gold": values["gold"],
                            "pred": values["pred"],
                            "expected": int(values.get("expected", values.get("result", -1))),
                            **resolved,
                        }
                    )
    return pairs


def math_verify_verdict(pair: dict[str, Any]) -> int:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if pair["match_types"] is None:
        return int(verify(parse(pair["gold"]), parse(pair["pred"])))
    targets: list[Any] = []
    for kind in pair["match_types"]:
        if kind == "latex":
            targets.append(LatexExtractionConfig(boxed_match_priority=0))
        elif kind == "expr":
            targets.append(ExprExtractionConfig())
    gold = parse(pair["gold"], targets)
    pred = parse(pair["pred"], targets)
    return int(
        verify(
            gold,
            pred,
            float_rounding=pair["precision"],
            strict=pair["strict"],
            allow_set_relation_comp=pair.get("allow_set_relation_comp", False),
        )
    )


def trajectory(pair: dict[str, Any], index: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"decimal_places": pair["precision"]}
    if pair["precision"] != 6:
        # Math-Verify rounds to `precision` places; answer.math also bounds the relative
        # error of a decimal (decimal_rel_tol, 1e-6 for six places): one place looser.
        spec["decimal_rel_tol"] = 10.0 ** (1 - pair["precision"])
    if pair.get("allow_set_relation_comp"):
        spec["inequality_for_interval"] = True
    return {
        "id": f"mv{index}",
        "completion": pair["pred"],
        "task": {"verifier": "answer.math", "reference": pair["gold"], "spec": spec},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=Path, required=True, help="Math-Verify's tests/ folder")
    parser.add_argument("--show", default="", help="comma list of: fail, error, pass")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.tests.is_dir():
        print(f"--tests {args.tests}: not a folder; give Math-Verify's tests/", file=sys.stderr)
        return 2
    pairs = load_pairs(args.tests)
    kept = [p for p in pairs if math_verify_verdict(p) == p["expected"]]
    loose = [p for p in kept if not p["strict"]]
    kept = [p for p in kept if p["strict"]]
    results = verifiers.score(
        [trajectory(p, i) for i, p in enumerate(kept)], workers=args.workers, timeout_s=60
    )
    show = set(filter(None, args.show.split(",")))
    counts = {"equivalent": 0, "equivalent_pass": 0, "wrong": 0, "wrong_fail": 0, "errors": 0}
    for pair, result in zip(kept, results, strict=True):
        want_pass = pair["expected"] == 1
        counts["equivalent" if want_pass else "wrong"] += 1
        good = (result.status == "pass") == want_pass and result.status != "error"
        if result.status == "error":
            counts["errors"] += 1
        elif want_pass and good:
            counts["equivalent_pass"] += 1
        elif not want_pass and good:
            counts["wrong_fail"] += 1
        label = "error" if result.status == "error" else ("pass" if good else "fail")
        if label in show:
            print(
                json.dumps(
                    {
                        "where": pair["where"],
                        "gold": pair["gold"],
                        "pred": pair["pred"],
                        "expected": pair["expected"],
                        "status": result.status,
                        "feedback": (result.feedback or "")[:300],
                        "error": result.error.message[:300] if result.error else None,
                    },
                    ensure_ascii=False,
                )
            )
    summary = {
        "benchmark": "answers.math_peer",
        "pairs_read": len(pairs),
        "kept_math_verify_agrees": len(kept),
        "strict_false_left_out": len(loose),
        **counts,
        "equivalent_pass_rate": round(counts["equivalent_pass"] / max(1, counts["equivalent"]), 4),
        "wrong_fail_rate": round(counts["wrong_fail"] / max(1, counts["wrong"]), 4),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
