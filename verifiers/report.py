"""``verifiers report``: a self-contained HTML page of plots from a scored file.

Plots (matplotlib PNGs embedded as base64, so the page is one file to share): reward
histogram per verifier, status breakdown per verifier, latency distribution. The scored file
is streamed; rewards and latencies are reservoir-sampled, so memory stays bounded.
"""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

from .cli._summary import Reservoir, Summary
from .errors import BadInput, MissingDependency
from .io import read_results

__all__ = ["build_report", "write_report"]

_STATUS_COLORS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#f9a825", "skipped": "#78909c"}


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _plots(summary: Summary, latency_ms: Reservoir) -> list[tuple[str, str]]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("matplotlib", "all") from None
    images: list[tuple[str, str]] = []
    names = sorted(summary.verifiers)

    rewarded = [n for n in names if summary.verifiers[n].rewards.values]
    if rewarded:
        fig, axes = plt.subplots(len(rewarded), 1, figsize=(7, 2.4 * len(rewarded)), squeeze=False)
        for ax, name in zip(axes[:, 0], rewarded, strict=True):
            values = list(summary.verifiers[name].rewards.values)
            span = (min(0.0, min(values)), max(1.0, max(values)))  # rewards share one axis
            ax.hist(values, bins=20, range=span, color="#1565c0")
            ax.set_xlim(*span)
            ax.set_title(f"reward: {name} (n={summary.verifiers[name].rewarded:,})")
            ax.set_ylabel("count")
        fig.tight_layout()
        images.append(("Reward histogram per verifier", _png(fig)))
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * max(1, len(names))))
    left = [0.0] * len(names)
    for status, color in _STATUS_COLORS.items():
        widths = [float(summary.verifiers[n].statuses.get(status, 0)) for n in names]
        ax.barh(names, widths, left=left, color=color, label=status)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("results")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("status breakdown")
    fig.tight_layout()
    images.append(("Status breakdown", _png(fig)))
    plt.close(fig)

    if latency_ms.values:
        fig, ax = plt.subplots(figsize=(7, 2.8))
        import numpy as np

        values = np.maximum(np.asarray(latency_ms.values), 1e-3)
        lo, hi = float(values.min()), float(values.max())
        bins: list[float] | int = np.geomspace(lo, hi * 1.0001, 40).tolist() if hi > lo else 1
        ax.hist(values, bins=bins, color="#6a1b9a")
        ax.set_xscale("log")
        ax.set_xlabel("latency per item (ms, log scale)")
        ax.set_ylabel("count")
        ax.set_title("latency distribution")
        fig.tight_layout()
        images.append(("Latency distribution", _png(fig)))
        plt.close(fig)
    return images


def build_report(scored: Path) -> str:
    """The HTML report for a scored file.

    Raises:
        BadInput: the file is missing, a directory, or holds no results.
        MissingDependency: matplotlib is not installed.
    """
    summary = Summary()
    latency_ms = Reservoir()
    for result in read_results(scored):
        summary.add(result)
        if not result.cached and (result.error is None or result.error.kind != "bad_input"):
            latency_ms.add(result.duration_s * 1000)
    if summary.count == 0:
        raise BadInput(f"{str(scored)!r} holds no results", hint="give a file written by score")
    doc = summary.to_json()
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{s['count']:,}</td>"
        + "".join(f"<td>{s['status'].get(k, 0):,}</td>" for k in _STATUS_COLORS)
        + f"<td>{'-' if s['mean_reward'] is None else format(s['mean_reward'], '.3f')}</td></tr>"
        for name, s in doc["verifiers"].items()
    )
    figures = "".join(
        f'<h2>{html.escape(title)}</h2><img alt="{html.escape(title)}" '
        f'src="data:image/png;base64,{data}">'
        for title, data in _plots(summary, latency_ms)
    )
    p50, p95 = doc["latency_s"]["p50"], doc["latency_s"]["p95"]
    latency = "-" if p50 is None else f"p50 {p50 * 1000:.2f} ms, p95 {(p95 or 0.0) * 1000:.2f} ms"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>verifiers report: {html.escape(scored.name)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: .3em .6em; }}
td:not(:first-child) {{ text-align: right; }} img {{ max-width: 100%; }}
</style></head><body>
<h1>verifiers report</h1>
<p>{html.escape(str(scored))}: {summary.count:,} results; latency {latency};
{summary.cached:,} served from cache.</p>
<table><tr><th>verifier</th><th>count</th><th>pass</th><th>fail</th><th>error</th>
<th>skipped</th><th>mean reward</th></tr>{rows}</table>
<h2>Errors by kind</h2><pre>{html.escape(json.dumps(doc["error_kinds"]))}</pre>
{figures}
</body></html>
"""


def write_report(scored: Path, out: Path) -> None:
    """Write :func:`build_report` of ``scored`` to ``out``.

    Raises:
        BadInput: bad input (see :func:`build_report`) or ``out`` not writable.
    """
    text = build_report(scored)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
