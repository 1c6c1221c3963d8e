"""veRL 0.9 inputs shared by the veRL tests (tests/rl_adapters, tests/ray, tests/episodes):
a byte-level tokenizer saved to a folder (veRL's workers load the policy's tokenizer by
path), the trainer config veRL's reward loop reads, and ``DataProto`` batches built the way
veRL's rollout hands them to the reward workers (left-padded prompts, right-padded
responses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto

OUR_MANAGER = {
    "source": "importlib",
    "name": "VerifiersRewardManager",
    "module": {"path": "pkg://verifiers.rl_adapters.verl_manager", "name": "unused"},
}
"""``reward.reward_manager``: our manager through veRL's importlib hook."""


def save_tokenizer(path: Path) -> str:
    """A byte-level BPE tokenizer (no merges) with pad/bos/eos, saved under ``path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2}
    for ch in sorted(alphabet):
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.save_pretrained(path)
    return str(path)


def verl_config(tokenizer_dir: str, manager: dict[str, Any], n: int = 4, **reward: Any) -> Any:
    """veRL's trainer config, as much of it as the reward loop reads."""
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "model": {"path": tokenizer_dir, "tokenizer_path": tokenizer_dir},
                "rollout": {"n": n},
            },
            "algorithm": {"adv_estimator": "grpo"},
            "reward": {
                "num_workers": 1,
                "reward_manager": manager,
                "custom_reward_function": {"path": None, "name": "compute_score"},
                "reward_model": {
                    "enable": False,
                    "enable_resource_pool": False,
                    "model_path": None,
                    "rollout": {},
                },
                "sandbox_fusion": {"url": None},
                **reward,
            },
        }
    )


def verl_batch(
    tokenizer_dir: str,
    responses: list[str],
    tasks: list[dict[str, Any]],
    uids: list[str],
    **non_tensors: list[Any],
) -> DataProto:
    """One sample per response, its task in ``extra_info["task"]`` (JSON), grouped by uid."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    prompt_ids = [tok.encode("Write add(a, b).") for _ in responses]
    response_ids = [tok.encode(r) + [tok.eos_token_id] for r in responses]
    plen = max(map(len, prompt_ids))
    rlen = max(map(len, response_ids))
    prompts = torch.zeros((len(responses), plen), dtype=torch.long)
    padded = torch.zeros((len(responses), rlen), dtype=torch.long)
    mask = torch.zeros((len(responses), plen + rlen), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompt_ids, response_ids, strict=True)):
        prompts[i, plen - len(p) :] = torch.tensor(p)  # left-padded prompt
        padded[i, : len(r)] = torch.tensor(r)  # right-padded response
        mask[i, plen - len(p) : plen] = 1
        mask[i, plen : plen + len(r)] = 1
    extra = {k: np.array(v, dtype=object) for k, v in non_tensors.items()}
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": padded, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["code"] * len(responses), dtype=object),
            "reward_model": np.array(
                [{"ground_truth": None, "style": "rule"} for _ in responses], dtype=object
            ),
            "extra_info": np.array([{"task": json.dumps(t)} for t in tasks], dtype=object),
            "uid": np.array(uids, dtype=object),
            **extra,
        },
    )
