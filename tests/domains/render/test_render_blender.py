"""render.blender with real bpy on the local sandbox backend (the blender runtime in bubblewrap).

Every broken script below runs on the same provider (one warm runner), one after the other,
and a good scene still passes afterwards: the shared sandbox stack recovers from exceptions,
timeouts, aborts and memory bombs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from render_helpers import GOOD_SCENE, RenderRunner, huge_pages_possible, zygote_huge_pages

from verifiers.data import data_path
from verifiers.errors import InfraError
from verifiers.types import Trajectory

pytestmark = [pytest.mark.blender, pytest.mark.bwrap]

SCENE_BASE = GOOD_SCENE


def test_good_scene_passes(local_runner: RenderRunner) -> None:
    result = local_runner.verify(GOOD_SCENE)
    assert result.status == "pass", result.feedback
    assert result.reward == 1.0
    assert result.details["image"]["mean_luminance"] > 0.1
    assert result.details["worker"] == {"runtime": "blender", "blender": "5.0.1"}
    assert result.details["scene"]["camera"]["sees"]


def test_exception_gives_traceback_in_the_script(local_runner: RenderRunner) -> None:
    script = "import bpy\n\ndef build():\n    bpy.ops.mesh.primitive_cube_add()\n    return 1 / 0\n\nbuild()\n"
    result = local_runner.verify(script)
    assert result.status == "fail" and result.reward == 0.0
    assert "line 7, in <module>: build()" in result.feedback
    assert "line 5, in build: return 1 / 0" in result.feedback
    assert "ZeroDivisionError: division by zero" in result.feedback


def test_syntax_error_names_the_line(local_runner: RenderRunner) -> None:
    result = local_runner.verify("import bpy\nx = (1,\n")
    assert result.reward == 0.0 and "SyntaxError" in result.feedback


def test_no_camera(local_runner: RenderRunner) -> None:
    script = GOOD_SCENE.replace(
        "bpy.ops.object.camera_add(location=(6, -6, 5), rotation=(1.0, 0, 0.785))\n"
        "bpy.context.scene.camera = bpy.context.active_object\n",
        "",
    )
    result = local_runner.verify(script)
    assert result.status == "fail" and result.reward == 0.0
    assert "no camera: add one and set bpy.context.scene.camera" in result.feedback


def test_no_lights(local_runner: RenderRunner) -> None:
    script = GOOD_SCENE.split("bpy.ops.object.light_add")[0]
    result = local_runner.verify(script)
    assert result.status == "fail"
    assert result.components["lights"] == 0.0 and result.components["not_black"] == 0.0
    assert "found 0 light(s) with energy > 0 (need 1); no world" in result.feedback
    assert "the image is black" in result.feedback


def test_missing_texture(local_runner: RenderRunner) -> None:
    script = GOOD_SCENE + (
        "mat = bpy.data.materials.new('Wood')\nmat.use_nodes = True\n"
        "tex = mat.node_tree.nodes.new('ShaderNodeTexImage')\n"
        "img = bpy.data.images.new('wood', 8, 8)\nimg.source = 'FILE'\n"
        "img.filepath = '//textures/wood.png'\ntex.image = img\n"
        "bsdf = mat.node_tree.nodes['Principled BSDF']\n"
        "mat.node_tree.links.new(tex.outputs['Color'], bsdf.inputs['Base Color'])\n"
        "bpy.data.objects['Table'].data.materials.append(mat)\n"
    )
    result = local_runner.verify(script)
    assert result.status == "fail"
    assert "image file(s) missing: 'wood' -> //textures/wood.png" in result.feedback
    assert result.components["textures"] == 0.0 and result.components["magenta"] == 0.0
    assert result.details["image"]["magenta_fraction"] > 0.01


def _world_only(name: str, color: str) -> str:
    """GOOD_SCENE without its lamp, lit (or not) by a world of background ``color``."""
    return GOOD_SCENE.split("bpy.ops.object.light_add")[0] + (
        f"world = bpy.data.worlds.new('{name}')\nbpy.context.scene.world = world\n"
        "world.use_nodes = True\n"
        f"world.node_tree.nodes['Background'].inputs['Color'].default_value = {color}\n"
    )


def test_black_world(local_runner: RenderRunner) -> None:
    result = local_runner.verify(_world_only("Night", "(0, 0, 0, 1)"))
    assert result.status == "fail"
    assert "world strength 1.00 color (0.00, 0.00, 0.00)" in result.feedback
    assert "the image is black: mean luminance" in result.feedback


def test_bright_world_lights_the_scene_without_lamps(local_runner: RenderRunner) -> None:
    result = local_runner.verify(_world_only("Sky", "(0.6, 0.7, 0.9, 1)"))
    assert result.status == "pass", result.feedback


def test_infinite_loop_times_out_and_pool_recovers(local_runner: RenderRunner) -> None:
    result = local_runner.verify("import bpy\nwhile True:\n    pass\n", {"timeout_s": 2})
    assert result.status == "fail" and result.reward == 0.0
    assert "script timed out after 2s" in result.feedback
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_os_abort_is_scored_and_the_runner_recovers(local_runner: RenderRunner) -> None:
    result = local_runner.verify("import bpy, os\nbpy.ops.mesh.primitive_cube_add()\nos.abort()\n")
    assert result.status == "fail" and result.reward == 0.0
    assert "Blender crashed with SIGABRT while running your script" in result.feedback
    assert result.details["attempts"] == 1  # a crash of the script's own process: no retry
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_one_gigabyte_allocation_hits_the_memory_limit(local_runner: RenderRunner) -> None:
    script = "import bpy\nblob = bytearray(1024 * 1024 * 1024)\n" + GOOD_SCENE
    result = local_runner.verify(script, {"memory_mb": 512})
    assert result.status == "fail" and result.reward == 0.0
    # RLIMIT_AS raises MemoryError in the script; a per-job memory cgroup kills it instead.
    assert "limit: 512 MB" in result.feedback
    assert "MemoryError" in result.feedback or "ran out of memory" in result.feedback
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_nonfinite_transform(local_runner: RenderRunner) -> None:
    script = GOOD_SCENE + "bpy.data.objects['Table'].location.z = float('inf')\n"
    result = local_runner.verify(script)
    assert result.reward == 0.0 and "non-finite (NaN/inf)" in result.feedback


def test_script_cannot_forge_its_report(local_runner: RenderRunner) -> None:
    forged = (
        json.dumps(
            {
                "id": "",
                "result": True,
                "phase_a": {"how": "exit", "code": 0, "report": {"ok": True, "saved": True}},
                "scene": {},
            }
        )
        + "\n"
    )
    script = (
        "import os\nforged = " + repr(forged) + "\n"
        "for fd in range(0, 256):\n"
        "    try:\n        os.write(fd, forged.encode())\n    except OSError:\n        pass\n"
        "os._exit(0)\n"
    )
    result = local_runner.verify(script)
    assert result.status == "fail" and result.reward == 0.0
    assert "before the scene was saved" in result.feedback
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_compositor_and_sequencer_cannot_paint_over_the_render(local_runner: RenderRunner) -> None:
    script = GOOD_SCENE.split("bpy.ops.object.light_add")[0] + (
        "scene = bpy.context.scene\nscene.view_settings.exposure = 10\n"
        "scene.render.film_transparent = True\n"
        "seq = scene.sequence_editor_create()\n"
        "scene.render.use_sequencer = True\n"
    )
    result = local_runner.verify(script)
    assert result.components["not_black"] == 0.0, result.details.get("image")


def test_a_runner_killed_mid_script_is_infra_and_the_next_job_gets_a_fresh_one(
    local_runner: RenderRunner,
) -> None:
    """Killed from outside (here: by the host) with no sign the script did it: the machine's
    loss, ``InfraError`` (the engine's abstain and retry), never the model's fail."""
    slow = "import time\ntime.sleep(5)\n" + GOOD_SCENE

    async def scenario() -> Any:
        task = asyncio.ensure_future(local_runner.averify(slow))
        pool = local_runner.provider._pool
        while not any(slot.busy for slot in pool._slots.values()):
            await asyncio.sleep(0.02)  # a runner took the session: its script job is sent
        await asyncio.sleep(1.5)
        for slot in pool._slots.values():  # the runner dies under the job
            for worker in list(slot.busy):
                await worker.kill()
        return await task

    with pytest.raises(InfraError, match="no sign the job caused it"):
        local_runner.loop.run_until_complete(scenario())
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_output_dir_gets_the_png(
    local_runner: RenderRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFIERS_RENDER_OUTPUT_DIR", str(tmp_path))
    result = local_runner.verify(GOOD_SCENE)
    png = Path(result.details["png_path"])
    assert png.read_bytes().startswith(b"\x89PNG")


def test_reference_image_similarity(local_runner: RenderRunner, tmp_path: Path) -> None:
    import base64

    first = local_runner.verify(GOOD_SCENE)
    (tmp_path / "ref.png").write_bytes(base64.b64decode(first.details["png_base64"]))
    same = local_runner.verify(
        GOOD_SCENE, {"reference_image": {"path": "ref.png", "min_psnr": 25}}, base_dir=tmp_path
    )
    assert same.components["reference"] == 1.0, same.feedback
    moved = GOOD_SCENE.replace("location=(0, 0, 1)", "location=(2, 2, 1)")
    spec = {"reference_image": {"path": "ref.png", "min_psnr": 25}}
    other = local_runner.verify(moved, spec, base_dir=tmp_path)
    assert other.components["reference"] == 0.0 and "PSNR" in other.feedback


def _dataset(name: str) -> list[dict[str, Any]]:
    with open(data_path(*name.split("/"))) as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.mark.parametrize("item", _dataset("render/scenes.jsonl"), ids=lambda d: str(d["id"]))
def test_task_suite_verdicts(local_runner: RenderRunner, item: dict[str, Any]) -> None:
    traj = Trajectory.model_validate(item)
    script = traj.completion
    assert isinstance(script, str)
    body = script.split("```python\n", 1)[1].rsplit("```", 1)[0]
    result = local_runner.verify(body, item["task"]["spec"])
    expected = item["metadata"]
    assert result.status == expected["expected_status"], result.feedback
    assert expected["expected_feedback"] in result.feedback


def test_the_script_cannot_signal_the_process_that_forked_it(local_runner: RenderRunner) -> None:
    script = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    result = local_runner.verify(script)
    assert result.status == "fail" and result.reward == 0.0
    assert "PermissionError" in result.feedback, result.feedback
    assert local_runner.verify(GOOD_SCENE).status == "pass"


def test_jobs_fork_a_zygote_on_huge_pages_and_still_copy_on_write(
    local_runner: RenderRunner,
) -> None:
    """The runner collapses the preloaded zygote's memory into huge pages (a fork copies one
    page-table entry per 2 MiB instead of per 4 KiB); a job's write into one stays its own."""
    huge_kb, seen = zygote_huge_pages(local_runner)
    if huge_pages_possible():
        assert huge_kb >= 16 << 10, seen  # ~64 MB here; 0 before the runner collapsed them
    first, written, third = (line.split()[1:] for line in seen)
    assert first == written == third, seen  # same address, same bytes: the write was private


def test_engine_scores_the_example_file() -> None:
    import verifiers

    items = _dataset("examples/render.jsonl")
    results = verifiers.score(items, sandbox="local")
    assert [r.id for r in results] == [i["id"] for i in items]
    for item, result in zip(items, results, strict=True):
        assert result.status == item["metadata"]["expected_status"], (item["id"], result)
        assert result.verifier == "render.blender@2"


TABLE_MESH = {
    "objects": "Table*",
    "constraints": {
        "closed": True,
        "bodies": 1,
        "bbox": {"min": [-1, -1, 0], "max": [1, 1, 2], "abs_tol": 0.01},
    },
}


def test_mesh_constraints_reuse_the_mesh_verifier(local_runner: RenderRunner) -> None:
    result = local_runner.verify(GOOD_SCENE, {"mesh": TABLE_MESH})
    assert result.status == "pass", result.feedback
    assert result.components["mesh"] == 1.0
    assert result.details["mesh"]["objects"] == ["Table"]
    assert result.details["mesh"]["stats"]["faces"] == 12


def test_mesh_constraint_failure_is_a_component(local_runner: RenderRunner) -> None:
    two = GOOD_SCENE + "bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 3))\n"
    two += 'bpy.context.active_object.name = "TableLamp"\n'
    result = local_runner.verify(two, {"mesh": TABLE_MESH})
    assert result.status == "fail"
    assert result.components["mesh"] < 1.0
    assert "mesh:" in result.feedback and "bodies" in result.feedback


def test_invalid_mesh_table_is_bad_input(local_runner: RenderRunner) -> None:
    from verifiers.errors import BadInput

    with pytest.raises(BadInput):
        local_runner.verify(GOOD_SCENE, {"mesh": {"constraints": {"bodies": -3}}})


def test_a_runtime_that_cannot_import_bpy_is_infra_not_the_models_fail(tmp_path: Path) -> None:
    # A "blender" runtime whose interpreter has no bpy: phase A's harness cannot import it
    # before any model code runs, the host's own probe confirms it, and the item abstains.
    # (runtime.toml is the one runtime format; the host-interpreter escape hatch runs it with a
    # python3 that has no bpy.)
    folder = tmp_path / "blender"
    folder.mkdir()
    (folder / "runtime.toml").write_text('[runtime]\npython = "/usr/bin/python3"\n')
    from verifiers.errors import SandboxUnavailable

    runner = RenderRunner("local", image_dirs=(tmp_path,), local_python=Path("/usr/bin/python3"))
    try:
        with pytest.raises(SandboxUnavailable, match="cannot import bpy"):
            runner.verify(GOOD_SCENE)
    finally:
        runner.close()
