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
# _EXPORTS is the one list of public names (name -> module); `__all__` is made from it. The
# TYPE_CHECKING imports below mirror it for static tools, which cannot run `__getattr__`
# (tests/core/test_public_api_root.py checks that the two agree).
_EXPORTS: dict[str, str] = {
    "VerifierContext": "context",
    "Engine": "engine",
    "EngineSettings": "engine",
    "score": "engine",
    "score_async": "engine",
    "SyncEngine": "_sync",
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

if TYPE_CHECKING:  # `X as X`: an explicit re-export for mypy --strict
    from ._sync import (
        SyncEngine as SyncEngine,
    )
    from .context import (
        VerifierContext as VerifierContext,
    )
    from .engine import (
        Engine as Engine,
    )
    from .engine import (
        EngineSettings as EngineSettings,
    )
    from .engine import (
        score as score,
    )
    from .engine import (
        score_async as score_async,
    )
    from .episode import (
        Episode as Episode,
    )
    from .episode import (
        EpisodeSettings as EpisodeSettings,
    )
    from .episode import (
        Step as Step,
    )
    from .episode import (
        SyncEpisode as SyncEpisode,
    )
    from .episode import (
        ToolRefused as ToolRefused,
    )
    from .errors import (
        BadInput as BadInput,
    )
    from .errors import (
        InfraError as InfraError,
    )
    from .errors import (
        InvalidOutput as InvalidOutput,
    )
    from .errors import (
        MissingDependency as MissingDependency,
    )
    from .errors import (
        ResourceExhausted as ResourceExhausted,
    )
    from .errors import (
        SandboxUnavailable as SandboxUnavailable,
    )
    from .errors import (
        UnknownVerifier as UnknownVerifier,
    )
    from .errors import (
        VerifierError as VerifierError,
    )
    from .errors import (
        VerifierTimeout as VerifierTimeout,
    )
    from .protocol import (
        InlineVerifier as InlineVerifier,
    )
    from .protocol import (
        Spec as Spec,
    )
    from .protocol import (
        Verifier as Verifier,
    )
    from .registry import (
        get_verifier as get_verifier,
    )
    from .registry import (
        installed_verifiers as installed_verifiers,
    )
    from .registry import (
        register as register,
    )
    from .text import (
        completion_text as completion_text,
    )
    from .text import (
        last_code_block as last_code_block,
    )
    from .text import (
        prompt_text as prompt_text,
    )
    from .types import (
        Artifact as Artifact,
    )
    from .types import (
        Check as Check,
    )
    from .types import (
        ErrorInfo as ErrorInfo,
    )
    from .types import (
        ErrorKind as ErrorKind,
    )
    from .types import (
        Message as Message,
    )
    from .types import (
        Result as Result,
    )
    from .types import (
        Status as Status,
    )
    from .types import (
        Task as Task,
    )
    from .types import (
        Trajectory as Trajectory,
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

__all__ = sorted([*_EXPORTS, "__version__"])
