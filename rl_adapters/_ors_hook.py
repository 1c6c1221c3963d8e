"""Mounts the Open Reward Standard routes into ``verifiers serve`` when asked to (kept apart
from :mod:`verifiers.rl_adapters.ors` so the server imports without the ``ors`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiers.engine import EngineSettings

__all__ = ["mount_ors"]


def mount_ors(app: Any, engine: EngineSettings | None = None) -> None:
    """Mount the ORS routes (behind the server's own) when ``VERIFIERS_ORS_TASKS`` names a
    JSONL of task rows; else nothing. ``engine``: the server's own engine settings (its
    ``--sandbox``), so the episodes run where the server's scoring runs."""
    from verifiers.settings import env

    if not env("VERIFIERS_ORS_TASKS"):
        return
    from .ors import mount

    mount(app, engine)
