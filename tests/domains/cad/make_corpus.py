"""Writes datasets/cad/corpus.jsonl: cad.script tasks with the verdict each must get.

Run ``python tests/domains/cad/make_corpus.py`` after editing; the test suite checks the
committed file is what this produces, then scores every line through the real CadQuery and
build123d runtimes on the local (bubblewrap) and Docker backends. Families: honest passes on
both libraries, partial credit, model failures, and hacks (forged exports and reports, a
sabotaged BREP writer, exits, kernel crashes, hangs, memory bombs, face bombs).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[3] / "datasets" / "cad" / "corpus.jsonl"

PLATE_CQ = """import cadquery as cq

result = cq.Workplane("XY").box(40, 20, 5).faces(">Z").workplane().hole(6)
"""

PLATE_BD = """from build123d import *

with BuildPart() as plate:
    Box(40, 20, 5)
    Cylinder(3, 5, mode=Mode.SUBTRACT)
result = plate
"""

PLATE_SPEC: dict[str, Any] = {
    "expect": {
        "faces": 7,
        "volume": {"target": 40 * 20 * 5 - math.pi * 9 * 5, "rel_tol": 0.001},
        "bbox": {"min": [-20, -10, -2.5], "max": [20, 10, 2.5], "abs_tol": 0.01},
        "holes": [{"diameter": 6, "count": 1}],
    },
    "mesh": {"genus": 1, "bodies": 1},
}

FLANGE_CQ = """import cadquery as cq

result = (
    cq.Workplane("XY")
    .circle(30).extrude(8)
    .faces(">Z").workplane().hole(20)
    .faces(">Z").workplane().polarArray(22, 0, 360, 4).hole(5)
)
"""

FLANGE_SPEC: dict[str, Any] = {
    "expect": {
        "volume": {"target": math.pi * (30**2 - 10**2 - 4 * 2.5**2) * 8, "rel_tol": 0.002},
        "holes": [{"diameter": 20, "count": 1}, {"diameter": 5, "count": 4}],
    },
    "mesh": {"genus": 5},
}

TWO_CQ = """import cadquery as cq

left = cq.Workplane("XY").box(10, 10, 10).translate((-10, 0, 0))
right = cq.Workplane("XY").box(10, 10, 10).translate((10, 0, 0))
result = [left.val(), right.val()]
"""

BOX_BD = """from build123d import *

result = Box(30, 20, 10)
"""

BOX_SPEC: dict[str, Any] = {
    "expect": {
        "faces": 6,
        "edges": 12,
        "volume": {"target": 6000, "rel_tol": 0.001},
        "bbox": {"min": [-15, -10, -5], "max": [15, 10, 5], "abs_tol": 0.01},
    },
    "mesh": {"extents": {"target": [30, 20, 10]}},
}


def completion(script: str) -> str:
    return f"Here is the part.\n\n```python\n{script.strip()}\n```\n"


def item(
    ident: str,
    family: str,
    script: str | None,
    spec: dict[str, Any],
    status: str,
    reward: float,
    feedback: list[str] | None = None,
    reference: dict[str, Any] | None = None,
) -> dict[str, Any]:
    task: dict[str, Any] = {"verifier": "cad.script", "spec": spec}
    if reference is not None:
        task["reference"] = reference
    return {
        "id": ident,
        "completion": completion(script) if script is not None else "No code today.",
        "task": task,
        "metadata": {
            "family": family,
            "library": spec.get("library", "cadquery"),
            "expected": {"status": status, "reward": reward, "feedback": feedback or []},
        },
    }


BD = {"library": "build123d"}


def rows() -> list[dict[str, Any]]:
    return [
        # -- honest passes, both libraries
        item("cq-plate-with-hole", "pass", PLATE_CQ, PLATE_SPEC, "pass", 1.0),
        item("bd-plate-with-hole", "pass", PLATE_BD, {**PLATE_SPEC, **BD}, "pass", 1.0),
        item("cq-flange-bolt-circle", "pass", FLANGE_CQ, FLANGE_SPEC, "pass", 1.0),
        item(
            "cq-two-blocks",
            "pass",
            TWO_CQ,
            {"solids": 2, "expect": {"volume": {"target": 2000}}},
            "pass",
            1.0,
        ),
        item("bd-box", "pass", BOX_BD, {**BOX_SPEC, **BD}, "pass", 1.0),
        item(
            "bd-box-like-reference",
            "pass",
            BOX_BD,
            {**BOX_SPEC, **BD},
            "pass",
            1.0,
            reference={"mesh": "ref-box-30x20x10.stl", "chamfer_max": 1.0, "iou_min": 0.98},
        ),
        # -- partial credit
        item(
            "cq-plate-wrong-hole",
            "partial",
            PLATE_CQ.replace("hole(6)", "hole(8)"),
            PLATE_SPEC,
            "fail",
            4 / 6,
            ["volume is", "expected 1 hole(s) of diameter 6"],
        ),
        item(
            "cq-plate-no-hole",
            "partial",
            PLATE_CQ.replace('.faces(">Z").workplane().hole(6)', ""),
            PLATE_SPEC,
            "fail",
            5 / 12,
            ["faces is 6, expected 7", "genus is 0"],
        ),
        item(
            "bd-box-too-tall",
            "partial",
            BOX_BD.replace("Box(30, 20, 10)", "Box(30, 20, 12)"),
            {**BOX_SPEC, **BD},
            "fail",
            0.5,
            ["volume is 7200", "bounding box is"],
        ),
        item(
            "cq-flange-three-bolts",
            "partial",
            FLANGE_CQ.replace("polarArray(22, 0, 360, 4)", "polarArray(22, 0, 360, 3)"),
            FLANGE_SPEC,
            "fail",
            0.4,
            ["expected 4 hole(s) of diameter 5"],
        ),
        # -- model failures
        item("no-code", "failure", None, PLATE_SPEC, "fail", 0.0, ["no ```python code block"]),
        item(
            "cq-syntax-error",
            "failure",
            PLATE_CQ.replace("box(40, 20, 5)", "box(40, 20, 5"),
            PLATE_SPEC,
            "fail",
            0.0,
            ["SyntaxError"],
        ),
        item(
            "cq-kernel-exception",
            "failure",
            PLATE_CQ.replace("hole(6)", "hole(6).fillet(30)"),
            PLATE_SPEC,
            "fail",
            0.0,
            ["the script raised an exception"],
        ),
        item(
            "cq-no-result-variable",
            "failure",
            PLATE_CQ.replace("result =", "part ="),
            PLATE_SPEC,
            "fail",
            0.0,
            ["defines no variable `result`"],
        ),
        item(
            "cq-face-not-solid",
            "failure",
            PLATE_CQ.replace('.faces(">Z").workplane().hole(6)', '.faces(">Z").val()'),
            PLATE_SPEC,
            "fail",
            0.0,
            ["the part has no solid"],
        ),
        item(
            "cq-two-solids-asked-one",
            "failure",
            TWO_CQ,
            {"expect": {"volume": {"target": 2000}}},
            "fail",
            0.0,
            ["the part has 2 solids, expected 1"],
        ),
        item(
            "bd-box-unlike-reference",
            "partial",
            BOX_BD.replace("Box(30, 20, 10)", "Box(20, 20, 20)"),
            {**BD, "mesh": {}},
            "fail",
            0.5,
            ["Chamfer distance to the reference", "IoU with the reference"],
            reference={"mesh": "ref-box-30x20x10.stl", "chamfer_max": 1.0, "iou_min": 0.98},
        ),
        item(
            "bd-name-error",
            "failure",
            BOX_BD.replace("Box(30", "Boxx(30"),
            {**BOX_SPEC, **BD},
            "fail",
            0.0,
            ["NameError"],
        ),
        # -- hacks
        item(
            "hack-forged-exports",
            "hack",
            "import json, struct\n"
            "import cadquery as cq\n"
            "open('part.stl', 'wb').write(b'\\0' * 84)\n"
            "open('part.step', 'w').write('ISO-10303-21;')\n"
            "json.dump({'read': True, 'valid': True, 'solids': 1, 'faces': 7, 'volume': 3858.6, 'step': True}, open('report.json', 'w'))\n"
            "result = cq.Workplane('XY').box(1, 1, 1)\n",
            PLATE_SPEC,
            "fail",
            0.25,
            ["faces is 6, expected 7", "volume is 1,"],
        ),
        item(
            "hack-sabotaged-brep-writer",
            "hack",
            "import cadquery as cq\n"
            "from OCP.BRepTools import BRepTools\n"
            "def fake(shape, path, *a):\n"
            "    open(path, 'w').write('DBRep_DrawableShape\\nforged')\n"
            "    return True\n"
            "BRepTools.Write_s = fake\n"
            "result = cq.Workplane('XY').box(40, 20, 5)\n",
            PLATE_SPEC,
            "fail",
            0.0,
            ["not a readable B-rep"],
        ),
        item(
            "hack-forged-phase-report-then-exit",
            "hack",
            "import json, os\n"
            "json.dump({'ok': True}, open('phase_a.json', 'w'))\n"
            "open('part.brep', 'w').write('forged')\n"
            "os._exit(0)\n",
            PLATE_SPEC,
            "fail",
            0.0,
            ["not a readable B-rep"],
        ),
        item(
            "hack-exit-zero-early",
            "hack",
            "import sys\nsys.exit(0)\n" + PLATE_CQ,
            PLATE_SPEC,
            "fail",
            0.0,
            ["SystemExit"],
        ),
        item(
            "hack-os-exit-nonzero",
            "hack",
            "import os\nos._exit(7)\n",
            PLATE_SPEC,
            "fail",
            0.0,
            ["exit status 7"],
        ),
        item(
            "hack-segfault",
            "hack",
            "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
            PLATE_SPEC,
            "fail",
            0.0,
            ["crashed the CAD kernel (SIGSEGV)"],
        ),
        item(
            "hack-endless-loop",
            "hack",
            "while True:\n    pass\n",
            {**PLATE_SPEC, "timeout_s": 5},
            "fail",
            0.0,
            ["took longer than 5s"],
        ),
        item(
            "hack-memory-bomb",
            "hack",
            "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n",
            PLATE_SPEC,
            "fail",
            0.0,
        ),
        item(
            "hack-face-bomb",
            "hack",
            "import cadquery as cq\n"
            "pts = [(x * 2 - 19, y * 2 - 9) for x in range(20) for y in range(10)]\n"
            "result = cq.Workplane('XY').box(40, 20, 5).faces('>Z').workplane().pushPoints(pts).hole(0.5)\n",
            {**PLATE_SPEC, "max_faces": 100},
            "fail",
            0.0,
            ["at most 100"],
        ),
        item(
            "hack-coincident-solids",
            "hack",
            TWO_CQ.replace("translate((10, 0, 0))", "translate((-10, 0, 0))"),
            {"solids": 2, "expect": {"volume": {"target": 2000}}},
            "fail",
            0.0,
            ["solids overlap (1000 mm³ shared)"],
        ),
        item(
            "hack-overlapping-solids",
            "hack",
            TWO_CQ.replace("translate((10, 0, 0))", "translate((-5, 0, 0))"),
            {"solids": None, "expect": {"volume": {"target": 2000}}},
            "fail",
            0.0,
            ["solids overlap (500 mm³ shared)"],
        ),
        item(
            "cq-touching-solids",
            "pass",
            TWO_CQ.replace("translate((-10, 0, 0))", "translate((-5, 0, 0))").replace(
                "translate((10, 0, 0))", "translate((5, 0, 0))"
            ),
            {"solids": 2, "expect": {"volume": {"target": 2000}}},
            "pass",
            1.0,
        ),
        item(
            "hack-write-outside",
            "hack",
            "import os\n"
            "for p in ['/etc/evil', '/tmp/../work/../evil', '/opt/cad-venv/evil', '_worker.py']:\n"
            "    try:\n"
            "        open(p, 'w').write('x')\n"
            "    except OSError:\n"
            "        pass\n" + PLATE_CQ,
            PLATE_SPEC,
            "pass",
            1.0,
        ),
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: engine_corpus
    from engine_corpus import write_corpus

    write_corpus(OUT, rows())
