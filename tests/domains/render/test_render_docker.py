"""render.blender on the docker sandbox backend (the blender runtime's image), with real bpy."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from attack_corpus import attack_rows, check_row
from render_helpers import GOOD_SCENE, RenderRunner, huge_pages_possible, zygote_huge_pages

from verifiers.data import data_path

pytestmark = [pytest.mark.docker, pytest.mark.blender]


@pytest.fixture(scope="module")
def docker_runner() -> Iterator[RenderRunner]:
    runner = RenderRunner("docker")
    yield runner
    runner.close()


def _containers() -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=verifiers.sandbox.owner"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_good_scene_passes_in_the_image(docker_runner: RenderRunner) -> None:
    result = docker_runner.verify(GOOD_SCENE)
    assert result.status == "pass", result.feedback
    assert result.details["worker"] == {"runtime": "blender", "blender": "5.0.1"}


def test_exception_and_abort_in_the_image(docker_runner: RenderRunner) -> None:
    bad = docker_runner.verify(
        "import bpy\nbpy.ops.mesh.primitive_cube_add()\nraise ValueError('boom')\n"
    )
    assert bad.status == "fail" and "ValueError: boom" in bad.feedback
    aborted = docker_runner.verify("import os\nos.abort()\n")
    assert aborted.status == "fail" and "SIGABRT" in aborted.feedback
    assert aborted.details["attempts"] == 1
    assert docker_runner.verify(GOOD_SCENE).status == "pass"


def test_no_network_inside_the_container(docker_runner: RenderRunner) -> None:
    script = "import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 80))\n"
    result = docker_runner.verify(script)
    assert result.status == "fail" and result.reward == 0.0
    assert "OSError" in result.feedback, result.feedback


def test_containers_are_removed_on_close() -> None:
    runner = RenderRunner("docker")
    assert runner.verify(GOOD_SCENE).status == "pass"
    mine = {cid[:12] for cid in runner.provider.container_ids()}  # type: ignore[attr-defined]
    assert mine and mine <= set(_containers())
    runner.close()
    deadline = time.monotonic() + 20
    while mine & set(_containers()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not mine & set(_containers())


def _suite() -> list[dict[str, Any]]:
    with open(data_path("render", "scenes.jsonl")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.mark.parametrize("item", _suite(), ids=lambda d: str(d["id"]))
def test_task_suite_verdicts_in_the_image(
    docker_runner: RenderRunner, item: dict[str, Any]
) -> None:
    body = item["completion"].split("```python\n", 1)[1].rsplit("```", 1)[0]
    result = docker_runner.verify(body, item["task"]["spec"])
    assert result.status == item["metadata"]["expected_status"], result.feedback
    assert item["metadata"]["expected_feedback"] in result.feedback


@pytest.mark.parametrize("item", attack_rows(), ids=lambda d: str(d["id"]))
def test_attack_corpus_in_the_image(docker_runner: RenderRunner, item: dict[str, Any]) -> None:
    check_row(docker_runner, item)  # the same verdicts as on the local backend


def test_jobs_fork_a_zygote_on_huge_pages_in_the_image(docker_runner: RenderRunner) -> None:
    """As on the local backend (test_render_blender): the container's zygote is on huge pages
    and a job's write into one stays its own."""
    huge_kb, seen = zygote_huge_pages(docker_runner)
    if huge_pages_possible():
        assert huge_kb >= 16 << 10, seen
    first, written, third = (line.split()[1:] for line in seen)
    assert first == written == third, seen
