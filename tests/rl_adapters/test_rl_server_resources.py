"""The reward server exports per-item sandbox resources as histograms per verifier and runtime
(issue 13 item 5), from real jobs on the local backend under bubblewrap."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rl_helpers import LiveServer
from verifiers.rl_adapters.server import ServerSettings

from verifiers import EngineSettings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    settings = ServerSettings(
        engine=EngineSettings(concurrency=2, sandbox="local", workers=1, timeout_s=60, retries=0),
        verifier="answer.numeric",
    )
    with LiveServer(settings) as srv:
        yield srv


def test_metrics_have_sandbox_resource_histograms(server: LiveServer) -> None:
    line = (REPO / "datasets/examples/code.jsonl").read_text().splitlines()[0]
    item = json.loads(line)
    with httpx.Client(base_url=server.url, timeout=120) as client:
        reply = client.post("/v1/score", json={"trajectories": [item]})
        assert reply.status_code == 200, reply.text
        [result] = reply.json()["results"]
        assert result["status"] == "pass" and result["details"]["resources"]["jobs"] >= 1
        text = client.get("/metrics").text
    labels = 'runtime="python",verifier="code.tests"'
    for name in ("wall_seconds", "cpu_seconds", "peak_memory_mb"):
        assert f"verifiers_sandbox_{name}_count{{{labels}}} 1.0" in text, name
