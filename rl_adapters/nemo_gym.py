"""NeMo-Gym's resources-server ``POST /verify`` on ``verifiers serve``.

NeMo-Gym (NVIDIA-NeMo/Gym) runs an agent against a model and then posts the finished rollout
to the resources server's ``/verify``: the body is a ``BaseVerifyRequest``, that is
``responses_create_params`` (the OpenAI Responses request: ``input`` is a string or a list of
messages) and ``response`` (the Responses API object: ``output`` is a list of items, the
assistant's text in ``message`` items as ``output_text`` parts), plus whatever fields the
dataset row carried. The reply is a ``BaseVerifyResponse``: the request echoed, ``reward``,
and since 2026 ``mask_sample`` (the reward is not a valid measurement: the environment or its
infrastructure failed), ``failure_kind`` (a low-cardinality name) and ``failure_reason``.

The task of a rollout is read from the body like every other adapter reads a row: a ``task``
field (an object or a JSON string), or ``verifier``/``spec``/``reference`` fields, or the
server's default verifier (``--verifier``) with ``reference`` (or NeMo-Gym's own
``expected_answer``) as the reference.

**An abstain never reaches NeMo-Gym as 0.** A result the verifier could not judge (``error``
or ``skipped``) is answered with ``reward: null``, ``mask_sample: true``, ``failure_kind``
(``provider_unavailable`` for infra, ``verifier_error`` for a broken verifier, else
``verifiers:<kind>``) and the error message as ``failure_reason``. NeMo-Gym's own
``BaseVerifyResponse`` declares ``reward: float``, so a client that validates the reply
refuses it loudly instead of reading a 0, and one that reads ``mask_sample`` leaves the
sample out; a 0.0 with ``mask_sample`` was rejected because any consumer that ignores the
flag (older NeMo-Gym, a hand-written collector) would train on it as a wrong answer. A body
that is not a rollout at all (no ``response``, or no way to find its task) is HTTP 422/400,
as FastAPI answers any malformed request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers.types import Result

from ._rows import MISSING, TaskDefaults, make_item, result_reward

__all__ = ["completion_text", "failure_kind", "prompt_of", "verify_item", "verify_reply"]

_FAILURE_KINDS = {"infra": "provider_unavailable", "verifier": "verifier_error"}
_REASON_CHARS = 2000


def completion_text(response: Mapping[str, Any]) -> str:
    """The assistant's text of a Responses API object: every ``output_text`` part of its
    ``message`` items, in order, joined by newlines (reasoning and tool-call items are not
    the answer and are left out).

    Raises:
        ValueError: ``response.output`` is missing or not a list (names the field).
    """
    output = response.get("output")
    if not isinstance(output, list):
        raise ValueError("'response.output' must be a list of Responses API output items")
    parts: list[str] = []
    for item in output:
        if not isinstance(item, Mapping) or item.get("type", "message") != "message":
            continue
        if item.get("role", "assistant") != "assistant":
            continue
        content = item.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            if isinstance(part, Mapping) and part.get("type") == "output_text":
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return "\n".join(parts)


def prompt_of(params: Mapping[str, Any]) -> str | list[dict[str, str]] | None:
    """The prompt of ``responses_create_params``: its ``input`` as text or chat messages."""
    value = params.get("input")
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return None
    messages: list[dict[str, str]] = []
    for message in value:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            continue
        content = message.get("content")
        if isinstance(content, list):  # input_text parts
            content = "\n".join(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": content})
    return messages or None


def verify_item(body: Mapping[str, Any], defaults: TaskDefaults) -> dict[str, Any] | Result:
    """The trajectory (or a ``bad_input`` result) for one ``/verify`` body.

    Raises:
        ValueError: the body is not a NeMo-Gym rollout (no ``response`` object, no
            ``responses_create_params`` object); the message names the field.
    """
    response = body.get("response")
    if not isinstance(response, Mapping):
        raise ValueError("'response' must be the Responses API object of the rollout")
    params = body.get("responses_create_params")
    if not isinstance(params, Mapping):
        raise ValueError("'responses_create_params' must be the rollout's request object")
    completion = completion_text(response)
    reference = body.get("reference", MISSING)
    if reference is MISSING:
        reference = body.get("expected_answer", MISSING)
    row_id = body.get("id", response.get("id"))
    return make_item(
        completion=completion,
        prompt=prompt_of(params),
        task=body.get("task", MISSING),
        verifier=body.get("verifier", MISSING),
        spec=body.get("spec", MISSING),
        reference=reference,
        id=row_id if isinstance(row_id, str | int) else None,
        defaults=defaults,
    )


def failure_kind(result: Result) -> str:
    """NeMo-Gym's ``failure_kind`` for an unjudged result (its shared vocabulary where one
    fits, else the namespaced ``verifiers:<kind>``)."""
    if result.status == "skipped" or result.error is None:
        return "verifiers:skipped"
    return _FAILURE_KINDS.get(result.error.kind, f"verifiers:{result.error.kind}")


def verify_reply(body: Mapping[str, Any], result: Result) -> dict[str, Any]:
    """The ``BaseVerifyResponse`` for ``body``: the request echoed, the reward, and for an
    abstain ``reward: null`` with ``mask_sample: true`` (module docstring)."""
    reply = {k: v for k, v in body.items() if k not in _REPLY_KEYS}
    reward = result_reward(result)
    reply["reward"] = reward
    reply["mask_sample"] = reward is None
    if reward is None:
        reason = result.error.message if result.error is not None else result.feedback
        reply["failure_kind"] = failure_kind(result)
        reply["failure_reason"] = (reason or result.status)[:_REASON_CHARS]
    else:
        reply["failure_kind"] = None
        reply["failure_reason"] = None
    reply["verifiers"] = {
        "status": result.status,
        "components": dict(result.components),
        "feedback": result.feedback,
        "verifier": result.verifier,
        "error": None if result.error is None else result.error.model_dump(),
    }
    return reply


_REPLY_KEYS = frozenset({"reward", "mask_sample", "failure_kind", "failure_reason", "verifiers"})
