"""The render attack corpus on the local backend (blender runtime under bubblewrap)."""

from __future__ import annotations

from typing import Any

import pytest
from attack_corpus import attack_rows, check_row
from render_helpers import RenderRunner

pytestmark = [pytest.mark.blender, pytest.mark.bwrap]


@pytest.mark.parametrize("item", attack_rows(), ids=lambda d: str(d["id"]))
def test_attack_corpus_local(local_runner: RenderRunner, item: dict[str, Any]) -> None:
    check_row(local_runner, item)


def test_corpus_covers_every_family() -> None:
    families = {row["metadata"]["family"] for row in attack_rows()}
    assert families == {"control", "no-geometry", "judge-tamper", "poison", "judge-memory"}
    assert sum(row["metadata"]["family"] != "control" for row in attack_rows()) >= 30
