"""Build ``datasets/mesh/scripts.jsonl`` and ``datasets/examples/mesh.jsonl``.

The script-mode lines hold model-style completions (python blocks using numpy and trimesh,
which the sandbox's python image provides) that pass or fail in instructive ways; each
line's ``metadata.expected`` records the verdict. The example lines hold the meshes those
scripts produce, inline as base64, so they score without a sandbox.

Run from the repository root (``test_datasets.py`` checks the committed files are current)::

    /work/venv/bin/python tests/domains/mesh/make_datasets.py
"""

from __future__ import annotations

import base64
import json
import os
import runpy
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]

CUBE_PROMPT = (
    "Write a Python script using numpy and trimesh that builds a 20 mm cube with one corner at "
    "the origin and a 5 mm diameter through hole along z through its centre, and saves it as "
    "output.stl (units: mm)."
)
CUBE_CONSTRAINTS: dict[str, Any] = {
    "extents": {"target": [20, 20, 20], "abs_tol": 0.1, "rel_tol": 0.005},
    "volume": {"target": 7607.3, "rel_tol": 0.01},
    "bodies": 1,
    "genus": 1,
    "inside": [[2, 2, 10], [18, 18, 10]],
    "outside": [[10, 10, 10], [10, 10, -1]],
    "mirror_symmetry": [{"plane": "yz"}, {"plane": "xz"}],
    "min_thickness": 2.0,
    "units": "mm",
}

CUBE_SCRIPT = """\
import numpy as np
import trimesh

# A 20 mm cube (corner at the origin) with a {hole} mm through hole along z, built from rings:
# the outer ring is the square itself (N is a multiple of 8, so its corners are samples).
SIZE, HOLE_D, N = {size}, {hole}, 64
half, r = SIZE / 2, HOLE_D / 2
theta = 2 * np.pi * np.arange(N) / N
d = np.stack([np.cos(theta), np.sin(theta)], axis=1)
inner = half + r * d
outer = half + half * d / np.abs(d).max(axis=1, keepdims=True)
rings = [inner, outer, inner, outer]
heights = [0.0, 0.0, SIZE, SIZE]
vertices = np.vstack([np.column_stack([ring, np.full(N, z)]) for ring, z in zip(rings, heights)])
k = np.arange(N)
k1 = (k + 1) % N
bi, bo, ti, to = k, N + k, 2 * N + k, 3 * N + k
bi1, bo1, ti1, to1 = k1, N + k1, 2 * N + k1, 3 * N + k1
faces = np.vstack([
{top}    np.column_stack([bo, bi1, bo1]), np.column_stack([bo, bi, bi1]),  # bottom, normal -z
    np.column_stack([bo, bo1, to1]), np.column_stack([bo, to1, to]),  # outer wall
    np.column_stack([bi, ti1, bi1]), np.column_stack([bi, ti, ti1]),  # hole wall
])
part = trimesh.Trimesh(vertices, faces)
part.export("{out}")
print(len(part.faces), "faces")
"""
TOP = "    np.column_stack([to, to1, ti1]), np.column_stack([to, ti1, ti]),  # top, normal +z\n"


def _cube(
    size: float = 20.0,
    hole: float = 5.0,
    top: bool = True,
    flip: bool = False,
    out: str = "output.stl",
) -> str:
    text = CUBE_SCRIPT.format(size=size, hole=hole, top=TOP if top else "", out=out)
    if flip:
        text = text.replace(
            "trimesh.Trimesh(vertices, faces)", "trimesh.Trimesh(vertices, faces[:, ::-1])"
        )
    return text


BOX_SCRIPT = """\
import trimesh

cube = trimesh.creation.box(extents=[20, 20, 20])
cube.apply_translation([10, 10, 10])  # corner at the origin
# TODO: the 5 mm hole
cube.export("output.stl")
"""

CRASH_SCRIPT = """\
import cadquery as cq

part = cq.Workplane("XY").box(20, 20, 20).faces(">Z").workplane().hole(5)
cq.exporters.export(part, "output.stl")
"""

TUBE_PROMPT = (
    "Write a Python script using trimesh that builds a tube 40 mm tall with a 30 mm outer "
    "and 20 mm inner diameter, centred on the origin along z, and saves it as output.stl."
)
TUBE_CONSTRAINTS: dict[str, Any] = {
    "extents": {"target": [30, 30, 40], "abs_tol": 0.1},
    "volume": {"target": 15707.96, "rel_tol": 0.02},
    "bodies": 1,
    "genus": 1,
    "min_thickness": 4.5,
    "inside": [[12.5, 0, 0]],
    "outside": [[0, 0, 0]],
    "mirror_symmetry": {"plane": "xy"},
}
TUBE_SCRIPT = """\
import trimesh

tube = trimesh.creation.annulus(r_min={r_min}, r_max=15.0, height=40.0, sections=64)
tube.export("output.stl")
"""


def block(code: str, lead: str = "Here is the script:") -> str:
    return f"{lead}\n\n```python\n{code}```\n"


def script_lines() -> list[dict[str, Any]]:
    """Script-mode trajectories with their expected verdicts."""
    cube_task = {
        "verifier": "mesh.constraints",
        "spec": {"source": "script", "constraints": CUBE_CONSTRAINTS},
    }
    tube_task = {
        "verifier": "mesh.constraints",
        "spec": {"source": "script", "constraints": TUBE_CONSTRAINTS},
    }
    rows: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = [
        ("cube-hole-pass", CUBE_PROMPT, _cube(), cube_task, {"status": "pass", "reward": 1.0}),
        (
            "cube-hole-forgot-hole",
            CUBE_PROMPT,
            BOX_SCRIPT,
            cube_task,
            {
                "status": "fail",
                "reward": 7 / 10,
                "feedback": ["genus is 0, expected 1", "volume is 8000"],
            },
        ),
        (
            "cube-hole-wrong-diameter",
            CUBE_PROMPT,
            _cube(hole=8.0),
            cube_task,
            {"status": "fail", "reward": 9 / 10, "feedback": ["volume is 699"]},
        ),
        (
            "cube-hole-in-metres",
            CUBE_PROMPT,
            _cube(size=0.02, hole=0.005),
            cube_task,
            {
                "status": "fail",
                "reward": 5 / 10,
                "feedback": ["looks modelled in m, not mm (scale it by 1000)"],
            },
        ),
        (
            "cube-hole-open-top",
            CUBE_PROMPT,
            _cube(top=False),
            cube_task,
            {
                "status": "fail",
                "reward": 0.0,
                "feedback": ["gate failed: not a closed volume: the mesh is not watertight"],
            },
        ),
        (
            "cube-hole-inside-out",
            CUBE_PROMPT,
            _cube(flip=True),
            cube_task,
            {"status": "fail", "reward": 0.0, "feedback": ["faces wound inside out"]},
        ),
        (
            "cube-hole-wrong-filename",
            CUBE_PROMPT,
            _cube(out="part.stl"),
            cube_task,
            {"status": "fail", "reward": 0.0, "feedback": ["wrote none of output.stl"]},
        ),
        (
            "cube-hole-missing-cadquery",
            CUBE_PROMPT,
            CRASH_SCRIPT,
            cube_task,
            {"status": "fail", "reward": 0.0, "feedback": ["No module named 'cadquery'"]},
        ),
        (
            "tube-pass",
            TUBE_PROMPT,
            TUBE_SCRIPT.format(r_min=10.0),
            tube_task,
            {"status": "pass", "reward": 1.0},
        ),
        (
            "tube-wall-too-thin",
            TUBE_PROMPT,
            TUBE_SCRIPT.format(r_min=14.5),
            tube_task,
            {
                "status": "fail",
                "reward": 5 / 8,
                "feedback": ["wall too thin: 0.49", "required 4.5"],
            },
        ),
    ]
    return [
        {
            "id": ident,
            "prompt": prompt,
            "completion": block(code),
            "task": task,
            "metadata": {"expected": expected},
        }
        for ident, prompt, code, task, expected in rows
    ]


def run_script(code: str) -> bytes | None:
    """Run a dataset script on the host (trusted: these are our own scripts) for its mesh."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            runpy.run_path(_write(Path(tmp) / "main.py", code), run_name="__main__")
        finally:
            os.chdir(cwd)
        out = Path(tmp) / "output.stl"
        return out.read_bytes() if out.exists() else None


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def example_lines() -> list[dict[str, Any]]:
    """Artifact-mode examples: the scripts' meshes inline as base64."""
    good = run_script(_cube())
    box = run_script(BOX_SCRIPT)
    open_top = run_script(_cube(top=False))
    assert good and box and open_top

    def art(data: bytes) -> dict[str, str]:
        return {"base64": base64.b64encode(data).decode(), "name": "part.stl"}

    spec = {"source": "artifact", "artifact": "mesh", "constraints": CUBE_CONSTRAINTS}
    reference = {"mesh": art(good), "chamfer_max": 1.0, "iou_min": 0.9}
    rows = [
        ("mesh-cube-hole-pass", spec, None, good, "pass", 1.0),
        ("mesh-cube-no-hole", spec, None, box, "fail", 7 / 10),
        ("mesh-cube-open", spec, None, open_top, "fail", 0.0),
        ("mesh-reference-match", {"constraints": {"genus": 1}}, reference, good, "pass", 1.0),
        ("mesh-reference-mismatch", {"constraints": {"genus": 1}}, reference, box, "fail", 1 / 3),
    ]
    return [
        {
            "id": ident,
            "prompt": CUBE_PROMPT,
            "completion": "Saved the part to part.stl.",
            "task": {"verifier": "mesh.constraints", "spec": task_spec}
            | ({} if task_reference is None else {"reference": task_reference}),
            "artifacts": {"mesh": art(mesh)},
            "metadata": {"expected": {"status": status, "reward": reward}},
        }
        for ident, task_spec, task_reference, mesh, status, reward in rows
    ]


def render(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)


def main() -> None:
    (REPO / "datasets" / "mesh").mkdir(parents=True, exist_ok=True)
    (REPO / "datasets" / "mesh" / "scripts.jsonl").write_text(render(script_lines()))
    (REPO / "datasets" / "examples" / "mesh.jsonl").write_text(render(example_lines()))


if __name__ == "__main__":
    main()
