"""OpenRLHF: the file-mode ``reward_func`` and the HTTP reward protocol.

File mode: OpenRLHF's ``--remote_rm_url /path/to/file.py`` loads ``reward_func`` from that
file (``spec_from_file_location``) and calls ``reward_func(queries, prompts, labels)`` where
``queries`` are the decoded prompt+response sequences and ``labels`` the ``--label_key``
column. It expects ``{"rewards": Tensor, "scores": Tensor, "extra_logs": {name: Tensor}}``.
Point it at this module's file (absolute imports, so it loads stand-alone), configured by
environment variables::

    VERIFIERS_VERIFIER=answer.numeric \\
    python -m openrlhf.cli.train_ppo_ray ... \\
        --remote_rm_url $(python -c 'import verifiers.rl_adapters.openrlhf as m; print(m.__file__)') \\
        --label_key answer

or write a two-line file of your own: ``from verifiers.rl_adapters.openrlhf import
make_reward_func; reward_func = make_reward_func(verifier="code.tests")``.

HTTP mode: ``verifiers serve`` answers OpenRLHF's ``POST {"query", "prompts", "labels"}`` at
``/get_reward`` with ``{"rewards", "scores", "extra_logs"}`` (lists); pass
``--remote_rm_url http://host:8000/get_reward`` (several URLs shard the batch).

Labels: a task (dict, or JSON string of one with ``verifier``/``checks``), else the reference
for the default verifier. The response is the query with the prompt prefix and trailing
special tokens (``eos_tokens``) removed.

Unscorable samples: OpenRLHF has no per-sample abstain. ``rewards``/``scores`` carry
``invalid_score`` there (NaN unless told: with dynamic filtering on, a NaN score drops the
group, and otherwise the non-finite loss makes the failure visible instead of a silent 0) and
``extra_logs["verifiers_valid"]`` is 0. In JSON, NaN is written as the bare ``NaN`` token that
Python's ``json`` (used by OpenRLHF's aiohttp client) reads.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from verifiers.rl_adapters._rows import (
    MISSING,
    TaskDefaults,
    make_item,
    parse_json,
    result_reward,
    task_from_json,
)
from verifiers.rl_adapters._scorer import MachineConcurrency, Scorer

from verifiers.engine import EngineSettings
from verifiers.types import Result

__all__ = [
    "DEFAULT_EOS_TOKENS",
    "OpenRLHFRequest",
    "OpenRLHFResponse",
    "OpenRLHFScoring",
    "make_reward_func",
    "reward_func",
]

DEFAULT_EOS_TOKENS: tuple[str, ...] = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
)


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward request."""

    model_config = ConfigDict(extra="allow")

    query: list[str] = Field(max_length=100_000)
    """Decoded prompt + response sequences."""
    prompts: list[str] | None = None
    """The prompts (used to cut the response out of ``query``)."""
    labels: list[Any] | None = None
    """The ``--label_key`` column: a reference, or a task (dict or JSON string)."""


class OpenRLHFResponse(BaseModel):
    """OpenRLHF's remote reward response (lists; one value per query)."""

    rewards: list[float]
    """The reward (``invalid_score`` where the verifier could not judge)."""
    scores: list[float]
    """Same as ``rewards``; OpenRLHF's dynamic filtering reads it."""
    extra_logs: dict[str, list[float]]
    """``verifiers_valid`` (1/0), ``verifiers_pass`` (1/0) and each component."""


# OpenRLHF loads this file under another module name (not in sys.modules), where pydantic
# cannot resolve the postponed annotations by itself: give it the names.
for _model in (OpenRLHFRequest, OpenRLHFResponse):
    _model.model_rebuild(_types_namespace={"Any": Any})


def _label_task(label: Any) -> tuple[Any, Any]:
    """``(task, reference)`` from one label."""
    value = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        task = task_from_json(label)  # a valid task string: validated once, shared
        if task is not None:
            return task, MISSING
        try:
            value = parse_json(label)
        except json.JSONDecodeError:
            value = label
    if isinstance(value, Mapping) and ("verifier" in value or "checks" in value):
        return dict(value), MISSING
    return MISSING, label


def response_text(query: str, prompt: str | None, eos_tokens: Sequence[str]) -> str:
    """The model's response inside ``query``: after the prompt, without trailing end tokens."""
    text = query
    if prompt:
        if text.startswith(prompt):
            text = text[len(prompt) :]
        else:
            at = text.find(prompt)
            if at >= 0:
                text = text[at + len(prompt) :]
    tokens = eos_tokens if type(eos_tokens) is tuple else tuple(eos_tokens)
    text = text.rstrip()
    if not text.endswith(tokens):  # the common case (no end token left), in one check
        return text
    stripped = True
    while stripped:
        stripped = False
        text = text.rstrip()
        for token in eos_tokens:
            if token and text.endswith(token):
                text = text[: -len(token)]
                stripped = True
    return text


class OpenRLHFScoring:
    """The shared core of file mode and HTTP mode: requests in, lists out.

    Args:
        verifier: Default verifier for labels that are plain references.
        spec: Its settings.
        invalid_score: Reward/score for samples the verifier could not judge (NaN unless told).
        eos_tokens: Trailing special tokens removed from each response.
        components: Fixed component names for ``extra_logs`` (default: those seen).
    """

    def __init__(
        self,
        *,
        verifier: str | None = None,
        spec: Mapping[str, Any] | None = None,
        invalid_score: float = math.nan,
        eos_tokens: Sequence[str] = DEFAULT_EOS_TOKENS,
        components: Sequence[str] | None = None,
    ) -> None:
        self.defaults = TaskDefaults(verifier=verifier, spec=spec)
        self.invalid_score = invalid_score
        self.eos_tokens = tuple(eos_tokens)
        self.components = list(components) if components is not None else None

    def items(self, request: OpenRLHFRequest) -> list[dict[str, Any] | Result]:
        """Trajectories (or ``bad_input`` results) for a request.

        Raises:
            ValueError: ``prompts``/``labels`` do not match ``query`` in length.
        """
        n = len(request.query)
        for name in ("prompts", "labels"):
            seq = getattr(request, name)
            if seq is not None and len(seq) != n:
                raise ValueError(f"'{name}' has {len(seq)} entries but 'query' has {n}")
        out: list[dict[str, Any] | Result] = []
        for i, query in enumerate(request.query):
            prompt = request.prompts[i] if request.prompts is not None else None
            task, reference = (
                _label_task(request.labels[i]) if request.labels is not None else (MISSING, MISSING)
            )
            out.append(
                make_item(
                    completion=response_text(query, prompt, self.eos_tokens),
                    prompt=prompt,
                    task=task,
                    reference=reference,
                    defaults=self.defaults,
                )
            )
        return out

    def response(self, results: Sequence[Result]) -> OpenRLHFResponse:
        """The protocol response for ``results``."""
        rewards: list[float] = []
        logs: dict[str, list[float]] = {"verifiers_valid": [], "verifiers_pass": []}
        names = self.components
        if names is None:
            names = sorted(
                {k for r in results if result_reward(r) is not None for k in r.components}
            )
        for name in names:
            logs[name] = []
        for r in results:
            value = result_reward(r)
            rewards.append(self.invalid_score if value is None else float(value))
            logs["verifiers_valid"].append(0.0 if value is None else 1.0)
            logs["verifiers_pass"].append(1.0 if r.status == "pass" else 0.0)
            for name in names:
                comp = r.components.get(name)
                logs[name].append(
                    self.invalid_score if value is None or comp is None else float(comp)
                )
        return OpenRLHFResponse(rewards=rewards, scores=list(rewards), extra_logs=logs)


def make_reward_func(
    *,
    verifier: str | None = None,
    spec: Mapping[str, Any] | None = None,
    invalid_score: float = math.nan,
    eos_tokens: Sequence[str] = DEFAULT_EOS_TOKENS,
    components: Sequence[str] | None = None,
    settings: EngineSettings | None = None,
    machine_concurrency: MachineConcurrency = "auto",
    machine_key: str = "default",
) -> Callable[..., dict[str, Any]]:
    """A ``reward_func(queries, prompts, labels, **kwargs)`` for OpenRLHF's file mode.

    The returned function is thread-safe (OpenRLHF calls it through ``asyncio.to_thread``)
    and scores through one long-lived engine.
    """
    scoring = OpenRLHFScoring(
        verifier=verifier,
        spec=spec,
        invalid_score=invalid_score,
        eos_tokens=eos_tokens,
        components=components,
    )
    scorer = Scorer(settings, machine_concurrency=machine_concurrency, machine_key=machine_key)

    def reward_func(
        queries: list[str], prompts: list[str], labels: list[Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        import torch

        request = OpenRLHFRequest(query=list(queries), prompts=list(prompts), labels=labels)
        response = scoring.response(scorer.score(scoring.items(request)))
        rewards = torch.tensor(response.rewards, dtype=torch.float32)
        return {
            "rewards": rewards,
            "scores": rewards.clone(),
            "extra_logs": {
                k: torch.tensor(v, dtype=torch.float32) for k, v in response.extra_logs.items()
            },
        }

    reward_func.scorer = scorer  # type: ignore[attr-defined]
    return reward_func


_env_func: Callable[..., dict[str, Any]] | None = None


def reward_func(
    queries: list[str], prompts: list[str], labels: list[Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """File-mode entry point configured from the environment.

    ``VERIFIERS_VERIFIER`` (default verifier), ``VERIFIERS_SPEC`` (its spec, JSON),
    ``VERIFIERS_INVALID_SCORE`` (default NaN), plus the engine's ``VERIFIERS_*`` settings.
    """
    global _env_func
    if _env_func is None:
        spec_text = os.environ.get("VERIFIERS_SPEC")
        _env_func = make_reward_func(
            verifier=os.environ.get("VERIFIERS_VERIFIER") or None,
            spec=json.loads(spec_text) if spec_text else None,
            invalid_score=float(os.environ.get("VERIFIERS_INVALID_SCORE", "nan")),
        )
    return _env_func(queries, prompts, labels, **kwargs)
