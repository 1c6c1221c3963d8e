"""OpenRLHF: the file-mode ``reward_func`` and the HTTP reward protocol.

Tested against OpenRLHF 0.11.2 (docs/adapters.md has the matrix).

File mode: ``--reward.remote_url /path/to/file.py`` (OpenRLHF < 0.11: ``--remote_rm_url``)
makes OpenRLHF load ``reward_func`` from that file (``spec_from_file_location``) and call
``reward_func(queries, prompts, labels)`` for **one rollout at a time** (through
``asyncio.to_thread``), where ``queries`` are the decoded prompt+response sequences and
``labels`` the ``--data.label_key`` column (OpenRLHF < 0.11: ``--label_key``). It expects
``{"rewards": Tensor, "scores": Tensor, "extra_logs": {name: Tensor}}``. Point it at this
module's file (absolute imports, so it loads stand-alone), configured by environment
variables::

    VERIFIERS_VERIFIER=answer.numeric VERIFIERS_GROUP_SIZE=8 VERIFIERS_COMPONENTS=tests_passed \
    python -m openrlhf.cli.train_ppo_ray ... --rollout.n_samples_per_prompt 8 \
        --reward.remote_url $(python -c 'import verifiers.rl_adapters.openrlhf as m; print(m.__file__)') \
        --data.label_key answer

or write a two-line file of your own: ``from verifiers.rl_adapters.openrlhf import
make_reward_func; reward_func = make_reward_func(verifier="code.tests", group_size=8)``.

HTTP mode: ``verifiers serve --group-size 8`` answers OpenRLHF's ``POST {"query", "prompts",
"labels"}`` at ``/get_reward`` with ``{"rewards", "scores", "extra_logs"}`` (lists); pass
``--reward.remote_url http://host:8000/get_reward``. OpenRLHF sends one rollout per request
(several URLs are used in turn, one request each).

Labels: a task (dict, or JSON string of one with ``verifier``/``checks``), else the reference
for the default verifier. A plain label with no default verifier is a ``bad_input`` row, and a
warning names the fix (``VERIFIERS_VERIFIER``). The response is the query with the prompt
prefix and trailing special tokens (``eos_tokens``) removed.

Unscorable samples (the verifier abstained: ``error``/``skipped``) get **zero advantage**:
their ``rewards``/``scores`` are the mean of their group's judged members (group = the
rollouts of one prompt, ``group_size`` members = ``--rollout.n_samples_per_prompt``; the same
prompt text twice in one batch makes consecutive groups of ``group_size``), which leaves the
group baseline of ``rloo``/``reinforce_baseline``/``dr_grpo``/``group_norm`` unchanged and
makes their own advantage 0 (:mod:`verifiers.rl_adapters._groups`). Since OpenRLHF sends one
rollout per request, an unjudged one waits (``group_wait_s``, default 60) for its group-mates
to be scored; judged ones never wait. Without ``group_size`` only the rollouts of one request
form a group, and an unjudged rollout with no judged peer there gets ``invalid_score``.

Refused, not silently NaN (a NaN reward voids OpenRLHF's whole iteration, since its
estimators normalise over the rollout batch): no ``group_size`` and no explicit finite
``invalid_score`` (nothing could be handed over for an unjudged rollout), a ``group_size`` of 1
(a group of one has no baseline: set ``invalid_score`` instead), a NaN or infinite
``invalid_score``, and a plain-reference label with no default verifier (the dataset, not the
model, decides that, so it is a configuration error: every such rollout would be unjudged).
File mode raises :class:`~verifiers.errors.InvalidSettings` (a ``ValueError``) when the function is built (or at the first such
label); the server answers ``/get_reward`` with 400 naming the flag. With ``group_size`` the
fill is exact zero advantage under ``rloo``, ``group_norm`` and ``dr_grpo``; under
``reinforce_baseline`` (group mean, then batch whitening), ``reinforce`` and ``gae`` it is the
group's judged mean: finite and unbiased within the group, but not an exact zero (OpenRLHF
has no per-sample loss mask a reward function can set). ``extra_logs`` has the fixed key set
of :mod:`verifiers.rl_adapters._extra` (``verifiers_valid``, ``verifiers_error_<kind>``, ...
and the configured ``components``), identical for every rollout, so OpenRLHF's experience
batching never sees a missing key. In JSON, NaN is written as the bare ``NaN`` token that
Python's ``json`` (used by OpenRLHF's aiohttp client) reads.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field
from verifiers.rl_adapters._extra import (
    extra_columns,
    extra_keys,
    parse_components,
)
from verifiers.rl_adapters._groups import GroupBaseline
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
from verifiers.errors import InvalidSettings
from verifiers.settings import env
from verifiers.types import Result

__all__ = [
    "DEFAULT_EOS_TOKENS",
    "OpenRLHFRequest",
    "OpenRLHFResponse",
    "OpenRLHFScoring",
    "make_reward_func",
    "reward_func",
]

log = logging.getLogger("verifiers.openrlhf")

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
    """The fixed key set: ``verifiers_valid``, ``verifiers_pass``, ``verifiers_skipped``,
    ``verifiers_error_<kind>`` (1/0 each) and each configured component."""


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
    # Pass after pass, trailing whitespace and then each token in turn come off the end, until
    # a pass removes nothing. Only the end index moves (one slice at the end): cutting a copy
    # per token made a tail of n end tokens cost O(n^2).
    tokens = tuple(token for token in tokens if token)
    end = len(text)
    stripped = True
    while stripped:
        stripped = False
        while end and text[end - 1].isspace():  # what ``str.rstrip()`` removes
            end -= 1
        for token in tokens:
            if text.endswith(token, 0, end):
                end -= len(token)
                stripped = True
    return text[:end]


_FILE_FLAGS: Mapping[str, str] = {
    "group_size": "VERIFIERS_GROUP_SIZE (make_reward_func(group_size=))",
    "invalid_score": "VERIFIERS_INVALID_SCORE (make_reward_func(invalid_score=))",
    "verifier": "VERIFIERS_VERIFIER (make_reward_func(verifier=))",
}
SERVER_FLAGS: Mapping[str, str] = {
    "group_size": "--group-size",
    "invalid_score": "--invalid-score",
    "verifier": "--verifier",
}
"""How the server names the settings in its refusals."""


def _preview(labels: Sequence[Any] | None, i: int) -> str:
    text = repr(labels[i]) if labels is not None else "no labels"
    return text if len(text) <= 60 else text[:57] + "..."


class OpenRLHFScoring:
    """The shared core of file mode and HTTP mode: requests in, lists out.

    Args:
        verifier: Default verifier for labels that are plain references.
        spec: Its settings.
        invalid_score: Value for an unjudged rollout that has no group to take a mean from
            (NaN unless told; see the module docstring).
        eos_tokens: Trailing special tokens removed from each response.
        components: Component names logged in ``extra_logs`` (a fixed set; default none).
        group_size: Rollouts per prompt (``--rollout.n_samples_per_prompt``): unjudged
            rollouts wait for their group across requests and take its judged mean.
        group_wait_s: Longest wait for a group to fill.

    Raises:
        ValueError: bad component names, ``group_size`` < 1 or ``group_wait_s`` < 0, a
            non-finite ``invalid_score``.
    """

    def __init__(
        self,
        *,
        verifier: str | None = None,
        spec: Mapping[str, Any] | None = None,
        invalid_score: float | None = None,
        eos_tokens: Sequence[str] = DEFAULT_EOS_TOKENS,
        components: Sequence[str] | None = None,
        group_size: int | None = None,
        group_wait_s: float = 60.0,
    ) -> None:
        if invalid_score is not None and not math.isfinite(invalid_score):
            raise InvalidSettings(
                [
                    f"invalid_score={invalid_score!r}: must be a finite number (a NaN or inf "
                    "reward voids OpenRLHF's whole iteration); leave it unset and set the group "
                    "size for zero-advantage abstains"
                ]
            )
        self.defaults = TaskDefaults(verifier=verifier, spec=spec)
        self.invalid_score = invalid_score
        self.group_size = group_size
        self.eos_tokens = tuple(eos_tokens)
        self.components = tuple(components or ())
        self.keys = extra_keys(self.components)
        self.groups = GroupBaseline(group_size, wait_s=group_wait_s) if group_size else None

    def problem(self, flags: Mapping[str, str] = _FILE_FLAGS) -> str | None:
        """Why this configuration cannot hand OpenRLHF a zero-gradient abstain, or ``None``.

        ``flags`` names the settings in the caller's terms (environment variables for the
        file, command-line flags for the server).
        """
        if self.group_size is None and self.invalid_score is None:
            return (
                f"no group size: set {flags['group_size']} to --rollout.n_samples_per_prompt "
                "so an unjudged rollout gets its group's judged mean (zero advantage), or set "
                f"{flags['invalid_score']} to a finite value to train on instead (NaN voids "
                "the iteration)"
            )
        if self.group_size == 1 and self.invalid_score is None:
            return (
                f"{flags['group_size']}=1: a group of one has no judged peer to give an "
                f"unjudged rollout zero advantage; set {flags['invalid_score']} to a finite "
                "value to train on instead"
            )
        return None

    def items(
        self, request: OpenRLHFRequest, flags: Mapping[str, str] = _FILE_FLAGS
    ) -> list[dict[str, Any] | Result]:
        """Trajectories (or ``bad_input`` results) for a request.

        Raises:
            ValueError: ``prompts``/``labels`` do not match ``query`` in length.
            InvalidSettings: a plain-reference label and no default verifier (a
                ``ValueError`` too).
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
            if task is MISSING and self.defaults.verifier is None:
                # The label column is the dataset's, not the model's: every such rollout
                # would be unjudged, so this is a configuration error, never an abstain.
                raise InvalidSettings(
                    [
                        f"label {i} is a plain reference ({_preview(request.labels, i)}) but no "
                        f"default verifier is set; set {flags['verifier']}, or make the labels "
                        "task JSON with a 'verifier' or 'checks' key"
                    ]
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

    @staticmethod
    def group_keys(request: OpenRLHFRequest) -> list[Hashable]:
        """A rollout's group: the rollouts of the same prompt (OpenRLHF samples n per prompt).

        The prompt alone, not prompt and label: a rollout whose label could not be read is
        still one of its prompt's n samples. Without prompts, the query is the key.
        """
        if request.prompts is None:
            return list(request.query)
        return list(request.prompts)

    async def values(self, request: OpenRLHFRequest, results: Sequence[Result]) -> list[float]:
        """What ``rewards``/``scores`` carry: the reward, or the group's judged mean."""
        rewards = [result_reward(r) for r in results]
        keys = self.group_keys(request)
        if self.groups is not None:
            return await self.groups.settle(keys, rewards)
        judged: dict[Hashable, list[float]] = {}
        for key, reward in zip(keys, rewards, strict=True):
            if reward is not None:
                judged.setdefault(key, []).append(reward)
        out: list[float] = []
        for key, reward in zip(keys, rewards, strict=True):
            if reward is not None:
                out.append(float(reward))
            elif key in judged:
                out.append(sum(judged[key]) / len(judged[key]))
            elif self.invalid_score is not None:
                out.append(self.invalid_score)
            else:  # unreachable when problem() was checked: never hand over a NaN
                raise InvalidSettings([self.problem() or "no value for an unjudged rollout"])
        return out

    def response(self, results: Sequence[Result], values: Sequence[float]) -> OpenRLHFResponse:
        """The protocol response for ``results`` with the trainer values from :meth:`values`."""
        columns = extra_columns(results, self.components)
        logs: dict[str, list[float]] = {key: columns[key] for key in self.keys}
        rewards = [float(v) for v in values]
        return OpenRLHFResponse(rewards=rewards, scores=list(rewards), extra_logs=logs)

    async def score(self, request: OpenRLHFRequest, results: Sequence[Result]) -> OpenRLHFResponse:
        """:meth:`values` then :meth:`response`."""
        return self.response(results, await self.values(request, results))


class _ScoringOptions(TypedDict, total=False):
    """:class:`OpenRLHFScoring`'s arguments, as :func:`make_reward_func` takes them."""

    verifier: str | None
    spec: Mapping[str, Any] | None
    invalid_score: float | None
    eos_tokens: Sequence[str]
    components: Sequence[str] | None
    group_size: int | None
    group_wait_s: float


def make_reward_func(
    *,
    settings: EngineSettings | None = None,
    machine_concurrency: MachineConcurrency = "auto",
    machine_key: str = "default",
    **options: Unpack[_ScoringOptions],
) -> Callable[..., dict[str, Any]]:
    """A ``reward_func(queries, prompts, labels, **kwargs)`` for OpenRLHF's file mode.

    The returned function is thread-safe (OpenRLHF calls it through ``asyncio.to_thread``,
    one rollout per call) and scores through one long-lived engine; the group rendezvous runs
    on that engine's loop, so only an unjudged rollout's thread waits for its group.

    Args:
        settings: Engine settings (default: ``EngineSettings.from_env()``).
        machine_concurrency: The machine-wide limit (see
            :data:`verifiers.rl_adapters.MachineConcurrency`).
        machine_key: Names the machine-wide budget.
        **options: :class:`OpenRLHFScoring`'s arguments (``verifier``, ``spec``,
            ``invalid_score``, ``eos_tokens``, ``components``, ``group_size``,
            ``group_wait_s``), with its defaults.

    Raises:
        InvalidSettings: a configuration that could only hand OpenRLHF a NaN for an unjudged
            rollout (no ``group_size`` and no finite ``invalid_score``; ``group_size=1``
            without one; see the module docstring). A ``ValueError`` too.
    """
    scoring = OpenRLHFScoring(**options)
    problem = scoring.problem()
    if problem is not None:
        raise InvalidSettings([f"OpenRLHF reward function: {problem}"])
    scorer = Scorer(settings, machine_concurrency=machine_concurrency, machine_key=machine_key)

    async def run(
        request: OpenRLHFRequest, items: list[dict[str, Any] | Result]
    ) -> OpenRLHFResponse:
        return await scoring.score(request, await scorer.score_async(items))

    def reward_func(
        queries: list[str], prompts: list[str], labels: list[Any] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        import torch

        request = OpenRLHFRequest(query=list(queries), prompts=list(prompts), labels=labels)
        response = scorer.run(run(request, scoring.items(request)))
        rewards = torch.tensor(response.rewards, dtype=torch.float32)
        return {
            "rewards": rewards,
            "scores": rewards.clone(),
            "extra_logs": {
                k: torch.tensor(v, dtype=torch.float32) for k, v in response.extra_logs.items()
            },
        }

    reward_func.scorer = scorer  # type: ignore[attr-defined]
    reward_func.scoring = scoring  # type: ignore[attr-defined]
    return reward_func


_env_func: Callable[..., dict[str, Any]] | None = None
_env_lock = threading.Lock()

ENV_SETTINGS = (
    "VERIFIERS_VERIFIER",
    "VERIFIERS_SPEC",
    "VERIFIERS_COMPONENTS",
    "VERIFIERS_GROUP_SIZE",
    "VERIFIERS_GROUP_WAIT_S",
    "VERIFIERS_INVALID_SCORE",
)
"""The environment variables file mode reads (plus the engine's ``VERIFIERS_*``)."""


def _env_number(name: str, kind: type[int] | type[float], default: Any) -> Any:
    raw = (env(name) or "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.__name__}") from None


def env_reward_func() -> Callable[..., dict[str, Any]]:
    """The file-mode function configured from the environment (see :func:`reward_func`).

    Raises:
        ValueError: a malformed variable, naming it.
    """
    spec_text = env("VERIFIERS_SPEC")
    try:
        spec = json.loads(spec_text) if spec_text else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"VERIFIERS_SPEC is not JSON: {exc.msg} at char {exc.pos}") from None
    return make_reward_func(
        verifier=env("VERIFIERS_VERIFIER") or None,
        spec=spec,
        components=parse_components(env("VERIFIERS_COMPONENTS"), "VERIFIERS_COMPONENTS"),
        group_size=_env_number("VERIFIERS_GROUP_SIZE", int, None),
        group_wait_s=_env_number("VERIFIERS_GROUP_WAIT_S", float, 60.0),
        invalid_score=_env_number("VERIFIERS_INVALID_SCORE", float, None),
    )


def reward_func(
    queries: list[str], prompts: list[str], labels: list[Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """File-mode entry point configured from the environment.

    ``VERIFIERS_VERIFIER`` (default verifier), ``VERIFIERS_SPEC`` (its spec, JSON),
    ``VERIFIERS_COMPONENTS`` (comma-separated component names for ``extra_logs``),
    ``VERIFIERS_GROUP_SIZE`` (``--rollout.n_samples_per_prompt``: zero-advantage abstains),
    ``VERIFIERS_GROUP_WAIT_S`` (default 60), ``VERIFIERS_INVALID_SCORE`` (a finite value for
    unjudged rollouts; needed when there is no group size), plus the
    engine's ``VERIFIERS_*`` settings.
    """
    global _env_func
    # OpenRLHF calls this from many threads at once (asyncio.to_thread, one rollout per call):
    # without the lock each first caller would build its own engine and group rendezvous, and
    # an unjudged rollout would wait for group-mates that report to another instance.
    with _env_lock:
        if _env_func is None:
            _env_func = env_reward_func()
        func = _env_func
    return func(queries, prompts, labels, **kwargs)
