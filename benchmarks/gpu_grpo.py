"""GRPO with code rewards: how much of a training step waits on rewards.

Trains a small causal LM built from a config (tokenizer trained in-process: no downloads, no
hub) with TRL's ``GRPOTrainer`` on code tasks scored by ``code.tests``, twice in one run:

- ``adapter``: :class:`verifiers.rl_adapters.trl.TRLRewards` (async, one warm engine and
  sandbox pool for the whole run, the batch verified concurrently);
- ``plain_sync``: a plain synchronous reward function calling ``verifiers.score(...)`` on the
  batch, which is what the one-line public API gives (a fresh engine per call).

For each it reports step time, time inside the reward function, and their ratio (the share
of step time spent waiting on rewards), plus the result statuses (so a machine without a
working sandbox shows up as ``error`` rows instead of silently fast rewards).

GPU (prepared for a lent machine; well under 15 minutes on one H200):
    python benchmarks/gpu_grpo.py --out gpu_grpo.json
CPU smoke (tiny settings, ~1 minute, proves the script works):
    python benchmarks/gpu_grpo.py --cpu --tiny
Prints one JSON line per variant and a summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

# the tiny-model helpers the TRL tests use (tests/tiny_trl.py): one tokenizer recipe
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import tiny_trl

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TESTS = {
    "add": ("def check(f):\n    assert f(1, 2) == 3\n    assert f(-1, 1) == 0\n", "a + b"),
    "mul": ("def check(f):\n    assert f(2, 3) == 6\n    assert f(0, 5) == 0\n", "a * b"),
    "sub": ("def check(f):\n    assert f(5, 3) == 2\n    assert f(0, 1) == -1\n", "a - b"),
    "mx": ("def check(f):\n    assert f(2, 3) == 3\n    assert f(7, 1) == 7\n", "max(a, b)"),
}


def _task(name: str) -> dict[str, Any]:
    code, _ = TESTS[name]
    return {
        "verifier": "code.tests",
        "spec": {
            "tests": {"kind": "assert", "entry_point": name, "code": code},
            "timeout_s": 10,
        },
    }


def _prompt(name: str) -> str:
    return f"Write a Python function {name}(a, b).\n```python\ndef {name}(a, b):\n    return"


def _tokenizer() -> Any:
    corpus = []
    for name, (code, body) in TESTS.items():
        corpus.append(_prompt(name) + f" {body}\n```\n")
        corpus.append(code)
    corpus = corpus * 40 + ["def f(x):\n    return x + 1\nprint(f(2))\n"] * 40
    return tiny_trl.train_tokenizer(
        corpus, vocab_size=512, specials=["<pad>", "<s>", "</s>"], eos_token="</s>"
    )


def _model(tokenizer: Any, tiny: bool) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    size = (
        {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "heads": 4}
        if tiny
        else {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8, "heads": 8}
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=size["hidden_size"],
        intermediate_size=size["intermediate_size"],
        num_hidden_layers=size["num_hidden_layers"],
        num_attention_heads=size["heads"],
        num_key_value_heads=size["heads"],
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


class _Timed:
    """Wraps a reward function; accumulates wall time spent inside it (sync or async)."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.seconds = 0.0
        self.__name__ = getattr(func, "__name__", "reward")


def _wrap_sync(func: Any, timer: _Timed) -> Any:
    def reward(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return func(**kwargs)
        finally:
            timer.seconds += time.perf_counter() - started

    reward.__name__ = timer.__name__
    return reward


def _wrap_async(func: Any, timer: _Timed) -> Any:
    async def reward(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await func(**kwargs)
        finally:
            timer.seconds += time.perf_counter() - started

    reward.__name__ = timer.__name__
    return reward


def run_variant(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]
    from verifiers.rl_adapters.trl import TRLRewards

    import verifiers
    from datasets import Dataset
    from verifiers import EngineSettings

    torch.manual_seed(0)
    tokenizer = _tokenizer()
    model = _model(tokenizer, args.tiny)
    names = list(TESTS) * 8
    dataset = Dataset.from_dict(
        {
            "prompt": [_prompt(n) for n in names],
            "task": [json.dumps(_task(n)) for n in names],
        }
    )
    settings = EngineSettings.from_env(
        sandbox=args.sandbox, concurrency=args.concurrency, timeout_s=60
    )
    statuses: Counter[str] = Counter()
    adapter: TRLRewards | None = None
    if variant == "adapter":
        adapter = TRLRewards(components=["tests_passed"], asynchronous=True, settings=settings)
        main = adapter.funcs[0]

        async def counted(**kwargs: Any) -> Any:
            out = await main(**kwargs)
            statuses.update(kwargs_status(out))
            return out

        counted.__name__ = "verifiers"
        timer = _Timed(counted)
        funcs = [_wrap_async(counted, timer), *adapter.funcs[1:]]
        weights = adapter.weights
    else:

        def plain_sync(completions: list[str], task: list[str], **kwargs: Any) -> Any:
            items = [
                {"completion": c, "task": json.loads(t)}
                for c, t in zip(completions, task, strict=True)
            ]
            results = verifiers.score(
                items, sandbox=args.sandbox, concurrency=args.concurrency, timeout_s=60
            )
            rewards = [r.reward for r in results]
            statuses.update(kwargs_status(rewards))
            return rewards

        timer = _Timed(plain_sync)
        funcs = [_wrap_sync(plain_sync, timer)]
        weights = [1.0]

    step_times: list[float] = []

    class StepTimer(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            step_times.append(time.perf_counter() - self.started)

    use_cpu = args.cpu or not torch.cuda.is_available()
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="gpu_grpo_"),
        use_cpu=use_cpu,
        bf16=not use_cpu,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        max_completion_length=args.max_completion,
        max_steps=args.steps,
        learning_rate=1e-5,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
        reward_weights=weights,
        temperature=1.0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=funcs,
        args=config,
        train_dataset=dataset,
        callbacks=[StepTimer()],
    )
    started = time.perf_counter()
    try:
        trainer.train()
    finally:
        if adapter is not None:
            adapter.close()
    total = time.perf_counter() - started
    # the first step carries one-off costs (sandbox start, CUDA warm-up): report both
    steady = sum(step_times[1:]) if len(step_times) > 1 else sum(step_times)
    return {
        "bench": "gpu_grpo",
        "variant": variant,
        "device": "cpu" if use_cpu else torch.cuda.get_device_name(0),
        "steps": len(step_times),
        "completions_per_step": args.batch,
        "train_s": round(total, 3),
        "step_s_mean": round(sum(step_times) / max(len(step_times), 1), 3),
        "reward_s_total": round(timer.seconds, 3),
        "reward_share": round(timer.seconds / max(sum(step_times), 1e-9), 4),
        "steady_step_s_mean": round(steady / max(len(step_times) - 1, 1), 3),
        "statuses": dict(statuses),
        "sandbox": args.sandbox,
    }


def kwargs_status(rewards: list[float | None]) -> list[str]:
    """Coarse status from TRL-side rewards (None = not judged)."""
    return ["none" if r is None else ("pass" if r >= 1.0 else "fail") for r in rewards]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="GRPO reward-wait share: adapter vs plain sync")
    p.add_argument("--cpu", action="store_true", help="run on CPU")
    p.add_argument("--tiny", action="store_true", help="tiny model and run (smoke test)")
    p.add_argument("--steps", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--generations", type=int)
    p.add_argument("--max-completion", type=int)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--sandbox", default="auto")
    p.add_argument("--variants", default="adapter,plain_sync")
    p.add_argument("--out", help="also write the JSON lines to this file")
    args = p.parse_args(argv)
    tiny_defaults = {"steps": 2, "batch": 8, "generations": 4, "max_completion": 16}
    full_defaults = {"steps": 12, "batch": 64, "generations": 8, "max_completion": 96}
    for key, value in (tiny_defaults if args.tiny else full_defaults).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    rows = []
    for variant in args.variants.split(","):
        row = run_variant(variant.strip(), args)
        print(json.dumps(row), flush=True)
        rows.append(row)
    summary = {
        "bench": "gpu_grpo_summary",
        "host": platform.node(),
        "reward_share": {r["variant"]: r["reward_share"] for r in rows},
        "step_s_mean": {r["variant"]: r["step_s_mean"] for r in rows},
    }
    print(json.dumps(summary), flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in [*rows, summary]:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
