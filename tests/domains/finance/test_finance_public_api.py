from __future__ import annotations

from pathlib import Path

import verifiers.domains.finance as finance
from api_pins import assert_pinned, heavy_imports


def test_all_is_pinned() -> None:
    assert_pinned(
        finance,
        [
            "AnswerModel",
            "Document",
            "FinanceSpec",
            "FormulaCrossCheck",
            "FormulaError",
            "FormulaLimits",
            "FormulaRejected",
            "Number",
            "Reference",
            "Table",
            "answer_json_schema",
            "evaluate",
            "extract_tables",
            "find_answer",
            "judge",
            "load_document",
            "parse_formula",
            "parse_number",
            "parse_program",
            "pdf_cache",
            "read_answer",
            "run_program",
            "split_multiline_rows",
            "synth",
            "tatqa",
        ],
        registers=["finance.formula"],
    )


def test_import_stays_light() -> None:
    heavy = ("pdfplumber", "pdfminer", "reportlab", "pandas", "sympy", "lxml")
    assert heavy_imports(["verifiers.domains.finance"], heavy) == []


def test_docs_carry_the_current_schema(repo_root: Path) -> None:
    import json

    text = (repo_root / "docs" / "finance.md").read_text()
    block = text.split("<details><summary>schema</summary>\n\n```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == finance.answer_json_schema()
