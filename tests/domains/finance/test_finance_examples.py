"""The shipped example files score as their ``metadata.expected`` says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from verifiers.domains.finance import extract_tables, parse_number, synth

import verifiers

FILES = ["datasets/examples/finance.jsonl", "datasets/finance/examples.jsonl"]


@pytest.mark.parametrize("name", FILES)
def test_examples_score_as_expected(repo_root: Path, name: str) -> None:
    path = repo_root / name
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows
    results = verifiers.score(rows, base_dir=path.parent)
    for row, result in zip(rows, results, strict=True):
        expected = row["metadata"]["expected"]
        assert result.status == expected["status"], (row["id"], result.feedback, result.error)
        for component, value in expected.get("components", {}).items():
            assert result.components[component] == value, (row["id"], component, result.components)
        if "reward" in expected:
            assert result.reward == pytest.approx(expected["reward"])
        if "error_kind" in expected:
            assert result.error is not None and result.error.kind == expected["error_kind"]


def test_committed_pdf_is_the_generated_one(repo_root: Path) -> None:
    """datasets/finance/report.pdf is synth.make_report(2024, pages=3), unruled."""
    path = repo_root / "datasets" / "finance" / "report.pdf"
    assert path.stat().st_size < 100_000
    report = synth.make_report(2024, pages=3)
    data = extract_tables({"path": str(path)})
    assert data["pages"] == 3 and data["scale"] == "thousand"
    for statement, table in zip(report.statements, data["tables"], strict=True):
        printed = [cell for row in table["rows"] for cell in row if parse_number(cell) is not None]
        expected = [
            cell for row in statement.cells() for cell in row if parse_number(cell) is not None
        ]
        assert printed == expected
