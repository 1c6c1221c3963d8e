"""verifiers: rewards and verification for RL post-training.

Score trajectories (``{"completion": ..., "task": {"verifier": ..., "spec": ...}}``) with
pluggable verifiers and get one :class:`Result` each: a reward, a status
(``pass | fail | error | skipped``), named components and feedback for the model.

>>> import verifiers
>>> [r.status for r in verifiers.score([
...     {"completion": "The answer is 4", "task": {"verifier": "answer.numeric", "reference": 4}}
... ])]
['pass']
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._source_tree import install_if_source_checkout

# Imported straight from a source checkout (a REPL at the repository root): map domains/,
# sandbox/ and rl_adapters/ in as the wheel does (see verifiers/_source_tree.py).
install_if_source_checkout(Path(__file__).resolve().parent)

# Public names resolve lazily (PEP 562): `import verifiers` must stay cheap for trainers and
# CLIs that only need one corner of it, and pydantic model construction is most of the cost.
_EXPORTS: dict[str, str] = {
    "VerifierContext": "context",
    "Engine": "engine",
    "EngineSettings": "engine",
    "score": "engine",
    "score_async": "engine",
    "Episode": "episode",
    "EpisodeSettings": "episode",
    "Step": "episode",
    "SyncEpisode": "episode",
    "ToolRefused": "episode",
    "BadInput": "errors",
    "InfraError": "errors",
    "InvalidOutput": "errors",
    "MissingDependency": "errors",
    "ResourceExhausted": "errors",
    "SandboxUnavailable": "errors",
    "UnknownVerifier": "errors",
    "VerifierError": "errors",
    "VerifierTimeout": "errors",
    "InlineVerifier": "protocol",
    "Spec": "protocol",
    "Verifier": "protocol",
    "get_verifier": "registry",
    "installed_verifiers": "registry",
    "register": "registry",
    "completion_text": "text",
    "last_code_block": "text",
    "prompt_text": "text",
    "Artifact": "types",
    "Check": "types",
    "ErrorInfo": "types",
    "ErrorKind": "types",
    "Message": "types",
    "Result": "types",
    "Status": "types",
    "Task": "types",
    "Trajectory": "types",
}

if TYPE_CHECKING:
    from .context import VerifierContext
    from .engine import Engine, EngineSettings, score, score_async
    from .episode import Episode, EpisodeSettings, Step, SyncEpisode, ToolRefused
    from .errors import (
        BadInput,
        InfraError,
        InvalidOutput,
        MissingDependency,
        ResourceExhausted,
        SandboxUnavailable,
        UnknownVerifier,
        VerifierError,
        VerifierTimeout,
    )
    from .protocol import InlineVerifier, Spec, Verifier
    from .registry import get_verifier, installed_verifiers, register
    from .text import completion_text, last_code_block, prompt_text
    from .types import (
        Artifact,
        Check,
        ErrorInfo,
        ErrorKind,
        Message,
        Result,
        Status,
        Task,
        Trajectory,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "BadInput",
    "Check",
    "Engine",
    "EngineSettings",
    "Episode",
    "EpisodeSettings",
    "ErrorInfo",
    "ErrorKind",
    "InfraError",
    "InlineVerifier",
    "InvalidOutput",
    "Message",
    "MissingDependency",
    "ResourceExhausted",
    "Result",
    "SandboxUnavailable",
    "Spec",
    "Status",
    "Step",
    "SyncEpisode",
    "Task",
    "ToolRefused",
    "Trajectory",
    "UnknownVerifier",
    "Verifier",
    "VerifierContext",
    "VerifierError",
    "VerifierTimeout",
    "__version__",
    "completion_text",
    "get_verifier",
    "installed_verifiers",
    "last_code_block",
    "prompt_text",
    "register",
    "score",
    "score_async",
]
