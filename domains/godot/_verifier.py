"""``game.godot``: run a model-written Godot project fragment headless and judge its scene.

Each check runs in the ``godot`` sandbox runtime through ``ctx.sandbox`` (so the
``--sandbox`` flag, hardening, limits and reaping are the shared ones), as a forked child of
a warm engine (the fork server, ``_forkqueue.py``: checks that arrive together share one
engine start) or, where the fork server cannot give a certain verdict, in a fresh engine
(``_fresh.py``). Both run the same trusted harness the same way:

1. the model's files are written into the project root, read-only, beside
   ``project.godot``, the trusted harness (``_harness3.gd``) and the job; the two per-check
   tokens go into ``_token``, which the harness deletes before any model code can run;
2. the engine (jailed before it reads a model file) runs the harness as its main loop: it
   compiles every script (parse errors), loads and instances the scene, runs ``frames``
   fixed-step frames with the model's scripts live, packs the scene at the start and at the
   end, frees the model's nodes, saves both states as text scenes and writes its reports;
3. the host reads stderr (``SCRIPT ERROR`` lines), checks the tokens, parses the states with
   its own reader (``_tscn.py``) and scores (``_checks.py``).

Every way the run can end (parse error, a crash of the engine, ``quit()``, a timeout, an
out-of-memory kill, a huge scene, a forged report) is the model's ``fail``. A runtime that
cannot start is ``SandboxUnavailable`` (``error/infra``), decided before model code runs or
by a probe when the engine did not start at all (exit 126/127).
"""

from __future__ import annotations

from typing import ClassVar

from verifiers.context import VerifierContext
from verifiers.protocol import Verifier
from verifiers.registry import register
from verifiers.text import completion_text
from verifiers.types import Result, Trajectory

from ._checks import evaluate
from ._files import FileMapError, builder_scene, project_files
from ._forkqueue import run_check
from ._fresh import RUNTIME
from ._spec import GodotSpec

__all__ = ["GodotScene", "RUNTIME"]

_START_GRACE_S = 20.0
_QUEUE_S = 10.0
"""How long a check may wait for the fork server (behind the checks before it, or for a
batch to start) before it runs in a fresh engine instead (``_forkqueue.py``)."""


@register("game.godot")
class GodotScene(Verifier[GodotSpec]):
    """Runs the completion's Godot files headless; see the module docstring."""

    Spec: ClassVar[type[GodotSpec]] = GodotSpec
    version: ClassVar[str] = "1"

    def budget_s(self, spec: GodotSpec) -> float:
        """Enough for the worst path a check can take, so a slow scene is judged (a fail),
        not cut off (an error): ``_QUEUE_S`` waiting for the fork server, a forked child up
        to its deadline that then has to be re-run (it slept, or the machine starved it:
        ``_forkqueue.py``), and a fresh engine with a runner's start."""
        return _QUEUE_S + 2 * spec.timeout_s + _START_GRACE_S

    async def verify(self, trajectory: Trajectory, spec: GodotSpec, ctx: VerifierContext) -> Result:
        files = project_of(trajectory, spec)
        if isinstance(files, Result):
            return files
        run = await run_check(files, spec, ctx, queue_s=_QUEUE_S)
        return evaluate(run, spec)


def project_of(trajectory: Trajectory, spec: GodotSpec) -> dict[str, str] | Result:
    """The completion's project files, or the model's ``fail`` when they break a rule."""
    try:
        files = project_files(
            completion_text(trajectory),
            max_files=spec.max_files,
            max_bytes=spec.max_file_bytes,
        )
    except FileMapError as exc:
        return Result.failed(str(exc), components=dict.fromkeys(spec.component_names(), 0.0))
    if spec.scene not in files and "main.gd" in files and len(files) == 1:
        files[spec.scene] = builder_scene(files["main.gd"])
    if spec.scene not in files:
        return Result.failed(
            f"the completion has no {spec.scene!r} (files: {', '.join(sorted(files))})",
            components=dict.fromkeys(spec.component_names(), 0.0),
        )
    return files
