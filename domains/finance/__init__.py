"""``finance.formula``: cross-check figures extracted from financial reports.

A completion holds a JSON answer (figures with their citations, a formula or FinQA program,
the result); the verifier checks that the figures are printed where the model says
(``grounding``), that the formula reproduces the answer (``consistency``) and that the answer
matches the reference (``correct``). Documents are PDFs (pdfplumber, in a worker process,
cached by content hash), inline tables and text, or CSV/HTML tables. See docs/finance.md.

Heavy dependencies (pdfplumber, pandas, reportlab) are imported inside the functions that need
them, so importing this package is cheap.
"""

from __future__ import annotations

from . import synth, tatqa
from ._answer import AnswerModel, answer_json_schema, find_answer, read_answer
from ._document import Document, Table
from ._formula import (
    FormulaError,
    FormulaLimits,
    FormulaRejected,
    evaluate,
    parse_formula,
    parse_program,
    run_program,
)
from ._numbers import Number, parse_number
from ._pdf import extract_tables, split_multiline_rows
from ._sources import load_document, pdf_cache
from ._verifier import FinanceSpec, FormulaCrossCheck, Reference, judge

__all__ = [
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
]
