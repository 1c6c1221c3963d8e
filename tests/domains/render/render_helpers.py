"""Helpers of the render tests: scene scripts and a runner bound to one event loop.

Render jobs run in the shared sandbox stack (``ctx.sandbox("blender")``). A provider's warm
runners are bound to the event loop that started them, so each test module keeps one loop and
one provider (``pool_size=1``: one warm runner) for all its tests: that is also what proves
the runner recovers after every broken script.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from verifiers.domains.render import BlenderRender, RenderSpec
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Result, Trajectory

GOOD_SCENE = """
import bpy
bpy.ops.mesh.primitive_plane_add(size=10)
bpy.ops.mesh.primitive_cube_add(size=2, location=(0, 0, 1))
bpy.context.active_object.name = "Table"
bpy.ops.object.camera_add(location=(6, -6, 5), rotation=(1.0, 0, 0.785))
bpy.context.scene.camera = bpy.context.active_object
bpy.ops.object.light_add(type="SUN", location=(0, 0, 5))
bpy.context.active_object.data.energy = 3
"""

GOOD_SPEC: dict[str, Any] = {
    "expect": {
        "objects": [
            {
                "name": "Table",
                "type": "MESH",
                "bbox": {"min": [-1, -1, 0], "max": [1, 1, 2], "tol": 0.05},
            }
        ]
    }
}


def completion(script: str) -> str:
    return f"Sure, here it is.\n\n```python\n{script.strip()}\n```\n"


class RenderRunner:
    """Runs ``render.blender`` on one loop with one verifier and one sandbox provider."""

    def __init__(self, kind: str = "local", **settings: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.verifier = BlenderRender()
        self.kind = kind
        self.provider = open_provider(
            kind,  # type: ignore[arg-type]
            SandboxSettings(**{"pool_size": 1, **settings}),
        )

    def verify(
        self, script: str, spec: dict[str, Any] | None = None, *, base_dir: Path | None = None
    ) -> Result:
        return self.loop.run_until_complete(self.averify(script, spec, base_dir=base_dir))

    async def averify(
        self, script: str, spec: dict[str, Any] | None = None, *, base_dir: Path | None = None
    ) -> Result:
        spec_obj = RenderSpec.model_validate(spec if spec is not None else GOOD_SPEC)
        traj = Trajectory(completion=completion(script), task={"verifier": "render.blender"})
        ctx = VerifierContext(
            deadline=time.monotonic() + 120,
            base_dir=base_dir or Path("."),
            sandboxes=self.provider,
        )
        return await self.verifier.verify(traj, spec_obj, ctx)

    def close(self) -> None:
        self.loop.run_until_complete(self.verifier.close())
        self.loop.run_until_complete(self.provider.close())
        self.loop.close()


_HUGE_PAGES_JOB = """
import ctypes, os
rollup = open("/proc/self/smaps_rollup").read()
huge_kb = int(rollup.split("AnonHugePages:")[1].split()[0])
best, start, end = 0, 0, 0
vma = None
for line in open("/proc/self/smaps"):
    head = line.split()
    if "-" in head[0] and len(head) >= 5:
        vma = [int(x, 16) for x in head[0].split("-")]
    elif head[0] == "AnonHugePages:" and int(head[1]) > best:
        best, (start, end) = int(head[1]), vma
# The middle 2 MiB of the zygote's largest huge-page mapping, as this fork inherited it.
addr = ((start + end) // 2) & ~((2 << 20) - 1)
before = ctypes.string_at(addr, 64).hex() if best else ""
if best and os.environ.get("WRITE"):
    ctypes.memset(addr, 0xA5, 64)
    assert ctypes.string_at(addr, 64) == b"\\xa5" * 64
os.write(1, f"{huge_kb} {addr} {before}\\n".encode())
os._exit(0)
"""


def zygote_huge_pages(runner: RenderRunner) -> tuple[int, list[str]]:
    """KiB of huge pages a blender job inherits from the zygote, and what three jobs read at
    one address inside one of them: the second job wrote over it first (its own copy)."""

    async def jobs() -> list[str]:
        seen = []
        for env in ({}, {"WRITE": "1"}, {}):
            async with runner.provider.session("blender", memory_mb=256, pids=16) as sb:
                run = await sb.exec(["python", "-c", _HUGE_PAGES_JOB], env=env, timeout=60)
                assert run.returncode == 0, run.text("stderr")
                seen.append(run.text("stdout").strip())
        return seen

    seen = runner.loop.run_until_complete(jobs())
    return int(seen[0].split()[0]), seen


def huge_pages_possible() -> bool:
    """Whether this kernel can collapse memory into huge pages (``MADV_COLLAPSE``: 6.1+)."""
    import os

    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except (OSError, ValueError):
        return False
    return "[never]" not in mode and (major, minor) >= (6, 1)
