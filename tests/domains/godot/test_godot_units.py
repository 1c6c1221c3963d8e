"""Pure parts of game.godot: the .tscn reader, the completion's file map, the spec, checks."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from verifiers.domains.godot import GodotSpec, parse_tscn
from verifiers.domains.godot._checks import RunReport, evaluate, script_errors
from verifiers.domains.godot._files import FileMapError, builder_scene, project_files
from verifiers.domains.godot._tscn import TscnError

from verifiers.errors import InfraError

NESTED = """[gd_scene load_steps=2 format=2]

[ext_resource path="res://a.gd" type="Script" id=1]

[node name="Root" type="Spatial"]
transform = Transform( 0, 0, 1, 0, 1, 0, -1, 0, 0, 10, 0, 0 )

[node name="Arm" type="Spatial" parent="."]
transform = Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 0 )
editor_description = "a string with
[node name=\\"Fake\\" type=\\"RigidBody\\" parent=\\".\\"]
transform = Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, 99, 99, 99 )"

[node name="Hand" type="MeshInstance" parent="Arm"]
transform = Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 3 )

[node name="Plain" type="Node" parent="Arm"]

[node name="Loose" type="Spatial" parent="Arm/Plain"]
transform = Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, 5, 5, 5 )

[node name="Canvas" type="Node2D" parent="."]
position = Vector2( 10, 0 )
rotation = 1.5708

[node name="Dot" type="Sprite" parent="Canvas"]
position = Vector2( 2, 0 )

[connection signal="ready" from="Arm" to="." method="_on_arm_ready"]
"""


def test_world_positions_compose_along_the_parent_chain() -> None:
    scene = parse_tscn(NESTED, max_nodes=100)
    assert set(scene.nodes) == {
        ".",
        "Arm",
        "Arm/Hand",
        "Arm/Plain",
        "Arm/Plain/Loose",
        "Canvas",
        "Canvas/Dot",
    }
    # Root rotates by 90 degrees about y: its local x (1, 2, 0) lands on world -z
    arm = scene.nodes["Arm"].position
    assert arm is not None and arm == pytest.approx((10, 2, -1))
    hand = scene.nodes["Arm/Hand"].position
    assert hand is not None and hand == pytest.approx((13, 2, -1))
    # a non-spatial parent starts the chain anew, as the engine does
    assert scene.nodes["Arm/Plain"].position is None
    assert scene.nodes["Arm/Plain/Loose"].position == pytest.approx((5, 5, 5))
    dot = scene.nodes["Canvas/Dot"].position
    assert dot is not None and dot == pytest.approx((10, 2), abs=1e-3)
    assert scene.connections == [
        {"signal": "ready", "from": "Arm", "to": ".", "method": "_on_arm_ready"}
    ]


def test_text_inside_a_multiline_string_is_not_a_node() -> None:
    scene = parse_tscn(NESTED, max_nodes=100)
    assert "Fake" not in scene.nodes and all(n.name != "Fake" for n in scene.nodes.values())
    assert scene.nodes["Arm"].props["transform"][9:] == [1, 2, 0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("not a scene", "no [gd_scene]"),
        ("[gd_scene format=2]\n", "no root node"),
        (
            '[gd_scene format=2]\n[node name="A" type="Node"]\n[node name="B" type="Node"]\n',
            "two root",
        ),
        (
            '[gd_scene format=2]\n[node name="A" type="Node"]\n[node name="B" type="Node" parent="X"]\n',
            "not declared",
        ),
    ],
)
def test_bad_scenes_are_named(text: str, needle: str) -> None:
    with pytest.raises(TscnError, match=needle.replace("[", r"\[")):
        parse_tscn(text, max_nodes=100)


def test_node_cap_and_non_finite_values() -> None:
    many = '[gd_scene format=2]\n[node name="R" type="Spatial"]\n' + "".join(
        f'[node name="N{i}" type="Spatial" parent="."]\n' for i in range(50)
    )
    with pytest.raises(TscnError, match="more than 10 nodes"):
        parse_tscn(many, max_nodes=10)
    inf = '[gd_scene format=2]\n[node name="R" type="Spatial"]\ntransform = Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, inf, 0, nan )\n'
    pos = parse_tscn(inf, max_nodes=10).nodes["."].position
    assert pos is not None and math.isinf(pos[0]) and math.isnan(pos[2])


def test_reader_is_linear_on_hostile_input() -> None:
    import time

    hostile = '[gd_scene format=2]\n[node name="R" type="Node"]\nx = "' + '\\"(' * 200_000
    started = time.perf_counter()
    parse_tscn(hostile, max_nodes=10)
    assert time.perf_counter() - started < 5


def test_file_map_rules() -> None:
    text = "```gdscript\n# file: res://a/b.gd\nextends Node\n```\n```tscn\n; file: main.tscn\n[gd_scene]\n```"
    assert project_files(text, max_files=5, max_bytes=1000) == {
        "a/b.gd": "extends Node\n",
        "main.tscn": "[gd_scene]\n",
    }
    assert project_files("```gdscript\nextends Spatial\n```", max_files=5, max_bytes=100) == {
        "main.gd": "extends Spatial\n"
    }
    for bad in ("../x.gd", "_x.gd", "project.godot", "a//b.gd", "/abs.gd", "x.py"):
        with pytest.raises(FileMapError, match="not allowed"):
            project_files(f"```gdscript\n# file: {bad}\n```", max_files=5, max_bytes=100)
    with pytest.raises(FileMapError, match="twice"):
        project_files(
            "```gd\n# file: a.gd\n```\n```gd\n# file: a.gd\n```", max_files=5, max_bytes=100
        )
    with pytest.raises(FileMapError, match="more than"):
        project_files(
            "```gd\n# file: a.gd\nextends Node\n" + "x" * 200 + "\n```", max_files=5, max_bytes=100
        )
    assert 'type="Spatial"' in builder_scene("extends Spatial\n")
    assert 'type="Node"' in builder_scene('extends "res://base.gd"\n')


def test_spec_rejects_unknown_keys_and_missing_gates() -> None:
    with pytest.raises(ValidationError):
        GodotSpec.model_validate({"frame": 10})
    with pytest.raises(ValidationError, match="gates must include"):
        GodotSpec.model_validate({"gates": ["scripts"]})
    with pytest.raises(ValidationError, match="not components"):
        GodotSpec.model_validate({"gates": ["scripts", "scene", "frames", "node:X"]})
    with pytest.raises(ValidationError, match="repeat"):
        GodotSpec.model_validate(
            {"probes": [{"kind": "moved", "node": "A", "min_distance": 1}] * 2}
        )


def test_script_errors_split_parse_from_runtime() -> None:
    stderr = (
        "ERROR: get_language_code: Invalid locale 'C'.\n"
        "SCRIPT ERROR: GDScript::reload: Parse Error: ':' expected\n"
        "   At: res://a.gd:2.\n"
        "SCRIPT ERROR: _process: Invalid get index 'x' (on base: 'null instance').\n"
        "   At: res://b.gd:7.\n"
    )
    parse, runtime = script_errors(stderr)
    assert parse == ["res://a.gd:2: GDScript::reload: Parse Error: ':' expected"]
    assert runtime == ["res://b.gd:7: _process: Invalid get index 'x' (on base: 'null instance')."]


def _run(**changes: object) -> RunReport:
    report_a = {"scene": "ok", "parse": {"res://main.gd": True}, "shadows": {}}
    fields: dict[str, object] = {
        "how": "exit",
        "code": 0,
        "seconds": 0.1,
        "stderr": "",
        "report_a": report_a,
        "frames_proven": True,
        "scripts": ["main.gd"],
    }
    fields.update(changes)
    return RunReport(**fields)  # type: ignore[arg-type]


def test_a_failed_audit_fails_frames_with_its_reason() -> None:
    # the harness's per-frame audit stops the run (no proof): the reason reaches the model
    spec = GodotSpec.model_validate({"frames": 10})
    why = "a script overrides the engine method intersect_shape of BulletPhysicsDirectSpaceState"
    result = evaluate(
        _run(frames_proven=False, frames_note={"problem": "audit", "frames": 0, "why": why}), spec
    )
    assert result.status == "fail" and result.reward == 0.0
    assert why in result.feedback and "audits every script" in result.feedback


def test_a_thread_freed_while_running_fails_frames() -> None:
    # a Thread object freed between two audits leaves only this engine warning behind
    spec = GodotSpec.model_validate({"frames": 10})
    lost = "WARNING: Reference to a Thread object was lost while the thread is still running..."
    result = evaluate(_run(stderr=lost + "\n   At: core/bind/core_bind.cpp:2711.\n"), spec)
    assert result.status == "fail" and result.reward == 0.0
    assert "a Thread was freed while it still ran" in result.feedback


# -- the fork-server queue (domains/godot/_forkqueue.py): which checks run where -------------


def _report(tag: str, forked: bool) -> RunReport:
    return RunReport("exit", 0, 0.0, tag, None, False, forked=forked)


def _queue_run(
    monkeypatch: pytest.MonkeyPatch,
    outcome: Any,
    checks: int,
    queue_s: float = 10.0,
    timeouts: list[float] | None = None,
) -> tuple[list[RunReport], list[list[str]], list[str]]:
    """``checks`` checks submitted together through ``run_check`` with ``run_batch`` faked
    by ``outcome(tags, start_by)`` (a list of reports/None, or it raises): the reports, the
    batches (by each check's tag) and the tags that ran fresh."""
    from verifiers.domains.godot import _forkqueue

    from verifiers.context import VerifierContext

    batches: list[list[str]] = []
    ran_fresh: list[str] = []

    async def run_batch(checks: Any, ctx: Any, start_by: list[float]) -> Any:
        tags = [files["tag"] for files, _ in checks]
        batches.append(tags)
        await asyncio.sleep(0.01)
        return outcome(tags, start_by)

    async def run_fresh(files: dict[str, str], spec: Any, ctx: Any) -> RunReport:
        ran_fresh.append(files["tag"])
        return _report(files["tag"], False)

    monkeypatch.setattr(_forkqueue, "run_batch", run_batch)
    monkeypatch.setattr(_forkqueue, "run_fresh", run_fresh)
    specs = [GodotSpec(timeout_s=t) for t in timeouts or [30.0] * checks]

    async def main() -> list[RunReport]:
        ctx = VerifierContext(
            deadline=time.monotonic() + 60, base_dir=Path("."), sandboxes=object()
        )  # type: ignore[arg-type]
        return list(
            await asyncio.gather(
                *(
                    _forkqueue.run_check({"tag": str(i)}, specs[i], ctx, queue_s=queue_s)
                    for i in range(checks)
                )
            )
        )

    reports = asyncio.run(main())
    assert not _forkqueue._QUEUES  # nothing left behind for the next event loop
    return reports, batches, ran_fresh


def test_checks_that_arrive_together_share_a_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    reports, batches, ran_fresh = _queue_run(
        monkeypatch, lambda tags, _: [_report(t, True) for t in tags], 19
    )
    assert batches == [[str(i) for i in range(16)], ["16", "17", "18"]]
    assert ran_fresh == []
    assert [r.stderr for r in reports] == [str(i) for i in range(19)]  # each its own report
    assert all(r.forked for r in reports)


def test_a_failed_batch_runs_each_check_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    def died(tags: list[str], _: Any) -> Any:
        raise InfraError("the godot fork server failed (exit -9)")

    reports, batches, ran_fresh = _queue_run(monkeypatch, died, 3)
    assert batches == [["0", "1", "2"]]
    assert ran_fresh == ["0", "1", "2"]
    assert [r.stderr for r in reports] == ["0", "1", "2"]
    assert not any(r.forked for r in reports)


def test_a_check_the_fork_server_could_not_judge_runs_fresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None: skipped past its start_by, or unsure at its wall deadline (_forkdrive.py)
    def some(tags: list[str], start_by: list[float]) -> Any:
        assert all(0 < s <= 10.0 for s in start_by)
        return [None if t == "1" else _report(t, True) for t in tags]

    reports, _, ran_fresh = _queue_run(monkeypatch, some, 3)
    assert ran_fresh == ["1"]
    assert [r.forked for r in reports] == [True, False, True]


def test_a_check_that_waited_too_long_runs_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    reports, batches, ran_fresh = _queue_run(
        monkeypatch, lambda tags, _: [_report(t, True) for t in tags], 2, queue_s=0.0
    )
    assert batches == []
    assert sorted(ran_fresh) == ["0", "1"]


def test_a_batch_holds_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # a slow neighbour with a longer timeout_s could otherwise hold a short check's result
    # past its own budget (GodotScene.budget_s)
    _, batches, _ = _queue_run(
        monkeypatch,
        lambda tags, _: [_report(t, True) for t in tags],
        4,
        timeouts=[4.0, 30.0, 4.0, 30.0],
    )
    assert sorted(batches) == [["0", "2"], ["1", "3"]]


# -- what the fork driver takes from the sandbox runner (one definition) --------------------


def test_the_driver_gets_oom_kills_from_the_runner_source(tmp_path: Path) -> None:
    """``_forkdrive.py`` runs in the job without the verifiers package: ``_oom_kills`` ships
    beside it as ``_forkrules.py``, cut from sandbox/_runner.py (``rule_source``), and the
    driver defines none of its own."""
    import ast

    from verifiers.domains.godot import _forkbatch
    from verifiers.sandbox import _runner

    driver = ast.parse(_forkbatch._DRIVER.decode())
    assert not [n for n in driver.body if getattr(n, "name", "") == "_oom_kills"]
    imports = [n for n in driver.body if isinstance(n, ast.ImportFrom)]
    assert any(n.module == "_forkrules" and n.names[0].name == "_oom_kills" for n in imports)
    shipped = ast.parse(_forkbatch._RULES.decode())
    (function,) = [n for n in shipped.body if isinstance(n, ast.FunctionDef)]
    runner = ast.parse(Path(_runner.__file__).read_text(encoding="utf-8"))
    (original,) = [n for n in runner.body if getattr(n, "name", "") == "_oom_kills"]
    assert ast.dump(function) == ast.dump(original)
    # importable on its own, as the job's python3 imports it (no verifiers package there)
    import subprocess
    import sys

    (tmp_path / "_forkrules.py").write_bytes(_forkbatch._RULES)
    code = "import _forkrules; print(type(_forkrules._oom_kills()).__name__)"
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, '.'); {code}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "int"


def test_rule_source_refuses_a_name_it_does_not_define() -> None:
    from verifiers.sandbox._runner import rule_source

    with pytest.raises(ValueError, match="no_such_rule"):
        rule_source(wanted=("_oom_kills", "no_such_rule"))
