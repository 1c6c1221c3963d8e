"""The old entry point of the worker processes: ``python -m verifiers._worker`` runs
:mod:`verifiers._process_main` (kept for commands and notes that still name it)."""

from __future__ import annotations

from ._process_main import main, serve

__all__ = ["main", "serve"]

if __name__ == "__main__":
    main()
