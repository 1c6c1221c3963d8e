"""Build-context hook: download the pure-python wheels listed in requirements.txt.

Containers cannot reach PyPI, so the host's pip fetches them into ``<context>/wheels``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def prepare(context: Path) -> None:
    """Fill ``context/wheels`` (``--no-deps``: numpy and friends come from Debian)."""
    wheels = context / "wheels"
    wheels.mkdir(exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-r",
            str(context / "requirements.txt"),
            "-d",
            str(wheels),
        ],
        check=True,
        timeout=600,
    )
