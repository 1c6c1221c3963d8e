"""Regression corpora: every line of datasets/answers/*.jsonl through its verifier.

Each line is a full trajectory whose ``metadata.expect`` holds the verdict it must get
(``status``, ``reward``, optionally ``feedback_contains`` and ``error_kind``). Lines run two
ways: directly through the verifier class (as the engine's error boundary would, with
``VerifierError`` -> ``error``), and end to end through ``verifiers.score`` with real worker
processes.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_lines import check, direct, lines, params, through_engine

CORPORA = ("exact", "numeric", "math", "regex", "attacks")
RUN = (*CORPORA, "math_classes", "math_wrong")
"""Every corpus that runs here; test_math_classes.py checks the shape of its two."""


def test_corpora_are_large_and_ids_unique() -> None:
    for name in CORPORA:
        corpus = lines(name)
        assert len(corpus) >= 40, name
        ids = [line["id"] for line in corpus]
        assert len(ids) == len(set(ids)), name
        statuses = {line["metadata"]["expect"]["status"] for line in corpus}
        assert {"pass", "fail"} <= statuses, name


@pytest.mark.parametrize(("corpus", "line"), params(*RUN))
def test_line_direct(corpus: str, line: dict[str, Any]) -> None:
    check(direct(line), line["metadata"]["expect"], f"{corpus}:{line['id']}")


@pytest.mark.parametrize("corpus", RUN)
def test_corpus_through_engine(corpus: str) -> None:
    through_engine(corpus)
