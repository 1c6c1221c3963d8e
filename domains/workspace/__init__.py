"""Workspace domain: ``code.workspace`` judges an agent's final file tree with hidden tests.

Importing this package registers the verifier; the sandbox is reached through the verifier
context at run time. See docs/episodes.md for the task format.
"""

from ._spec import IoCheck, WorkspaceSpec
from ._tree import Changes, apply_diff, parse_changes
from ._verifier import Workspace, prepare, snapshot, static_test_ids

__all__ = [
    "Changes",
    "IoCheck",
    "Workspace",
    "WorkspaceSpec",
    "apply_diff",
    "parse_changes",
    "prepare",
    "snapshot",
    "static_test_ids",
]
