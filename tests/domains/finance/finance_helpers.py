"""Shared trajectories for the finance verifier tests (imported by module name)."""

from __future__ import annotations

from typing import Any

TABLE = [
    ["", "", "Years Ended September 30,", ""],
    ["", "2019", "2018", "2017"],
    ["Fixed Price", "$  1,452.4", "$  1,146.2", "$  1,036.9"],
    ["Other", "44.1", "56.7", "70.8"],
    ["Cost of sales", "(1,003.2)", "(812.0)", "—"],
    ["Total sales", "$1,496.5", "$1,202.9", "$1,107.7"],
]


def item(
    answer: dict[str, Any] | str,
    *,
    reference: Any = None,
    spec: dict[str, Any] | None = None,
    document: dict[str, Any] | None = None,
    prompt: str = "By what percentage did Total sales grow from 2018 to 2019?",
) -> dict[str, Any]:
    """A finance.formula trajectory over TABLE (or ``document``)."""
    import json

    completion = (
        answer
        if isinstance(answer, str)
        else "Here is my work.\n```json\n" + json.dumps(answer) + "\n```"
    )
    full_spec = {"document": document if document is not None else {"table": TABLE}, **(spec or {})}
    return {
        "prompt": prompt,
        "completion": completion,
        "task": {"verifier": "finance.formula", "spec": full_spec, "reference": reference},
    }


GROWTH = {
    "answer": 24.41,
    "scale": "percent",
    "formula": "(rev_2019 - rev_2018) / rev_2018 * 100",
    "operands": {
        "rev_2019": {"value": "1,496.5", "cite": {"row": "Total sales", "column": "2019"}},
        "rev_2018": {"value": "$1,202.9", "cite": {"row": "Total sales", "column": "2018"}},
    },
}
