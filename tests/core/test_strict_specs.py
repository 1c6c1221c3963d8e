"""Strict specs and settings (issue 19 item 1).

An unknown key in ``task.spec`` is ``bad_input`` naming the key and the closest valid one, at
any depth and for every registered verifier; forward compatibility goes through the
reserved ``version`` key. Invalid engine settings print one line each, with the flag or
variable, the value and the valid range.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import verifiers
from verifiers.errors import InvalidSettings
from verifiers.registry import get_verifier, installed_verifiers

SCRIPT = Path(sys.executable).parent / "verifiers"
REPO = Path(__file__).resolve().parents[2]


def _error(verifier: str, spec: dict[str, Any], reference: Any = "4") -> str:
    item = {"completion": "4", "task": {"verifier": verifier, "spec": spec, "reference": reference}}
    [result] = verifiers.score([item], sandbox="none", workers=1)
    assert result.status == "error" and result.reward is None, result
    assert result.error is not None and result.error.kind == "bad_input"
    return result.error.message


@pytest.mark.parametrize(
    ("verifier", "spec", "expected"),
    [
        ("answer.numeric", {"rel_tool": 0.1}, "unknown key 'rel_tool' (did you mean 'rel_tol'?)"),
        ("answer.exact", {"ignore_cases": True}, "did you mean 'ignore_case'?"),
        ("answer.math", {"extarct": "boxed"}, "did you mean 'extract'?"),
        ("format.regex", {"patterns": [{"pattern": "x", "max_cuont": 0}]}, "'max_count'"),
        ("mesh.constraints", {"constraints": {"volumee": 1}}, "did you mean 'volume'?"),
        (
            "mesh.constraints",
            {"constraints": {"extents": {"target": [1, 1, 1], "rel_tl": 0.1}}},
            "did you mean 'rel_tol'?",
        ),
        (
            "code.tests",
            {"tests": {"kind": "io", "cases": [{"stdin": "", "stdout": "1", "stdni": ""}]}},
            "did you mean 'stdin'?",
        ),
        ("render.blender", {"expect": {"min_light": 1}}, "did you mean 'min_lights'?"),
        ("finance.formula", {"documnet": {"pdf": "x.pdf"}}, "did you mean 'document'?"),
    ],
)
def test_unknown_spec_key_is_bad_input_naming_the_closest(
    verifier: str, spec: dict[str, Any], expected: str
) -> None:
    message = _error(verifier, spec)
    assert expected in message, message
    assert verifier in message


def test_a_key_like_nothing_lists_the_valid_keys() -> None:
    message = _error("answer.numeric", {"zzzz": 1})
    assert "unknown key 'zzzz' (valid keys: abs_tol, extract," in message


def test_every_registered_verifier_rejects_unknown_keys() -> None:
    names = installed_verifiers()
    assert {"answer.numeric", "code.tests", "mesh.constraints", "render.blender"} <= set(names)
    for name in names:
        cls = get_verifier(name)
        assert cls.Spec.model_config.get("extra") == "forbid", name
        with pytest.raises(ValueError, match="no_such_setting"):
            cls.Spec.model_validate({"no_such_setting": 1})


def test_version_newer_than_installed_is_refused_with_an_upgrade_hint() -> None:
    message = _error("answer.numeric", {"version": 2, "rel_tol": 0.1})
    assert "written for answer.numeric@2, but answer.numeric@1 is installed" in message
    assert "upgrade" in message
    assert "version must be a positive integer" in _error("answer.numeric", {"version": "x"})


def test_version_at_or_below_installed_is_read() -> None:
    for version in (1, "1"):
        item = {
            "completion": "4",
            "task": {"verifier": "answer.numeric", "spec": {"version": version}, "reference": 4},
        }
        [result] = verifiers.score([item])
        assert result.status == "pass", result


def test_bad_value_names_value_and_range() -> None:
    message = _error("answer.numeric", {"rel_tol": -1})
    assert "task.spec.rel_tol: got -1" in message and "(expected a number >= 0)" in message


def test_every_spec_in_the_corpora_still_validates() -> None:
    from verifiers.errors import VerifierError
    from verifiers.protocol import parse_spec

    checked = 0
    problems = []
    for path in sorted((REPO / "datasets").rglob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            task = row.get("task") if isinstance(row, dict) else None
            if not isinstance(task, dict):
                continue
            meta = row.get("metadata") or {}
            expected = [meta.get("expected"), meta.get("expect"), row.get("expected")]
            for sub in task.get("checks") or [task]:
                if not isinstance(sub, dict) or not isinstance(sub.get("verifier"), str):
                    continue
                try:
                    cls = get_verifier(sub["verifier"])
                except VerifierError:
                    continue
                checked += 1
                try:
                    parse_spec(cls, sub.get("spec"))
                except VerifierError as exc:
                    if not (_expects_bad_input(expected) or meta.get("bad_spec")):
                        problems.append(f"{path.relative_to(REPO)}:{number}: {exc}")
    assert checked > 300
    assert not problems, "\n".join(problems)


def _expects_bad_input(expected: object) -> bool:
    text = json.dumps(expected)
    return "bad_input" in text or "error" in text


# -- settings ------------------------------------------------------------------------------


def test_settings_errors_are_one_line_each_with_value_and_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERIFIERS_SANDBOX", "bogus")
    with pytest.raises(InvalidSettings) as caught:
        verifiers.EngineSettings.from_env(
            labels={"timeout_s": "--timeout"}, concurrency=0, timeout_s=-1
        )
    concurrency, timeout, sandbox = caught.value.problems
    assert concurrency == "invalid setting concurrency=0: must be an integer >= 1"
    assert timeout == "invalid setting --timeout=-1: must be a number > 0"
    assert sandbox.startswith("invalid setting VERIFIERS_SANDBOX='bogus': ")
    assert all(name in sandbox for name in ("auto", "docker", "local", "none")), sandbox
    assert isinstance(caught.value, ValueError)


def test_cli_prints_one_line_per_invalid_setting(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"completion": "4", "task": {"verifier": "answer.exact", "reference": "4"}}\n')
    env = {**os.environ, "VERIFIERS_SANDBOX": "bogus", "VERIFIERS_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [str(SCRIPT), "score", str(src), "--concurrency", "0", "--timeout", "-1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[:2] == [
        "verifiers: error: invalid setting --concurrency=0: must be an integer >= 1",
        "verifiers: error: invalid setting --timeout=-1.0: must be a number > 0",
    ]
    assert len(lines) == 3, lines
    assert lines[2].startswith("verifiers: error: invalid setting VERIFIERS_SANDBOX='bogus': ")
    assert "docker" in lines[2] and "local" in lines[2]
    assert not (tmp_path / "in.scored.jsonl").exists()
