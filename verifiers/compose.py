"""Combining several checks (``task.checks``) into one result.

Rules, in order:

1. A ``required`` check that failed gates the reward to 0 (``fail``), and so does any failed
   check under ``combine="all"``: the verdict is then certain whatever the other checks say.
   This comes first so that a model cannot dodge a failing gate by making another check
   error out (an abstain instead of the 0 it earned).
2. Otherwise any check that could not judge (``error``) makes the whole item ``error``: a
   partial score over the checks that did run would be a fake number.
3. ``skipped`` checks abstain: they drop out of the mean. All skipped -> ``skipped``.
4. ``task.combine``, the task's combination rule: ``mean`` (weighted by ``weight``), ``min``,
   or ``all`` (1 only if every check passed, else 0).

A check the model's output broke (its verifier raised :class:`~verifiers.errors.InvalidOutput`)
arrives here as a ``fail`` with reward 0, never as an ``error``: the engine's error boundary
converts it before composition, so rule 1 gates it, ``min`` takes its 0 and ``mean`` counts
it. Only a failure of a verifier or of the machine reaches rule 2.

Names: ``Task.combine`` is the *rule* (a field of the data contract, ``"mean"``/``"min"``/
``"all"``); :func:`fold_checks` is the *function* that applies it. The function was called
``combine`` too, one name for two concepts; ``combine`` stays as an alias of
:func:`fold_checks` so old imports keep working.

Components keep their names: ``<check name>`` holds that check's reward and
``<check name>/<component>`` each of its own components, so trainers can log them.
"""

from __future__ import annotations

from collections.abc import Sequence

from .types import Check, ErrorInfo, Result, Task

__all__ = ["check_names", "combine", "fold_checks"]


def check_names(checks: Sequence[Check]) -> list[str]:
    """Unique component names: ``check.name`` or the verifier name, suffixed on clashes.

    Example:
        >>> from verifiers import Check
        >>> check_names([Check(verifier="a"), Check(verifier="a"), Check(verifier="b", name="c")])
        ['a', 'a#2', 'c']
    """
    names: list[str] = []
    seen: dict[str, int] = {}
    for check in checks:
        base = check.name or check.verifier
        count = seen.get(base, 0)
        seen[base] = count + 1
        names.append(base if count == 0 else f"{base}#{count + 1}")
    return names


def fold_checks(task: Task, results: Sequence[Result]) -> Result:
    """Fold per-check results into one by ``task.combine``, following the module's rules.

    ``results`` are in ``task.checks`` order. The result is unstamped: the engine's
    ``_stamp`` gives it its id, ``verifier="compose"`` and duration.
    """
    checks = task.checks or []
    names = check_names(checks)
    components: dict[str, float] = {}
    feedback: list[str] = []
    details: dict[str, object] = {"checks": {}}
    per_check: dict[str, object] = {}
    for name, result in zip(names, results, strict=True):
        per_check[name] = {"status": result.status, "reward": result.reward}
        if result.reward is not None:
            components[name] = result.reward
        for sub, value in result.components.items():
            components[f"{name}/{sub}"] = value
        if result.feedback:
            feedback.append(f"[{name}] {result.feedback}")
    details["checks"] = per_check

    decisive = [
        name
        for check, name, result in zip(checks, names, results, strict=True)
        if result.status == "fail" and (check.required or task.combine == "all")
    ]
    if decisive:
        what = "required check(s)" if task.combine != "all" else "check(s)"
        feedback.insert(0, f"{what} not passed: {', '.join(decisive)}")
        return Result(
            reward=0.0,
            status="fail",
            components=components,
            feedback="\n".join(feedback),
            details=details,
        )

    errors = [(n, r) for n, r in zip(names, results, strict=True) if r.status == "error"]
    if errors:
        name, first = errors[0]
        assert first.error is not None
        return Result(
            reward=None,
            status="error",
            components=components,
            feedback="\n".join(feedback),
            details=details,
            error=ErrorInfo(
                kind=first.error.kind,
                message=f"check {name!r}: {first.error.message}",
                attempts=first.error.attempts,
            ),
        )

    scored = [
        (check, name, result)
        for check, name, result in zip(checks, names, results, strict=True)
        if result.status in ("pass", "fail")
    ]
    if not scored:
        return Result(reward=None, status="skipped", feedback="\n".join(feedback), details=details)

    rewards = [float(result.reward or 0.0) for _, _, result in scored]
    if task.combine == "min":
        reward = min(rewards)
    elif task.combine == "all":
        reward = 1.0 if all(result.status == "pass" for _, _, result in scored) else 0.0
    else:
        total = sum(check.weight for check, _, _ in scored)
        if total <= 0:
            reward = sum(rewards) / len(rewards)
        else:
            reward = sum(c.weight * r for (c, _, _), r in zip(scored, rewards, strict=True)) / total
    all_passed = all(result.status == "pass" for _, _, result in scored)
    return Result(
        reward=reward,
        status="pass" if all_passed else "fail",
        components=components,
        feedback="\n".join(feedback),
        details=details,
    )


combine = fold_checks
"""The old name of :func:`fold_checks` (it clashed with the rule ``Task.combine``); kept so
``from verifiers.compose import combine`` keeps working."""
