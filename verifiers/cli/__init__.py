"""The ``verifiers`` command line: ``score``, ``list``, ``report``, ``sandbox``, ``serve``.

See ``docs/cli.md``. ``main(argv) -> int`` is the testable entry point; ``run()`` is the
console script.
"""

from __future__ import annotations

from ._main import main, run

__all__ = ["main", "run"]
