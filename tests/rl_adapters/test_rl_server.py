"""The reward server under a real HTTP client on loopback (uvicorn + httpx)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rl_helpers import LiveServer as _Server
from rl_helpers import free_port as _free_port
from rl_helpers import wait_until_healthy
from verifiers.rl_adapters.server import ServerSettings, write_openapi

from verifiers import EngineSettings

HERE = Path(__file__).resolve().parent
SLOW = {"verifier": "rltest.slow", "spec": {"sleep_s": 0.1}}


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    settings = ServerSettings(
        engine=EngineSettings(concurrency=8, sandbox="none", workers=1, timeout_s=20),
        max_body_bytes=64 * 1024,
        max_items=50,
        verifier="answer.numeric",
        components=["hit"],
        invalid_score=-1.0,
    )
    with _Server(settings) as srv:
        yield srv


def test_healthz_and_score(server: _Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/healthz").json()["status"] == "ok"
        body = {
            "trajectories": [
                {
                    "id": "a",
                    "completion": "the answer is 4",
                    "task": {"verifier": "answer.numeric", "reference": 4},
                },
                {
                    "id": "b",
                    "completion": "5",
                    "task": {"verifier": "answer.numeric", "reference": 4},
                },
                {"id": "c", "completion": "x"},  # no task: its own bad_input result
                {"id": "d", "completion": "x", "task": {"verifier": "no.such"}},
            ]
        }
        response = client.post("/v1/score", json=body)
        assert response.status_code == 200
        results = response.json()["results"]
        assert [r["id"] for r in results] == ["a", "b", "c", "d"]
        assert [r["status"] for r in results] == ["pass", "fail", "error", "error"]
        assert [r["reward"] for r in results] == [1.0, 0.0, None, None]
        assert results[2]["error"]["kind"] == "bad_input"


def test_concurrent_clients_each_get_their_own_results_in_order(server: _Server) -> None:
    async def one(client: httpx.AsyncClient, k: int) -> list[Any]:
        body = {
            "trajectories": [
                {"id": f"{k}-{i}", "completion": "x" * (k + i), "task": SLOW} for i in range(4)
            ]
        }
        response = await client.post("/v1/score", json=body)
        assert response.status_code == 200
        return list(response.json()["results"])

    async def run() -> tuple[list[list[Any]], float]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            started = time.perf_counter()
            out = await asyncio.gather(*(one(client, k) for k in range(16)))
            return list(out), time.perf_counter() - started

    outs, elapsed = asyncio.run(run())
    for k, results in enumerate(outs):
        assert [r["id"] for r in results] == [f"{k}-{i}" for i in range(4)]
        assert [r["reward"] for r in results] == [float((k + i) % 2) for i in range(4)]
    # 64 items x 0.1 s under one engine of concurrency 8: about 0.8 s, far below serial 6.4 s
    assert elapsed < 5.0


@pytest.mark.parametrize(
    ("content", "headers", "code", "needle"),
    [
        (b"{not json", {"content-type": "application/json"}, 422, "json"),
        (b"", {"content-type": "application/json"}, 422, ""),
        (b'{"trajectories": 3}', {"content-type": "application/json"}, 422, "trajectories"),
        (b'{"items": []}', {"content-type": "application/json"}, 422, ""),
        (b"[1, 2]", {"content-type": "application/json"}, 422, ""),
        (b'{"trajectories": [1, "x"]}', {"content-type": "application/json"}, 422, ""),
        (b"\xff\xfe\x00garbage", {"content-type": "application/json"}, 422, ""),
    ],
)
def test_malformed_bodies_get_clear_4xx(
    server: _Server, content: bytes, headers: dict[str, str], code: int, needle: str
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/v1/score", content=content, headers=headers)
        assert response.status_code == code, response.text
        assert needle in response.text.lower()
        assert client.get("/healthz").status_code == 200  # still alive


def test_size_limits(server: _Server) -> None:
    big = json.dumps({"trajectories": [{"completion": "x" * 70_000, "task": SLOW}]}).encode()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert (
            client.post(
                "/v1/score", content=big, headers={"content-type": "application/json"}
            ).status_code
            == 413
        )

        def chunks() -> Iterator[bytes]:  # no Content-Length: streamed, chunked
            for i in range(0, len(big), 8192):
                yield big[i : i + 8192]

        response = client.post(
            "/v1/score", content=chunks(), headers={"content-type": "application/json"}
        )
        assert response.status_code == 413
        many = {
            "trajectories": [
                {"completion": "1", "task": {"verifier": "answer.numeric", "reference": 1}}
            ]
            * 51
        }
        response = client.post("/v1/score", json=many)
        assert response.status_code == 413 and "limit is 50" in response.text
        assert client.get("/v1/score").status_code == 405
        assert client.get("/healthz").status_code == 200


def test_openrlhf_protocol(server: _Server) -> None:
    body = {
        "query": ["Q: 2+2? A: 4</s>", "Q: 2+2? A: 5", "Q: x A: has 7", "Q: y A: z"],
        "prompts": ["Q: 2+2? A:", "Q: 2+2? A:", "Q: x A:", "Q: y A:"],
        "labels": [
            "4",
            "4",
            json.dumps({"verifier": "rltest.contains", "reference": "7"}),
            '{"verifier": "nope"}',
        ],
    }
    with httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/get_reward", json=body)
        assert response.status_code == 200
        data = json.loads(
            response.text
        )  # Python's json reads the NaN token, as OpenRLHF's client does
        assert data["rewards"] == [1.0, 0.0, 1.0, -1.0]  # the explicit --invalid-score
        assert data["scores"][:3] == [1.0, 0.0, 1.0]
        assert data["extra_logs"]["verifiers_valid"] == [1.0, 1.0, 1.0, 0.0]
        assert data["extra_logs"]["verifiers_pass"] == [1.0, 0.0, 1.0, 0.0]
        assert data["extra_logs"]["hit"][2] == 1.0
        bad = client.post("/get_reward", json={"query": ["a", "b"], "prompts": ["a"]})
        assert bad.status_code == 400 and "prompts" in bad.text
        assert client.post("/get_reward", json={"prompts": ["a"]}).status_code == 422
        # no labels at all: the default verifier has no reference -> flagged, not 0
        data = json.loads(client.post("/get_reward", json={"query": ["4"]}).text)
        assert data["extra_logs"]["verifiers_valid"] == [0.0]
        # the same key set for an unjudged row as for a judged one (OpenRLHF batches by key)
        assert set(data["extra_logs"]) == {
            "verifiers_valid",
            "verifiers_pass",
            "verifiers_skipped",
            "verifiers_error_bad_input",
            "verifiers_error_infra",
            "verifiers_error_timeout",
            "verifiers_error_verifier",
            "hit",
        }
        assert data["extra_logs"]["verifiers_error_bad_input"] == [1.0]


def test_metric_labels_are_bounded_to_registered_verifiers(server: _Server) -> None:
    names = [f"made.up{i}" for i in range(40)]
    with httpx.Client(base_url=server.url, timeout=30) as client:
        body = {"trajectories": [{"completion": "1", "task": {"verifier": n}} for n in names]}
        assert client.post("/v1/score", json=body).status_code == 200
        text = client.get("/metrics").text
    assert "made.up" not in text
    assert 'verifiers_results_total{status="error",verifier="other"}' in text
    assert 'verifiers_errors_total{kind="bad_input",verifier="other"}' in text


def test_metrics(server: _Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        client.post(
            "/v1/score",
            json={
                "trajectories": [
                    {"completion": "3", "task": {"verifier": "answer.numeric", "reference": 3}}
                ]
            },
        )
        text = client.get("/metrics").text
    assert 'verifiers_requests_total{code="200",endpoint="/v1/score"}' in text
    assert 'verifiers_results_total{status="pass",verifier="answer.numeric"}' in text
    assert "verifiers_errors_total" in text
    assert "verifiers_request_seconds_bucket" in text and "verifiers_item_seconds_bucket" in text
    assert "verifiers_items_in_flight" in text
    assert 'verifiers_requests_total{code="413",endpoint="/v1/score"}' in text  # earlier tests
    assert 'verifiers_requests_total{code="422",endpoint="/v1/score"}' in text


def test_graceful_shutdown_finishes_in_flight_work(tmp_path: Path) -> None:
    """A real `main()` process: SIGTERM mid-request, the request still completes."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    code = (
        "import sys, rl_helpers; from verifiers.rl_adapters.server import main;"
        "raise SystemExit(main(sys.argv[1:]))"
    )
    argv = ["--port", str(port), "--sandbox", "none", "--workers", "1", "--log-level", "warning"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, proc)
        slow = {"verifier": "rltest.slow", "spec": {"sleep_s": 1.5}}
        result: dict[str, Any] = {}

        def request() -> None:
            r = httpx.post(
                f"{url}/v1/score",
                json={"trajectories": [{"completion": "ab", "task": slow}]},
                timeout=30,
            )
            result["code"], result["body"] = r.status_code, r.json()

        worker = threading.Thread(target=request)
        worker.start()
        # SIGTERM only once the server holds the item (its in-flight gauge says so): a fixed
        # sleep raced the request's connect on a loaded machine (connection refused).
        deadline = time.monotonic() + 60
        while "verifiers_items_in_flight 1.0" not in httpx.get(f"{url}/metrics", timeout=30).text:
            assert time.monotonic() < deadline and worker.is_alive(), "request never arrived"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        worker.join(30)
        assert result["code"] == 200
        assert result["body"]["results"][0]["status"] == "fail"  # len("ab") % 2 == 0
        # uvicorn re-raises the captured SIGTERM after draining, so the exit is by that signal
        assert proc.wait(30) in (0, -signal.SIGTERM)
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        with proc:  # closes its stderr pipe
            if proc.poll() is None:
                proc.kill()


def test_openapi_in_docs_is_current(tmp_path: Path, repo_root: Path) -> None:
    out = tmp_path / "openapi.json"
    write_openapi(out)
    schema = json.loads(out.read_text())
    assert {"/v1/score", "/get_reward", "/healthz", "/metrics"} <= set(schema["paths"])
    committed = repo_root / "docs" / "openapi.json"
    assert json.loads(committed.read_text()) == schema, (
        "run: verifiers serve --write-openapi docs/openapi.json"
    )


@pytest.mark.parametrize(
    ("settings", "body", "match"),
    [
        ({"verifier": "answer.numeric"}, ["4"], "--group-size .*--invalid-score"),
        ({"verifier": "answer.numeric", "group_size": 1}, ["4"], "a group of one"),
        ({"group_size": 4}, ["4"], "label 0 is a plain reference .*--verifier"),
    ],
)
def test_get_reward_refuses_configs_that_could_only_answer_nan(
    settings: dict[str, Any], body: list[str], match: str
) -> None:
    """``/get_reward`` on a server that has no zero-gradient value for an unjudged rollout
    (no ``--group-size``, no ``--invalid-score``), or no verifier for plain labels, answers
    400 naming the flag (OpenRLHF's client retries, then stops the run) instead of NaN."""
    from verifiers.rl_adapters.server import create_app

    app = create_app(ServerSettings(engine=EngineSettings(sandbox="none"), **settings))

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post(
                "/get_reward", json={"query": ["Q 4"], "prompts": ["Q"], "labels": body}
            )

    response = asyncio.run(post())
    assert response.status_code == 400
    assert re.search(match, response.json()["detail"]), response.text


def test_non_finite_invalid_score_is_refused_at_start() -> None:
    from verifiers.rl_adapters.server import main

    assert main(["--invalid-score", "nan", "--write-openapi", "/dev/null"]) == 2


def _nemo_body(text: str, **row: Any) -> dict[str, Any]:
    """A NeMo-Gym ``BaseVerifyRequest`` as its agents post it (Responses API shapes)."""
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "What is 2 + 2?"}]},
        "response": {
            "id": "resp_1",
            "created_at": 1.0,
            "model": "policy",
            "object": "response",
            "output": [
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "The answer is 5"}],
                },
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                },
            ],
            "parallel_tool_calls": False,
            "tool_choice": "none",
            "tools": [],
        },
        **row,
    }


def test_nemo_gym_verify_scores_and_never_turns_an_abstain_into_zero(server: _Server) -> None:
    """``POST /verify`` speaks NeMo-Gym's resources-server contract: the request echoed plus
    ``reward``; an unjudged rollout is ``reward: null`` with ``mask_sample: true`` and a
    ``failure_kind``, never a 0 a trainer would take for a wrong answer."""
    cases = {
        "pass": _nemo_body("The answer is 4", expected_answer="4", question="What is 2 + 2?"),
        "fail": _nemo_body("The answer is 5", expected_answer="4"),
        # the reasoning item says 5: only the assistant's message is the answer
        "task": _nemo_body("4", task=json.dumps({"verifier": "answer.numeric", "reference": 4})),
        "task_dict": _nemo_body("3", task={"verifier": "answer.numeric", "reference": 4}),
        "no_reference": _nemo_body("The answer is 4"),  # bad_input: answer.numeric needs one
        "infra": _nemo_body(
            "x", task={"verifier": "rltest.slow", "spec": {"sleep_s": 0, "fail": True}}
        ),
        "bad_task": _nemo_body("4", task='{"verifier": "answer.numeric", "oops": 1}'),
        "surrogate": _nemo_body("The answer is 4 \ud800", expected_answer="4"),
    }
    with httpx.Client(base_url=server.url, timeout=60) as client:
        replies = {}
        for name, body in cases.items():
            raw = json.dumps(body)  # ASCII-escaped: the lone surrogate travels as \ud800
            response = client.post(
                "/verify", content=raw, headers={"content-type": "application/json"}
            )
            assert response.status_code == 200, (name, response.text)
            replies[name] = response.json()
        missing = client.post("/verify", json={"responses_create_params": {"input": "q"}})
        assert missing.status_code == 422 and "'response'" in missing.json()["detail"]
    for name in ("pass", "task", "surrogate"):
        assert (replies[name]["reward"], replies[name]["mask_sample"]) == (1.0, False), name
        assert replies[name]["failure_kind"] is None
    for name in ("fail", "task_dict"):
        assert (replies[name]["reward"], replies[name]["mask_sample"]) == (0.0, False), name
    assert replies["pass"]["question"] == "What is 2 + 2?"  # the request is echoed
    assert replies["pass"]["response"]["id"] == "resp_1"
    assert replies["pass"]["verifiers"]["status"] == "pass"
    kinds = {
        "no_reference": "verifiers:bad_input",
        "infra": "provider_unavailable",
        "bad_task": "verifiers:bad_input",
    }
    for name, kind in kinds.items():
        reply = replies[name]
        assert reply["reward"] is None and reply["mask_sample"] is True, name
        assert reply["failure_kind"] == kind and reply["failure_reason"], name
        assert reply["verifiers"]["status"] == "error"
    assert "sandbox fell over" in replies["infra"]["failure_reason"]


def test_nemo_gym_verify_without_any_task_is_a_setup_error() -> None:
    """A server with no default verifier refuses rows that name no task (400 naming the fix)
    instead of answering every rollout with an abstain."""
    from verifiers.rl_adapters.server import create_app

    app = create_app(ServerSettings(engine=EngineSettings(sandbox="none")))

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/verify", json=_nemo_body("4", expected_answer="4"))

    response = asyncio.run(post())
    assert response.status_code == 400
    assert "--verifier" in response.json()["detail"]
