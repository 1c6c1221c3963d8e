"""Build-context hook: download bpy 5.0.1 and numpy<2 wheels (with their dependencies).

Containers cannot reach PyPI, so the host's pip fetches wheels for CPython 3.11 on manylinux
x86-64 into ``<context>/wheels`` (pip's cache makes a re-run cheap).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REQUIREMENTS = ["bpy==5.0.1", "numpy<2"]


def prepare(context: Path) -> None:
    """Fill ``context/wheels`` with everything ``pip install --no-index`` needs."""
    wheels = context / "wheels"
    wheels.mkdir(exist_ok=True)
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"]
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    argv += ["--abi", "cp311", "--abi", "abi3", "--abi", "none"]
    for platform in platforms:
        argv += ["--platform", platform]
    argv += ["-d", str(wheels), *REQUIREMENTS]
    subprocess.run(argv, check=True, timeout=1800)
