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

from .context import VerifierContext
from .engine import Engine, EngineSettings, score, score_async
from .errors import (
    BadInput,
    InfraError,
    MissingDependency,
    SandboxUnavailable,
    UnknownVerifier,
    VerifierError,
    VerifierTimeout,
)
from .protocol import InlineVerifier, Spec, Verifier
from .registry import get_verifier, installed_verifiers, register
from .text import completion_text, last_code_block, prompt_text
from .types import Artifact, Check, ErrorInfo, ErrorKind, Message, Result, Status, Task, Trajectory

__version__ = "0.1.0"

__all__ = [
    "Artifact",
    "BadInput",
    "Check",
    "Engine",
    "EngineSettings",
    "ErrorInfo",
    "ErrorKind",
    "InfraError",
    "InlineVerifier",
    "Message",
    "MissingDependency",
    "Result",
    "SandboxUnavailable",
    "Spec",
    "Status",
    "Task",
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
