"""The per-machine limit the adapters pass to the engine: it lives in the core.

`verifiers._machine` holds the mechanism (slot files held with ``flock``, shared by every
process on the host); the adapters import it from here so that their import path stays.
"""

from __future__ import annotations

from verifiers._machine import MachineSlots, default_lock_dir

__all__ = ["MachineSlots", "default_lock_dir"]
