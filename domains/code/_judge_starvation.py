"""The wall-backstop starvation rule, for the judge's own time limits (stdlib only).

A build or a test that runs into the judge's wall-clock limit (``compile_timeout_s``,
``test_timeout_s``) on a machine that starved it of CPU says nothing about the model. The
judge asks the same rule the sandbox runner asks at the job's backstop (docs/sandbox.md,
"Machine load is never the model's score"), on the same account: the job's CPU account file
the runner names in ``VERIFIERS_JOB_CPU``.

One definition: ``sandbox/_runner.py`` (``STARVATION_RULE``). On the host this module
re-exports it; into the sandbox, ``_judge_boot.pack`` ships the rule's own source, cut from
the runner's file, under this module's name (the runner's file is no module there).
"""

from verifiers.sandbox._runner import STARVE_GRACE, CpuWindow

__all__ = ["STARVE_GRACE", "CpuWindow"]
