"""The old name of :mod:`verifiers.processes`, kept so existing imports keep working.

``WorkerPool`` is :class:`~verifiers.processes.ProcessPool` (killable processes for CPU-heavy
verification), ``worker_argv`` is :func:`~verifiers.processes.process_argv`.
"""

from __future__ import annotations

from .processes import ProcessPool, process_argv, run_inline

WorkerPool = ProcessPool
worker_argv = process_argv

__all__ = ["WorkerPool", "run_inline", "worker_argv"]
