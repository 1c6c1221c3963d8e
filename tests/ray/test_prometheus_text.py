"""``RayScorer.metrics_text``'s exposition, without a cluster: the text a scrape gets from the
per-actor rows (label values escaped, every family headed once, driver counters last)."""

from __future__ import annotations

from verifiers.ray import RayStats, _prometheus


def test_each_family_is_headed_once_and_labels_are_escaped() -> None:
    actors = [
        {
            "actor": 0,
            "node": 'n"1\\x\n',
            "alive": True,
            "verifiers_results_total": [
                {"status": "pass", "verifier": "a@1", "value": 3},
                {"status": "error", "verifier": "b", "value": 1},
            ],
            "verifiers_errors_total": [{"kind": "infra", "verifier": "b", "value": 1}],
            "verifiers_item_seconds": [{"verifier": "a@1", "sum": 0.5, "count": 3}],
            "verifiers_items_in_flight": 2,
        },
        {"actor": 1, "node": "n2", "alive": False},  # dead: no counters, still reported down
    ]
    stats = RayStats()
    stats.retried = 4
    node = 'node="n\\"1\\\\x\\n"'
    assert _prometheus(actors, stats).splitlines() == [
        "# HELP verifiers_results_total Results by status and verifier",
        "# TYPE verifiers_results_total counter",
        f'verifiers_results_total{{actor="0",{node},status="pass",verifier="a@1"}} 3',
        f'verifiers_results_total{{actor="0",{node},status="error",verifier="b"}} 1',
        "# HELP verifiers_errors_total Unjudged results by error kind and verifier",
        "# TYPE verifiers_errors_total counter",
        f'verifiers_errors_total{{actor="0",{node},kind="infra",verifier="b"}} 1',
        "# HELP verifiers_item_seconds Per-item verification time",
        "# TYPE verifiers_item_seconds summary",
        f'verifiers_item_seconds_sum{{actor="0",{node},verifier="a@1"}} 0.5',
        f'verifiers_item_seconds_count{{actor="0",{node},verifier="a@1"}} 3',
        "# HELP verifiers_items_in_flight Items being scored",
        "# TYPE verifiers_items_in_flight gauge",
        f'verifiers_items_in_flight{{actor="0",{node}}} 2',
        "# HELP verifiers_ray_actor_up Whether the driver last saw the actor alive",
        "# TYPE verifiers_ray_actor_up gauge",
        f'verifiers_ray_actor_up{{actor="0",{node}}} 1',
        'verifiers_ray_actor_up{actor="1",node="n2"} 0',
        "# HELP verifiers_ray_retried_total Extra actor calls after an actor died",
        "# TYPE verifiers_ray_retried_total counter",
        "verifiers_ray_retried_total 4",
    ]
