"""Shared by the code.tests modules that score corpora on the real backends."""

from __future__ import annotations

import pytest

SANDBOX_MARKS = {"local": pytest.mark.bwrap, "docker": pytest.mark.docker}
"""Each real backend and the opt-in marker it needs (bubblewrap, a Docker engine)."""

REAL_BACKENDS = [pytest.param(name, marks=mark) for name, mark in SANDBOX_MARKS.items()]
"""``params`` of a module fixture that runs once per real backend."""
