"""The ``code.workspace`` spec: starting tree, setup, hidden tests, SWE-bench style selection."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verifiers.protocol import Spec

from ._tree import RESERVED_DIR

__all__ = ["IoCheck", "WorkspaceSpec"]


class IoCheck(BaseModel):
    """One command run on the final tree; its stdout is compared on the host."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Shown as the test's name (under the ``public`` feedback policy only when public)."""
    argv: list[str] = Field(min_length=1)
    """The command (argv, never a shell line), run in the tree's root."""
    stdin: str = ""
    stdout: str
    """Expected output; it never enters the sandbox."""
    compare: Literal["exact", "lines", "tokens", "float"] = "lines"
    """As ``code.tests``' io kind (``domains/code``'s ``compare_output``)."""


class WorkspaceSpec(Spec):
    """Settings of ``code.workspace`` (see docs/episodes.md for the task format)."""

    runtime: str = "python"
    """Sandbox runtime of the workspace (``sandbox/images/<name>/runtime.toml``)."""
    files: dict[str, str] = Field(default_factory=dict)
    """The starting tree: path -> text, written before the setup commands."""
    setup: list[list[str]] = Field(default_factory=list)
    """Trusted commands (argv lists; the task's author may write ``["sh", "-c", "..."]``) run
    in the tree after its files are written, in the episode and again on re-verification. A
    failing setup is a broken task (``bad_input``), never the model's fail."""
    tests: dict[str, str] = Field(default_factory=dict)
    """Hidden pytest files: path -> source. Never in the episode's sandbox; copied read-only
    into the verification sandbox after the agent's files, over anything of the same name."""
    io: list[IoCheck] = Field(default_factory=list)
    """Hidden command checks (each counts as one test)."""
    fail_to_pass: list[str] | None = None
    """Test ids (``tests/test_x.py::test_y`` or an io check's ``io::<name>``) the fix must make
    pass; the reward is the share of them that pass. Default: every hidden test."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """Test ids that must keep passing: if any fails, the reward is 0."""
    public_tests: bool = False
    """The hidden tests may be named and quoted in feedback (the ``public`` feedback policy
    then shows failing test names and messages)."""
    timeout_s: float = Field(default=60.0, gt=0, le=1800)
    """Wall-clock limit for setup, tests and io checks together."""
    memory_mb: int = Field(default=1024, ge=64, le=16384)

    @field_validator("files", "tests")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or not path or parts[0] == RESERVED_DIR:
                raise ValueError(
                    f"path {path!r} must be relative, inside the tree, not in .verifiers/"
                )
        return value

    @model_validator(mode="after")
    def _has_tests(self) -> Self:
        if not self.tests and not self.io:
            raise ValueError("a workspace task needs hidden 'tests' (pytest files) or 'io' checks")
        return self
