"""``python -m verifiers.cli ...``: the same as the ``verifiers`` console script."""

from __future__ import annotations

from ._main import run

if __name__ == "__main__":
    run()
