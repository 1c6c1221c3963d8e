"""The tiny model, tokenizer and trainer settings of the real TRL runs (imported as ``tiny_trl``).

tests/rl_adapters/test_rl_trl.py (reward functions) and tests/episodes/test_trl_env.py
(``environment_factory``) both drive a real ``GRPOTrainer`` on CPU; they build their
tokenizer, model and ``GRPOConfig`` here so the two stay one setup. The tokenizer is built
once per process (a BPE trained on a few strings, with the special tokens and chat template
both tests need); the model is fresh per call (training changes its weights), seeded by the
caller's ``torch.manual_seed``. Importable from every test folder: ``tests/`` is on the path
because tests/conftest.py lives there.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

SPECIALS = [
    "<pad>",
    "<s>",
    "</s>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
]
CORPUS = [
    "What is 2 + 3? The answer is 5.",
    "one two three four five six seven",
    "fix the bug in calc.py then submit",
    '{"name": "submit", "arguments": {}}',
] * 25


def offline() -> None:
    """No hub access: everything here is built locally."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def train_tokenizer(
    corpus: list[str], *, vocab_size: int, specials: list[str], eos_token: str
) -> Any:
    """A byte-level BPE tokenizer trained here on ``corpus`` (no hub), padding on the left.

    ``specials`` must hold ``<pad>`` and ``<s>`` (pad and bos); ``eos_token`` one of them.
    Also used by benchmarks/gpu_grpo.py, which trains a larger one on its code tasks.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    out = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token=eos_token, pad_token="<pad>"
    )
    out.padding_side = "left"
    return out


@functools.cache
def tokenizer() -> Any:
    """A byte-level BPE tokenizer (vocabulary ~330) with TRL's Qwen3 chat template; eos is
    ``<|im_end|>`` so chat turns and plain completions end the same way."""
    from trl.chat_template_utils import qwen3_chat_template

    out = train_tokenizer(CORPUS, vocab_size=330, specials=SPECIALS, eos_token="<|im_end|>")
    out.chat_template = qwen3_chat_template
    return out


def model(max_positions: int = 2048) -> Any:
    """A fresh one-layer Llama over :func:`tokenizer`'s vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return LlamaForCausalLM(config)


def trainer_args(output_dir: Path | str, **overrides: Any) -> dict[str, Any]:
    """The settings every real run shares (CPU, a few short steps, no logging backends);
    ``overrides`` replace or add keys. Pass them to ``GRPOConfig(**...)``/``RLOOConfig``."""
    args: dict[str, Any] = {
        "output_dir": str(output_dir),
        "use_cpu": True,
        "bf16": False,
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 8,
        "max_steps": 3,
        "learning_rate": 1e-4,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "dataloader_num_workers": 0,
        "seed": 0,
    }
    args.update(overrides)
    return args
