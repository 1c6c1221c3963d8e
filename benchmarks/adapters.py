"""Adapter overhead and reward-server throughput.

Part 1: a batch of 256 completions scored through each adapter versus ``Engine.score`` called
directly, in the same run, with the same verifier (median of ``--repeats`` after a warm-up).
Target: adapter / engine <= 1.05. The verifiers are cheap on purpose (``answer.numeric`` is
inline, microseconds per item; ``answer.math`` goes through the engine's task path), which is
where an adapter's own cost would show; with a real sandboxed verifier the ratio only moves
closer to 1. Task strings are fresh for every call and ``--groups`` sets how many
completions share one (1: all distinct; 8: GRPO-shaped). Each row also reports this
process's CPU time. ``adapter_work`` rows time the adapter code alone (rows in, results out,
no engine). ``--baseline DIR`` loads another version of ``rl_adapters`` (a directory of its
``.py`` files) and measures it in the same rounds, as "(before) ..." rows.

Part 2: ``verifiers serve`` (a separate uvicorn process) on loopback under 1, 8 and 64
concurrent clients, each posting batches to ``/v1/score`` back to back for ``--duration``
seconds: requests/s, items/s, p50 and p95 latency.

``--repeat-tasks`` gives every call the same task strings (a dataset's rows coming back), so the
adapters' task memo applies across calls. Besides the ratio to the engine on pre-parsed dicts,
each row reports ``ratio_vs_columns`` (the engine fed the same columns, the JSON task parsed
per row; named by ``columns_peer``: veRL's rows carry no prompt, so their peer gets none) and
``cpu_min_ratio`` / ``cpu_min_ratio_vs_columns`` (cheapest rounds, the least disturbed on a
loaded machine).

Run:  python benchmarks/adapters.py [--repeats 15] [--groups 1,8] [--duration 5] [--batch 16]
      [--skip-server] [--code-repeats 3] [--repeat-tasks] [--baseline DIR]
Prints one JSON line per measurement, then a summary JSON line.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and sys.path and sys.path[0].endswith("benchmarks"):
    # ``python benchmarks/adapters.py`` puts this folder first on the path, where the sibling
    # ``ray.py`` benchmark would shadow the real ``ray`` that veRL imports.
    del sys.path[0]

import argparse
import asyncio
import functools
import json
import math
import os
import socket
import statistics
import subprocess
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx
from verifiers.rl_adapters import Scorer

from verifiers import Engine, EngineSettings
from verifiers import score as verifiers_score

N = 256
REPEAT_TASKS = False
"""``--repeat-tasks``: every call sees the same task strings (epoch-shaped: a dataset's rows come
back), so the adapters' task memo applies across calls; the default makes them new per call."""


def _rows(verifier: str, group: int = 1) -> tuple[list[str], list[str], list[str]]:
    """Prompts, completions and JSON task strings; ``group`` completions share one task.

    ``group=1``: every row its own task (the worst case for the adapters' JSON parsing);
    ``group=8``: GRPO-shaped, 32 prompts x 8 completions, each group repeating its prompt's
    task string.
    """
    prompts = [f"What is {i // group} + {i // group}?" for i in range(N)]
    if verifier == "code.tests":
        tests = "def check(f):\n    assert f(1, 2) == 3\n    assert f(0, 0) == 0\n"
        spec = {"tests": {"kind": "assert", "entry_point": "add", "code": tests}}
        completions = [
            f"```python\ndef add(a, b):\n    return a + b + {i % 2}\n```" for i in range(N)
        ]
        tasks = [json.dumps({"verifier": verifier, "spec": spec}) for _ in range(N)]
        return prompts, completions, tasks
    completions = [
        f"Adding them gives {2 * i if i % 3 else 2 * i + 1}. "
        f"The answer is {2 * (i // group) if i % 3 else 2 * i + 1}"
        for i in range(N)
    ]
    tasks = [
        json.dumps({"verifier": verifier, "reference": str(2 * (i // group))}) for i in range(N)
    ]
    return prompts, completions, tasks


def _fresh(tasks: list[str], call: int) -> list[str]:
    """The same task JSON, spelt differently for every call (a unique whitespace suffix).

    Each measured call gets task strings no call has seen before, as each training step
    brings new prompts: the adapters' task memo can help within a batch (a GRPO group), never
    by remembering an earlier call or another adapter's call.
    """
    if REPEAT_TASKS:
        return list(tasks)
    pad = "\n" + format(call + 1, "b").replace("0", " ").replace("1", "\t")
    return [t + pad for t in tasks]


_BASELINE = "_baseline_rl_adapters"


def load_baseline(directory: str) -> dict[str, ModuleType]:
    """Another version of ``rl_adapters`` (a directory of its files), loaded side by side.

    For before/after numbers from one process: the files are imported as the package
    ``_baseline_rl_adapters``; while they load, their absolute ``verifiers.rl_adapters.*``
    imports are pointed at the baseline's own modules (then restored), so the baseline never
    runs the current helpers.
    """
    import importlib.util
    import types

    names = ("_machine_limit", "_rows", "_extra", "_groups", "_scorer", "trl", "deepspeed", "verl")
    names += ("openrlhf",)
    package = types.ModuleType(_BASELINE)
    package.__path__ = [directory]
    sys.modules[_BASELINE] = package
    modules: dict[str, ModuleType] = {}
    saved = {name: sys.modules.get(f"verifiers.rl_adapters.{name}") for name in names}
    try:
        for name in names:
            spec = importlib.util.spec_from_file_location(
                f"{_BASELINE}.{name}", os.path.join(directory, f"{name}.py")
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            # Run under the canonical name: verl.py, loaded under another name, hands out the
            # canonical module's functions (for veRL's file loader), which would measure the
            # current code as "(before)".
            code = spec.loader.get_code(spec.name)  # type: ignore[attr-defined]
            sys.modules[f"verifiers.rl_adapters.{name}"] = module
            module.__name__ = f"verifiers.rl_adapters.{name}"
            try:
                exec(code, module.__dict__)
            finally:
                module.__name__ = spec.name
            modules[name] = module
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(f"verifiers.rl_adapters.{name}", None)
            else:
                sys.modules[f"verifiers.rl_adapters.{name}"] = previous
    return modules


def _round_robin(
    cases: dict[str, Callable[[], Any]], repeats: int, fresh: Callable[[int], None]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of every call: one warm-up call per case, then ``repeats`` rounds
    that each call every case once (so drift hits all alike); ``fresh(n)`` runs before the
    n-th measured call (new task strings: see :func:`_fresh`)."""
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm-up: workers, sandboxes, imports
        fn()
    calls = 0
    for _ in range(repeats):
        for name, fn in cases.items():
            calls += 1
            fresh(calls)
            started, cpu_started = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    return wall, cpu


def _verl_manager_cases(
    completions: list[str],
    infos: Callable[[], list[dict[str, Any]]],
    sandbox: str,
    loop: Any,
    verl_kwargs: dict[str, Any],
) -> dict[str, Callable[[], Any]]:
    """veRL's reward loop, one ``run_single`` task per sample gathered as
    ``RewardLoopWorker.compute_score_batch`` does, over the same ``DataProto`` batch: through
    ``VerifiersRewardManager``, and through veRL's own ``NaiveRewardManager`` calling our
    per-sample ``compute_score`` (the fair peer: the same slicing and decoding per sample).
    Empty without veRL."""
    try:
        import numpy as np
        import torch
        from omegaconf import OmegaConf
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast
        from verifiers.rl_adapters import verl as verl_adapter
        from verifiers.rl_adapters.verl_manager import VerifiersRewardManager
        from verl import DataProto
        from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
        from verl.trainer.ppo.reward import _call_with_kwargs
    except ImportError:
        return {}
    vocab = {"<pad>": 0, "</s>": 1}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    ids = [tokenizer.encode(c) + [tokenizer.eos_token_id] for c in completions]
    width = max(map(len, ids))
    responses = torch.zeros((len(ids), width), dtype=torch.long)
    mask = torch.zeros((len(ids), 1 + width), dtype=torch.long)
    for i, row in enumerate(ids):
        responses[i, : len(row)] = torch.tensor(row)
        mask[i, : 1 + len(row)] = 1
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {"rollout": {"n": 1}},
            "algorithm": {"adv_estimator": "grpo"},
            "reward": {
                "num_workers": 1,
                "reward_kwargs": {
                    "sandbox": sandbox,
                    "workers": 2,
                    "concurrency": 8,
                    "machine_concurrency": None,
                },
            },
        }
    )
    manager = loop.run_until_complete(_make_manager(VerifiersRewardManager, config, tokenizer))
    # veRL's own manager, with the function veRL's loader would hand it (reward_kwargs merged)
    naive_fn = functools.partial(_call_with_kwargs, verl_adapter.compute_score, verl_kwargs)
    naive = loop.run_until_complete(_make_manager(NaiveRewardManager, config, tokenizer, naive_fn))

    def run(manager: Any) -> Any:
        data = DataProto.from_dict(
            tensors={
                "prompts": torch.zeros((len(ids), 1), dtype=torch.long),
                "responses": responses,
                "attention_mask": mask,
            },
            non_tensors={
                "data_source": np.array(["bench"] * len(ids), dtype=object),
                "reward_model": np.array([{"ground_truth": None}] * len(ids), dtype=object),
                "extra_info": np.array(infos(), dtype=object),
            },
        )

        async def batch() -> list[Any]:
            return list(
                await asyncio.gather(
                    *(manager.run_single(data[i : i + 1]) for i in range(len(ids)))
                )
            )

        return loop.run_until_complete(batch())

    return {
        "veRL VerifiersRewardManager (256 run_single)": lambda: run(manager),
        "(veRL NaiveRewardManager + compute_score, 256 run_single)": lambda: run(naive),
    }


async def _make_manager(cls: Any, config: Any, tokenizer: Any, fn: Any = None) -> Any:
    return cls(config, tokenizer, fn)


_NO_PROMPT_PEER = "(engine.score + json.loads per row, no prompt)"


def _columns_peer(name: str) -> str:
    """The engine fed the columns the adapter row ``name`` is fed (its ``*_vs_columns`` base).

    veRL's rows get no prompt (``data_source``, the completion, ``extra_info["task"]`` or a
    ``ground_truth``), so their peer validates none: a peer that also validates the prompts
    would do work the adapter never does and flatter it. The other adapters get the prompts.
    """
    if "ground_truth" in name:
        return "(engine.score + task dict per row from ground_truth)"
    if "veRL compute_score" in name:
        return _NO_PROMPT_PEER
    return "(engine.score + json.loads per row)"


def adapter_overhead(
    verifier: str,
    repeats: int,
    sandbox: str,
    group: int = 1,
    baseline: dict[str, ModuleType] | None = None,
) -> list[dict[str, Any]]:
    """Each adapter and the engine, measured round-robin (so drift hits all alike).

    Every call gets task strings never seen before (see :func:`_fresh`).
    """
    from verifiers.rl_adapters import openrlhf, verl
    from verifiers.rl_adapters.deepspeed import DeepSpeedReward
    from verifiers.rl_adapters.trl import TRLRewards

    settings = EngineSettings(sandbox=sandbox, workers=2, concurrency=8)  # type: ignore[arg-type]
    prompts, completions, base_tasks = _rows(verifier, group)
    dict_items = [
        {"prompt": p, "completion": c, "task": json.loads(t)}
        for p, c, t in zip(prompts, completions, base_tasks, strict=True)
    ]
    loop = asyncio.new_event_loop()
    engine = Engine(settings)
    scorer = Scorer(settings, machine_concurrency=None)
    trl_sync = TRLRewards(asynchronous=False, scorer=scorer)
    trl_async = TRLRewards(asynchronous=True, scorer=scorer)
    ds = DeepSpeedReward(scorer=scorer)
    verl_kwargs = {
        "sandbox": sandbox,
        "workers": 2,
        "concurrency": 8,
        "machine_concurrency": None,
        "invalid_score": -1.0,
    }
    orlhf = openrlhf.make_reward_func(
        settings=settings, machine_concurrency=None, invalid_score=-1.0
    )
    closers: list[Callable[[], Any]] = [scorer.close, orlhf.scorer.close]  # type: ignore[attr-defined]
    queries = [p + " " + c for p, c in zip(prompts, completions, strict=True)]
    tasks = _fresh(base_tasks, 0)
    infos: list[dict[str, Any]] = [{"task": t} for t in tasks]
    base_truths = [str(json.loads(t).get("reference")) for t in base_tasks]
    truths = _fresh(base_truths, 0)

    def engine_from_truths() -> Any:
        items = [
            {"completion": c, "task": {"verifier": verifier, "reference": g}}
            for c, g in zip(completions, truths, strict=True)
        ]
        return loop.run_until_complete(engine.score(items))

    def engine_from_json() -> Any:
        items = [
            {"prompt": p, "completion": c, "task": json.loads(t)}
            for p, c, t in zip(prompts, completions, tasks, strict=True)
        ]
        return loop.run_until_complete(engine.score(items))

    def engine_from_json_no_prompt() -> Any:
        # veRL's compute_score rows carry no prompt (extra_info holds only the task): the
        # engine fed those columns validates no prompt either
        items = [
            {"completion": c, "task": json.loads(t)}
            for c, t in zip(completions, tasks, strict=True)
        ]
        return loop.run_until_complete(engine.score(items))

    cases: dict[str, Callable[[], Any]] = {
        "engine.score (direct)": lambda: loop.run_until_complete(engine.score(dict_items)),
        "TRL sync reward func": lambda: trl_sync.funcs[0](
            prompts=list(prompts), completions=list(completions), task=tasks
        ),
        "TRL async reward func": lambda: loop.run_until_complete(
            trl_async.funcs[0](prompts=list(prompts), completions=list(completions), task=tasks)
        ),
        "DeepSpeed reward_fn (tensors)": lambda: ds(prompts, completions, tasks=tasks),
        "veRL compute_score_batch": lambda: verl.compute_score_batch(
            ["bench"] * N, completions, [None] * N, infos, **verl_kwargs
        ),
        "OpenRLHF reward_func (file mode)": lambda: orlhf(queries, prompts, tasks),
    }
    cases.update(_verl_manager_cases(completions, lambda: infos, sandbox, loop, verl_kwargs))
    if verifier != "code.tests":  # one call per sample: how veRL's naive manager calls it
        cases["veRL compute_score (256 calls)"] = lambda: [
            verl.compute_score("bench", c, None, i, **verl_kwargs)
            for c, i in zip(completions, infos, strict=True)
        ]
        # the usual veRL dataset shape: the answer in ground_truth, the verifier in kwargs
        cases["veRL compute_score, ground_truth column (256 calls)"] = lambda: [
            verl.compute_score("bench", c, g, None, verifier=verifier, **verl_kwargs)
            for c, g in zip(completions, truths, strict=True)
        ]
        cases["(engine.score + task dict per row from ground_truth)"] = engine_from_truths
    if baseline is not None:  # the same calls through the other version, same rounds
        old_scorer = baseline["_scorer"].Scorer(settings, machine_concurrency=None)
        old_trl = baseline["trl"].TRLRewards(asynchronous=False, scorer=old_scorer)
        old_ds = baseline["deepspeed"].DeepSpeedReward(scorer=old_scorer)
        old_verl = baseline["verl"]
        old_orlhf = baseline["openrlhf"].make_reward_func(
            settings=settings, machine_concurrency=None, invalid_score=-1.0
        )
        closers.extend([old_scorer.close, old_orlhf.scorer.close])
        cases["(before) TRL sync reward func"] = lambda: old_trl.funcs[0](
            prompts=list(prompts), completions=list(completions), task=tasks
        )
        cases["(before) DeepSpeed reward_fn (tensors)"] = lambda: old_ds(
            prompts, completions, tasks=tasks
        )
        cases["(before) veRL compute_score_batch"] = lambda: old_verl.compute_score_batch(
            ["bench"] * N, completions, [None] * N, infos, **verl_kwargs
        )
        cases["(before) OpenRLHF reward_func (file mode)"] = lambda: old_orlhf(
            queries, prompts, tasks
        )
        if verifier != "code.tests":
            cases["(before) veRL compute_score (256 calls)"] = lambda: [
                old_verl.compute_score("bench", c, None, i, **verl_kwargs)
                for c, i in zip(completions, infos, strict=True)
            ]
            cases["(before) veRL compute_score, ground_truth column (256 calls)"] = lambda: [
                old_verl.compute_score("bench", c, g, None, verifier=verifier, **verl_kwargs)
                for c, g in zip(completions, truths, strict=True)
            ]
    # the engine fed the same JSON task column, parsed row by row: what calling the engine
    # "directly" from trainer-shaped inputs costs
    cases["(engine.score + json.loads per row)"] = engine_from_json
    cases[_NO_PROMPT_PEER] = engine_from_json_no_prompt

    async def noop() -> None:
        return None

    # the fixed cost every sync adapter call pays: one round trip to the engine's loop thread
    cases["(Scorer thread round trip, no work)"] = lambda: scorer.run(noop())

    def fresh(call: int) -> None:
        nonlocal tasks, infos, truths
        tasks = _fresh(base_tasks, call)
        infos = [{"task": t} for t in tasks]
        truths = _fresh(base_truths, call)

    samples, cpu = _round_robin(cases, repeats, fresh)
    loop.run_until_complete(engine.aclose())
    loop.close()
    for close in closers:
        close()
    base = statistics.median(samples["engine.score (direct)"])
    cpu_base = statistics.median(cpu["engine.score (direct)"])
    out: list[dict[str, Any]] = []
    for name, values in samples.items():
        median = statistics.median(values)
        cpu_median = statistics.median(cpu[name])
        # "the engine fed the same trainer columns": the JSON task column, or for the
        # ground_truth rows the task dict built per row from that column
        peer = _columns_peer(name)
        columns_base = statistics.median(samples[peer])
        columns_cpu = statistics.median(cpu[peer])
        row = {
            "bench": "adapter_overhead",
            "verifier": verifier,
            "group": group,
            "sandbox": sandbox,
            "adapter": name,
            "n": N,
            "repeats": repeats,
            "median_s": round(median, 6),
            "engine_s": round(base, 6),
            "ratio": round(median / base, 3),
            "overhead_ms_per_item": round(1000 * (median - base) / N, 4),
            # CPU time of this process (all its threads; not worker processes): immune to
            # other jobs preempting us, so the steadier measure for in-process verifiers
            "cpu_median_s": round(cpu_median, 6),
            "cpu_ratio": round(cpu_median / cpu_base, 3),
            "cpu_overhead_us_per_item": round(1e6 * (cpu_median - cpu_base) / N, 2),
            # against the engine fed the same trainer columns (it parses each JSON task too)
            "ratio_vs_columns": round(median / columns_base, 3),
            "cpu_ratio_vs_columns": round(cpu_median / columns_cpu, 3),
            "columns_peer": peer,
            "repeat_tasks": REPEAT_TASKS,
            # best of the rounds, this process's CPU time: the least disturbed by other jobs
            # on a loaded machine (each case's cheapest round against the engine's cheapest)
            "cpu_min_s": round(min(cpu[name]), 6),
            "cpu_min_ratio": round(min(cpu[name]) / min(cpu["engine.score (direct)"]), 3),
            "cpu_min_ratio_vs_columns": round(min(cpu[name]) / min(cpu[peer]), 3),
        }
        naive = "(veRL NaiveRewardManager + compute_score, 256 run_single)"
        if name.startswith("veRL VerifiersRewardManager") and naive in cpu:
            # the fair peer: veRL's own manager on the same DataProto batch
            row["cpu_ratio_vs_naive_manager"] = round(cpu_median / statistics.median(cpu[naive]), 3)
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def adapter_work(
    repeats: int, group: int, baseline: dict[str, ModuleType] | None = None
) -> list[dict[str, Any]]:
    """The adapters' own CPU work per batch, without the engine: rows in, results out.

    The end-to-end ratios above carry the engine's run-to-run noise (on a loaded machine,
    larger than the adapters' whole cost); this isolates what the adapter code itself
    spends: building the 256 rows from trainer-shaped inputs (fresh task strings every round)
    and turning 256 ready results into what the trainer gets.
    """
    from verifiers.rl_adapters import _rows as rows_mod
    from verifiers.rl_adapters import deepspeed, openrlhf, trl, verl

    versions: dict[str, dict[str, ModuleType]] = {
        "": {
            "trl": trl,
            "deepspeed": deepspeed,
            "verl": verl,
            "openrlhf": openrlhf,
            "_rows": rows_mod,
        }
    }
    if baseline is not None:
        versions["(before) "] = baseline
    prompts, completions, base_tasks = _rows("answer.numeric", group)
    results = verifiers_score(
        [
            {"completion": c, "task": json.loads(t)}
            for c, t in zip(completions, base_tasks, strict=True)
        ]
    )
    verl_kwargs = {"sandbox": "none", "machine_concurrency": None, "invalid_score": -1.0}
    tasks = _fresh(base_tasks, 0)
    work_loop = asyncio.new_event_loop()
    cases: dict[str, Callable[[], Any]] = {}
    for label, mods in versions.items():

        def trl_work(m: dict[str, ModuleType] = mods) -> Any:
            rewards = m["trl"].TRLRewards.__new__(m["trl"].TRLRewards)
            rewards.defaults = m["_rows"].TaskDefaults()
            rewards.reference_column, rewards.id_column = "reference", "id"
            rewards.items(prompts, completions, {"task": tasks})
            return [m["_rows"].result_reward(r) for r in results]

        def ds_work(m: dict[str, ModuleType] = mods) -> Any:
            ds = m["deepspeed"].DeepSpeedReward.__new__(m["deepspeed"].DeepSpeedReward)
            ds.defaults = m["_rows"].TaskDefaults()
            ds.items(prompts, completions, tasks=tasks)
            values = [m["_rows"].result_reward(r) for r in results]
            return [math.nan if v is None else v for v in values], [v is not None for v in values]

        def verl_work(m: dict[str, ModuleType] = mods) -> Any:
            mod = m["verl"]
            infos = [{"task": t} for t in tasks]
            if hasattr(mod, "_config"):  # one config per distinct kwargs (issue 21)
                config = mod._config(verl_kwargs)
                [
                    config.rows.item("bench", c, None, i)
                    for c, i in zip(completions, infos, strict=True)
                ]
                return [config.score_dict(r) for r in results]
            if hasattr(mod, "_Rows"):
                r = mod._Rows(verl_kwargs)
                [r.item("bench", c, None, i) for c, i in zip(completions, infos, strict=True)]
                return mod._score_dicts(results, verl_kwargs)
            [
                mod._item("bench", c, None, i, verl_kwargs)
                for c, i in zip(completions, infos, strict=True)
            ]
            return [mod.score_dict(r, verl_kwargs) for r in results]

        def orlhf_work(m: dict[str, ModuleType] = mods) -> Any:
            mod = m["openrlhf"]
            scoring = mod.OpenRLHFScoring()
            queries = [p + " " + c for p, c in zip(prompts, completions, strict=True)]
            request = mod.OpenRLHFRequest(query=queries, prompts=prompts, labels=tasks)
            scoring.items(request)
            if hasattr(scoring, "values"):  # group fill (issue 14): values, then response
                return work_loop.run_until_complete(scoring.score(request, results))
            return scoring.response(results)

        cases[f"{label}TRL rows + rewards"] = trl_work
        cases[f"{label}DeepSpeed rows + values"] = ds_work
        cases[f"{label}veRL batch rows + dicts"] = verl_work
        cases[f"{label}OpenRLHF rows + response"] = orlhf_work

    def fresh(call: int) -> None:
        nonlocal tasks
        tasks = _fresh(base_tasks, call)

    samples, _ = _round_robin(cases, repeats, fresh)
    out = []
    for name, values in samples.items():
        median = statistics.median(values)
        row = {
            "bench": "adapter_work",
            "group": group,
            "adapter": name,
            "n": N,
            "repeats": repeats,
            "median_s": round(median, 6),
            "us_per_item": round(1e6 * median / N, 3),
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _raw_client(
    host: str, port: int, payload: bytes, stop: float, latencies: list[float]
) -> int:
    """One keep-alive HTTP/1.1 connection posting ``payload`` until ``stop``; returns errors.

    A raw asyncio client: httpx's pool itself saturates well below 64 concurrent requests on
    a 2-core machine (even ``GET /healthz`` collapsed), which would measure the load
    generator instead of the server.
    """
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST /v1/score HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    errors = 0
    try:
        while time.perf_counter() < stop:
            started = time.perf_counter()
            writer.write(head + payload)
            await writer.drain()
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            if b" 200 " not in status_line:
                errors += 1
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()
    return errors


async def _load(url: str, clients: int, batch: int, duration: float) -> dict[str, Any]:
    body = {
        "trajectories": [
            {
                "completion": f"The answer is {i}",
                "task": {"verifier": "answer.numeric", "reference": i},
            }
            for i in range(batch)
        ]
    }
    payload = json.dumps(body).encode()
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    started = time.perf_counter()
    stop = started + duration
    errors = sum(
        await asyncio.gather(
            *(_raw_client(host, int(port), payload, stop, latencies) for _ in range(clients))
        )
    )
    elapsed = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    return {
        "bench": "server",
        "clients": clients,
        "batch": batch,
        "requests": len(latencies),
        "errors": errors,
        "req_per_s": round(len(latencies) / elapsed, 1),
        "items_per_s": round(len(latencies) * batch / elapsed, 1),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "p95_ms": round(1000 * p95, 2),
    }


def server_throughput(duration: float, batch: int) -> list[dict[str, Any]]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "verifiers.rl_adapters.server",
            "--port",
            str(port),
            "--sandbox",
            "none",
            "--workers",
            "1",
            "--log-level",
            "warning",
        ],
        env={**os.environ},
    )
    url = f"http://127.0.0.1:{port}"
    out = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        asyncio.run(_load(url, 4, batch, 1.0))  # warm-up
        for clients in (1, 8, 64):
            row = asyncio.run(_load(url, clients, batch, duration))
            print(json.dumps(row), flush=True)
            out.append(row)
    finally:
        proc.terminate()
        proc.wait(30)
    return out


_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--repeats", {"type": int, "default": 15}),
    ("--duration", {"type": float, "default": 5.0}),
    ("--batch", {"type": int, "default": 16}),
    (
        "--groups",
        {
            "default": "1,8",
            "help": "completions per task string, comma-separated (1: all distinct; 8: GRPO)",
        },
    ),
    (
        "--verifiers",
        {
            "default": "answer.numeric,answer.math",
            "help": "inline/worker verifiers for the overhead part, comma-separated",
        },
    ),
    (
        "--baseline",
        {
            "metavar": "DIR",
            "help": "also measure another version of rl_adapters (a directory of its .py files)",
        },
    ),
    ("--skip-server", {"action": "store_true"}),
    ("--skip-overhead", {"action": "store_true"}),
    (
        "--code-repeats",
        {
            "type": int,
            "default": 0,
            "help": "also measure code.tests (local sandbox) with this many repeats (~20 s each)",
        },
    ),
    (
        "--repeat-tasks",
        {
            "action": "store_true",
            "help": "the same task strings on every call (the memo applies across calls)",
        },
    ),
)
"""The command line, one row per option."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    for flag, options in _OPTIONS:
        p.add_argument(flag, **options)
    args = p.parse_args(argv)
    global REPEAT_TASKS
    REPEAT_TASKS = args.repeat_tasks
    rows = []
    groups = [int(g) for g in args.groups.split(",") if g.strip()]
    baseline = load_baseline(args.baseline) if args.baseline else None
    verifiers = [v.strip() for v in args.verifiers.split(",") if v.strip()]
    for verifier in () if args.skip_overhead else verifiers:
        for group in groups:
            rows += adapter_overhead(verifier, args.repeats, "none", group, baseline)
    if not args.skip_overhead:
        for group in groups:
            rows += adapter_work(args.repeats, group, baseline)
    if args.code_repeats:
        rows += adapter_overhead("code.tests", args.code_repeats, "local", 1, baseline)
    if not args.skip_server:
        rows += server_throughput(args.duration, args.batch)
    print(
        json.dumps(
            {
                "bench": "summary",
                "cpu_count": os.cpu_count(),
                "python": sys.version.split()[0],
                "max_adapter_ratio": max(
                    (
                        r["ratio"]
                        for r in rows
                        if r["bench"] == "adapter_overhead" and not r["adapter"].startswith("(")
                    ),
                    default=None,
                ),
                "load_avg_1m": os.getloadavg()[0],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
