"""Rewrite the explicit package list in pyproject.toml from the source tree (dev helper)."""

import re
from pathlib import Path

repo = Path(__file__).resolve().parent.parent
roots = {
    "verifiers": "verifiers",
    "domains": "verifiers.domains",
    "sandbox": "verifiers.sandbox",
    "rl_adapters": "verifiers.rl_adapters",
}
names = set()
for folder, dotted in roots.items():
    for init in (repo / folder).rglob("__init__.py"):
        if "__pycache__" in init.parts:
            continue
        names.add(".".join([dotted, *init.parent.relative_to(repo / folder).parts]))
names.add("verifiers._data")
for d in (repo / "datasets").rglob("*"):
    if d.is_dir() and "__pycache__" not in d.parts:
        names.add(".".join(["verifiers._data", *d.relative_to(repo / "datasets").parts]))
body = "\n".join(f'    "{n}",' for n in sorted(names))
text = (repo / "pyproject.toml").read_text()
text = re.sub(
    r"packages = \[\n(.*?)\n\]", lambda m: f"packages = [\n{body}\n]", text, count=1, flags=re.S
)
text = text.replace("packages = [\nPACKAGES\n]", f"packages = [\n{body}\n]")
(repo / "pyproject.toml").write_text(text)
print(body)
