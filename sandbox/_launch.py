"""How a runtime's runner is launched: its interpreter, its zygote preload, its memory.

Most runtimes run the runner with the image's ``/usr/bin/python3`` and need nothing else. A
runtime whose jobs need a heavy module warm (``blender``: ``bpy``) says so in an optional
``runtime.json`` next to its Dockerfile::

    {"python": "/opt/bpy-venv/bin/python",                 # runner + job interpreter (image)
     "local_python": "~/.cache/verifiers/bpy-venv/bin/python",  # the same, local backend
     "local_hint": "run .ci/setup.d/30-blender.sh",        # shown when it is missing
     "preload": "preload.py",                              # run once in the zygote
     "overhead_mb": 512}                                   # zygote memory in the cgroup

Both backends read the same file, so a runtime behaves the same on each: jobs that run the
runtime's interpreter plainly (``python FILE``) are forks of a zygote that ran ``preload``
(see ``_runner._run_preload``), with the session's own uid, rlimits and work dir. Unknown
keys are errors (a typo would otherwise silently lose the preload).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from verifiers.errors import SandboxUnavailable

from ._images import ImageDef

__all__ = ["RunnerLaunch", "runner_launch"]

DEFAULT_PYTHON = "/usr/bin/python3"
_KEYS = {"python", "local_python", "local_hint", "preload", "overhead_mb"}


@dataclass(frozen=True)
class RunnerLaunch:
    """What a runtime's ``runtime.json`` says (defaults: a plain python3 runner)."""

    python: str = DEFAULT_PYTHON
    """Interpreter of the runner (and of fast-path jobs) inside the image."""
    local_python: Path | None = None
    """The same interpreter on the host, for the local backend (None: the default one)."""
    local_hint: str = ""
    """How to install ``local_python`` when it is missing."""
    preload: str = ""
    """Source the zygote runs once before any job (empty: none)."""
    overhead_mb: int = 0
    """Memory the preloaded zygote keeps resident, added to a container's cgroup limit."""

    def local_interpreter(self) -> Path | None:
        """``local_python`` when set.

        Raises:
            SandboxUnavailable: it is set but missing (with ``local_hint``).
        """
        if self.local_python is None:
            return None
        if not self.local_python.exists():
            raise SandboxUnavailable(
                f"the runtime's interpreter {self.local_python} is missing",
                hint=self.local_hint or "build the runtime (see docs/sandbox.md)",
            )
        return self.local_python


def runner_launch(image: ImageDef) -> RunnerLaunch:
    """The launch settings of ``image`` (its ``runtime.json``, or the defaults).

    Raises:
        SandboxUnavailable: the file is malformed (a broken runtime, never a job's fault).
    """
    path = image.path / "runtime.json"
    if not path.is_file():
        return RunnerLaunch()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        unknown = set(raw) - _KEYS
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)} (known: {sorted(_KEYS)})")
        preload = ""
        if raw.get("preload"):
            preload = (image.path / str(raw["preload"])).read_text(encoding="utf-8")
        local = raw.get("local_python")
        return RunnerLaunch(
            python=str(raw.get("python") or DEFAULT_PYTHON),
            local_python=Path(os.path.expanduser(str(local))) if local else None,
            local_hint=str(raw.get("local_hint") or ""),
            preload=preload,
            overhead_mb=int(raw.get("overhead_mb") or 0),
        )
    except (OSError, ValueError, TypeError) as exc:
        raise SandboxUnavailable(
            f"runtime definition {path} is invalid: {exc}",
            hint=f"fix {path} (keys: {', '.join(sorted(_KEYS))})",
        ) from None
