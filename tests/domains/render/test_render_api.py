"""Public surface of verifiers.domains.render, and its import staying light."""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
from pathlib import Path

import pytest
import verifiers.domains.render as render
from api_pins import assert_pinned, heavy_imports
from pydantic import ValidationError
from verifiers.domains.render import RenderSpec


def test_all_is_pinned() -> None:
    assert_pinned(
        render,
        [
            "GEOMETRY_TYPES",
            "RUNTIME",
            "BBoxExpect",
            "BlenderRender",
            "ExpectSpec",
            "MeshCheck",
            "ObjectExpect",
            "ReferenceImage",
            "RenderSpec",
        ],
        registers=["render.blender"],
    )


def test_import_does_not_pull_heavy_modules() -> None:
    heavy = ("bpy", "numpy", "PIL", "docker")
    assert heavy_imports(["verifiers.domains.render"], heavy) == []


def test_spec_shape_from_the_issue_loads() -> None:
    spec = RenderSpec.model_validate(
        {
            "resolution": [64, 64],
            "samples": 8,
            "timeout_s": 60,
            "expect": {
                "camera": True,
                "min_lights": 1,
                "min_objects": 1,
                "objects": [
                    {
                        "name": "Table",
                        "type": "MESH",
                        "bbox": {"min": [-1, -1, 0], "max": [1, 1, 1], "tol": 0.05},
                    }
                ],
            },
        }
    )
    assert spec.resolution == (64, 64)
    assert spec.expect.objects[0].bbox is not None
    assert spec.expect.objects[0].bbox.max == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "bad",
    [{"resolution": [0, 64]}, {"samples": 0}, {"timeout_s": -1}, {"expect": {"min_lights": -1}}],
)
def test_spec_rejects_nonsense(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RenderSpec.model_validate(bad)


def test_sandbox_none_governs_render() -> None:
    # Render runs through ctx.sandbox("blender"): with --sandbox none no Blender starts and the
    # item is an infra error naming the fix (it used to run model scripts in Docker anyway).
    import verifiers

    item = {
        "id": "r1",
        "completion": "```python\nimport bpy\n```",
        "task": {"verifier": "render.blender", "spec": {}},
    }
    (result,) = verifiers.score([item], sandbox="none", retries=0)
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "infra"
    assert "sandbox" in result.error.message, result.error.message


def test_budget_covers_every_phase() -> None:
    spec = RenderSpec.model_validate({"timeout_s": 10, "render_timeout_s": 20})
    assert render.BlenderRender().budget_s(spec) == 10 + 2 * 20 + 30
    meshy = RenderSpec.model_validate({"timeout_s": 10, "render_timeout_s": 20, "mesh": {}})
    assert render.BlenderRender().budget_s(meshy) == 10 + 2 * 20 + 60 + 30


@pytest.mark.parametrize("magic_ok", [True, False], ids=["precompiled", "other-interpreter"])
def test_worker_loader_runs_the_compiled_worker_or_its_source(
    tmp_path: Path, magic_ok: bool
) -> None:
    """Jobs run ``_worker.py`` through a loader: its code compiled on the host when the .pyc's
    magic is the job interpreter's own, else the source (a runtime on another CPython)."""
    from verifiers.domains.render import _verifier

    files = _verifier._WORKER_FILES
    pyc = files["_worker.pyc"]
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    assert marshal.loads(pyc[16:]) == compile(files["_worker.py"], "_worker.py", "exec")
    said = "import sys\nprint({!r}, sys.argv[1:], __name__)\n"
    code = marshal.dumps(compile(said.format("compiled"), "_worker.py", "exec"))
    magic = importlib.util.MAGIC_NUMBER if magic_ok else b"\0\0\r\n"
    (tmp_path / "_worker.pyc").write_bytes(magic + bytes(12) + code)
    (tmp_path / "_worker.py").write_text(said.format("source"))
    done = subprocess.run(
        [sys.executable, "-c", _verifier._WORKER_LOADER, "judge"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    expected = "compiled" if magic_ok else "source"
    assert done.stdout.split() == [expected, "['judge']", "__main__"], done.stderr
