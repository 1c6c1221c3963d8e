"""``verifiers report``: one self-contained HTML page that answers "which items failed and why".

What it shows, per the questions a user opens it with:

- **Run metadata**: the scored file, its size, how many results, how many came from the cache,
  the ``verifiers`` version, when the page was made.
- **Per verifier**: counts by status as a stacked bar, mean reward, a reward histogram, latency
  percentiles and a latency histogram on a log scale, *each verifier on its own row with its
  own axis*: a 0.1 ms answer check and an 8 s render never share one histogram, and the page
  reads the same for one verifier or fifty (rows, not one crowded chart).
- **Components**: the mean of each named component, per verifier.
- **Errors by kind**: a verifier x kind table of counts.
- **Failures and errors**: a table with the scored file's line number, the input line (errors
  carry it), id, verifier, status, error kind, reward and the feedback or error message;
  filterable by status, verifier, kind and text, paged, and addressable from the URL
  (``report.html#status=error&q=docker``) so a link shows the same rows.

Bounded in size and memory whatever the input: results are streamed; rewards and latencies
are reservoir samples; the table embeds at most :data:`ROWS_PER_STATUS` rows per status
(``fail``, ``error``), each text cut to :data:`TEXT_CHARS`, and the page says how many it left
out. Charts are inline SVG drawn here (no plotting library, no network, no external file).

Everything that came from a scored file is hostile text (feedback is model output): HTML parts
are escaped with :func:`html.escape`; the table's rows travel as JSON inside a
``<script type="application/json">`` block with ``<``, ``>``, ``&`` and U+2028/9 escaped, so no
text can close the block, and the page's script puts them into cells with ``textContent``,
never ``innerHTML``.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import BadInput
from .io import read_results
from .summary import UNKNOWN, Reservoir, VerifierStats
from .types import Result

__all__ = ["build_report", "write_report"]

ROWS_PER_STATUS = 1000
"""Rows of each of ``fail`` and ``error`` embedded in the table, at most (the first ones)."""

TEXT_CHARS = 400
"""Characters of feedback or error message kept per row."""

PAGE_SIZE = 50
"""Rows per page of the table."""

_STATUSES = ("pass", "fail", "error", "skipped")
_COLORS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#f9a825", "skipped": "#78909c"}
_SAMPLE = 20_000


@dataclass
class _Stats(VerifierStats):
    """What the page needs about one verifier.

    The summary's counts, latencies split by cache hits, and component means.
    """

    rewards: Reservoir = field(default_factory=lambda: Reservoir(_SAMPLE))
    latency_ms: Reservoir = field(default_factory=lambda: Reservoir(_SAMPLE))
    cached_latency_ms: Reservoir = field(default_factory=lambda: Reservoir(_SAMPLE))
    component_sum: dict[str, float] = field(default_factory=dict)
    component_n: Counter[str] = field(default_factory=Counter)

    def add(self, result: Result, *, sample_reward: bool = True) -> None:
        super().add(result, sample_reward=sample_reward)
        for name, value in result.components.items():
            if isinstance(value, int | float) and math.isfinite(value):
                self.component_sum[name] = self.component_sum.get(name, 0.0) + float(value)
                self.component_n[name] += 1
        if result.error is not None and result.error.kind == "bad_input":
            return  # rejected before any verifier ran: no latency to speak of
        latency = result.duration_s * 1000
        if not math.isfinite(latency) or latency < 0:
            return
        (self.cached_latency_ms if result.cached else self.latency_ms).add(latency)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"


def _row(number: int, result: Result) -> dict[str, Any]:
    error = result.error
    return {
        "n": number,
        "line": None if error is None else error.line,
        "id": None if result.id is None else _cut(str(result.id))[:200],
        "verifier": _cut(result.verifier or UNKNOWN)[:200],
        "status": result.status,
        "kind": "" if error is None else error.kind,
        "reward": result.reward,
        "text": _cut(error.message if error is not None else result.feedback),
    }


def _collect(scored: Path) -> tuple[dict[str, _Stats], list[dict[str, Any]], Counter[str], int]:
    stats: dict[str, _Stats] = {}
    rows: list[dict[str, Any]] = []
    embedded: Counter[str] = Counter()
    count = 0
    for count, result in enumerate(read_results(scored), start=1):
        name = result.verifier or UNKNOWN
        entry = stats.get(name)
        if entry is None:
            entry = stats[name] = _Stats()
        entry.add(result)
        if result.status in ("fail", "error") and embedded[result.status] < ROWS_PER_STATUS:
            embedded[result.status] += 1
            rows.append(_row(count, result))
    return stats, rows, embedded, count


# -- SVG charts ------------------------------------------------------------------------------


def _bar(statuses: Counter[str], width: int = 150, height: int = 14) -> str:
    total = sum(statuses.values()) or 1
    x = 0.0
    parts = []
    for status in _STATUSES:
        n = statuses.get(status, 0)
        if not n:
            continue
        w = width * n / total
        parts.append(
            f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{_COLORS[status]}">'
            f"<title>{status}: {n:,}</title></rect>"
        )
        x += w
    return (
        f'<svg class="bar" width="{width}" height="{height}" role="img" '
        f'aria-label="status breakdown">{"".join(parts)}</svg>'
    )


def _histogram(
    values: list[float], lo: float, hi: float, *, log: bool, color: str, unit: str
) -> str:
    """A small histogram with its own axis labels (min and max of the range)."""
    width, height, bins = 160, 36, 20
    if not values:
        return '<span class="muted">no data</span>'
    if log:
        lo, hi = math.log10(max(lo, 1e-3)), math.log10(max(hi, 1e-3))
        values = [math.log10(max(v, 1e-3)) for v in values]
    span = hi - lo if hi > lo else 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - lo) / span * bins)))] += 1
    top = max(counts) or 1
    step = width / bins
    rects = []
    for i, n in enumerate(counts):
        if not n:
            continue
        h = max(1.0, height * n / top)
        a, b = lo + span * i / bins, lo + span * (i + 1) / bins
        if log:
            a, b = 10**a, 10**b
        rects.append(
            f'<rect x="{i * step:.2f}" y="{height - h:.2f}" width="{step - 1:.2f}" '
            f'height="{h:.2f}" fill="{color}"><title>{a:.3g}–{b:.3g} {unit}: {n:,}</title></rect>'
        )
    low = 10**lo if log else lo
    high = 10**hi if log else hi
    return (
        f'<svg class="hist" width="{width}" height="{height + 12}" role="img" '
        f'aria-label="histogram">{"".join(rects)}'
        f'<text x="0" y="{height + 11}">{low:.3g}</text>'
        f'<text x="{width}" y="{height + 11}" text-anchor="end">{high:.3g} {unit}'
        f"{' (log)' if log else ''}</text></svg>"
    )


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g} ms" if value < 1000 else f"{value / 1000:.3g} s"


# -- the page --------------------------------------------------------------------------------


def _json_for_script(value: Any) -> str:
    """JSON that cannot end a ``<script>`` block or start markup, whatever its strings hold."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def build_report(scored: Path) -> str:
    """The HTML report for a scored file.

    Raises:
        BadInput: the file is missing, a directory, or holds no results.
    """
    from . import __version__

    stats, rows, embedded, count = _collect(scored)
    if count == 0:
        raise BadInput(f"{str(scored)!r} holds no results", hint="give a file written by score")
    e = html.escape
    names = sorted(stats)
    totals: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    cached = 0
    for s in stats.values():
        totals.update(s.statuses)
        kinds.update(s.error_kinds)
        cached += s.cached

    verifier_rows = []
    for name in names:
        s = stats[name]
        rewards = list(s.rewards.values)
        mean = s.mean_reward
        lo = min([0.0, *rewards]) if rewards else 0.0
        hi = max([1.0, *rewards]) if rewards else 1.0
        # Results served from the cache carry the latency of the run that computed them.
        latency = s.latency_ms if s.latency_ms.values else s.cached_latency_ms
        note = "" if s.latency_ms.values or not s.cached_latency_ms.values else " (cached)"
        lat = list(latency.values)
        verifier_rows.append(
            f"<tr><th scope=row>{e(name)}</th><td>{s.count:,}</td>"
            + "".join(f"<td>{s.statuses.get(k, 0):,}</td>" for k in _STATUSES)
            + f"<td>{_bar(s.statuses)}</td>"
            + f"<td>{'-' if mean is None else f'{mean:.3f}'}</td>"
            + f"<td>{_histogram(rewards, lo, hi, log=False, color='#1565c0', unit='')}</td>"
            + f"<td class=lat>p50 {_ms(latency.quantile(0.5))}<br>p95 "
            f"{_ms(latency.quantile(0.95))}<br>max {_ms(max(lat) if lat else None)}{e(note)}</td>"
            + f"<td>{_histogram(lat, min(lat, default=0), max(lat, default=0), log=True, color='#6a1b9a', unit='ms')}</td>"
            + "</tr>"
        )
    component_rows = [
        f"<tr><td>{e(name)}</td><td>{e(component)}</td>"
        f"<td>{stats[name].component_sum[component] / n:.3f}</td><td>{n:,}</td></tr>"
        for name in names
        for component, n in sorted(stats[name].component_n.items())
    ]
    kind_names = sorted(kinds)
    kind_rows = [
        f"<tr><th scope=row>{e(name)}</th>"
        + "".join(f"<td>{stats[name].error_kinds.get(k, 0):,}</td>" for k in kind_names)
        + "</tr>"
        for name in names
        if stats[name].error_kinds
    ]
    errors_html = (
        "<p>No errors: every result is a verdict.</p>"
        if not kind_rows
        else "<table id=kinds><thead><tr><th>verifier</th>"
        + "".join(f"<th>{e(k)}</th>" for k in kind_names)
        + "</tr></thead><tbody>"
        + "".join(kind_rows)
        + "<tr class=total><th scope=row>total</th>"
        + "".join(f"<td>{kinds[k]:,}</td>" for k in kind_names)
        + "</tr></tbody></table>"
    )
    left_out = [
        f"first {embedded[s]:,} of {totals[s]:,} {s} results"
        for s in ("fail", "error")
        if totals[s] > embedded[s]
    ]
    cap_note = (
        f"<p class=note id=capped>This page embeds the {' and the '.join(left_out)} (at most "
        f"{ROWS_PER_STATUS:,} each, to stay small); every result is in the scored file.</p>"
        if left_out
        else ""
    )
    try:
        size = f"{scored.stat().st_size:,} bytes"
    except OSError:
        size = "?"
    meta = {
        "scored file": str(scored),
        "size": size,
        "results": f"{count:,}",
        "statuses": ", ".join(f"{k} {totals.get(k, 0):,}" for k in _STATUSES),
        "from cache": f"{cached:,}",
        "verifiers": f"{len(names):,}",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "verifiers version": __version__,
    }
    meta_html = "".join(
        f"<tr><th scope=row>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in meta.items()
    )
    options = {
        "status": ["fail", "error"],
        "verifier": sorted({r["verifier"] for r in rows}),
        "kind": sorted({r["kind"] for r in rows if r["kind"]}),
    }
    selects = "".join(
        f'<label>{key} <select id="f-{key}" data-key="{key}"><option value="">all</option>'
        + "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)
        + "</select></label> "
        for key, values in options.items()
    )
    return _PAGE.format(
        title=e(scored.name),
        meta=meta_html,
        verifiers="".join(verifier_rows),
        components="".join(component_rows) or "<tr><td colspan=4 class=muted>none</td></tr>",
        errors=errors_html,
        cap_note=cap_note,
        selects=selects,
        rows=_json_for_script(rows),
        page_size=PAGE_SIZE,
        script=_SCRIPT,
    )


_SCRIPT = """
(function () {
  "use strict";
  var rows = JSON.parse(document.getElementById("rows").textContent);
  var pageSize = Number(document.getElementById("failures").dataset.pageSize);
  var body = document.querySelector("#failures tbody");
  var keys = ["status", "verifier", "kind"];
  var state = {q: "", page: 1, status: "", verifier: "", kind: ""};

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    keys.forEach(function (k) { state[k] = params.get(k) || ""; });
    state.q = params.get("q") || "";
    state.page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
    keys.forEach(function (k) { document.getElementById("f-" + k).value = state[k]; });
    document.getElementById("f-q").value = state.q;
  }
  function writeHash() {
    var params = new URLSearchParams();
    keys.concat(["q"]).forEach(function (k) { if (state[k]) params.set(k, state[k]); });
    if (state.page > 1) params.set("page", String(state.page));
    history.replaceState(null, "", "#" + params.toString());
  }
  function matches(r) {
    for (var i = 0; i < keys.length; i++) {
      if (state[keys[i]] && r[keys[i]] !== state[keys[i]]) return false;
    }
    if (!state.q) return true;
    var q = state.q.toLowerCase();
    return [r.id, r.verifier, r.text, r.kind].some(function (v) {
      return v != null && String(v).toLowerCase().indexOf(q) !== -1;
    });
  }
  function cell(tr, value) {
    var td = document.createElement("td");
    td.textContent = value == null ? "" : String(value);
    tr.appendChild(td);
  }
  function render() {
    var shown = rows.filter(matches);
    var pages = Math.max(1, Math.ceil(shown.length / pageSize));
    state.page = Math.min(state.page, pages);
    var start = (state.page - 1) * pageSize;
    var frag = document.createDocumentFragment();
    shown.slice(start, start + pageSize).forEach(function (r) {
      var tr = document.createElement("tr");
      tr.className = "row " + r.status;
      tr.dataset.status = r.status;
      tr.dataset.n = String(r.n);
      cell(tr, r.n); cell(tr, r.line); cell(tr, r.id); cell(tr, r.verifier);
      cell(tr, r.status); cell(tr, r.kind); cell(tr, r.reward == null ? "null" : r.reward);
      cell(tr, r.text);
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    document.getElementById("shown").textContent =
      shown.length + " of " + rows.length + " rows; page " + state.page + " of " + pages;
    document.getElementById("prev").disabled = state.page <= 1;
    document.getElementById("next").disabled = state.page >= pages;
  }
  function changed() {
    keys.forEach(function (k) { state[k] = document.getElementById("f-" + k).value; });
    state.q = document.getElementById("f-q").value;
    state.page = 1;
    writeHash();
    render();
  }
  keys.forEach(function (k) { document.getElementById("f-" + k).addEventListener("change", changed); });
  document.getElementById("f-q").addEventListener("input", changed);
  document.getElementById("prev").addEventListener("click", function () {
    state.page -= 1; writeHash(); render();
  });
  document.getElementById("next").addEventListener("click", function () {
    state.page += 1; writeHash(); render();
  });
  window.addEventListener("hashchange", function () { readHash(); render(); });
  readHash();
  render();
  document.body.dataset.ready = "1";
})();
"""

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>verifiers report: {title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 90em; padding: 0 1em; }}
table {{ border-collapse: collapse; margin: .5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: .25em .5em; vertical-align: middle; }}
th {{ background: #f5f5f5; text-align: left; }}
#failures td:last-child {{ max-width: 50em; word-break: break-word; }}
tr.fail td:nth-child(5) {{ color: #c62828; }} tr.error td:nth-child(5) {{ color: #a66f00; }}
.muted {{ color: #888; }} .note {{ background: #fff8e1; padding: .4em .6em; }}
svg text {{ font-size: 9px; fill: #555; }} .total {{ font-weight: bold; }}
td.lat {{ white-space: nowrap; font-size: .9em; }}
.legend span {{ display: inline-block; padding: 0 .5em; color: #fff; margin-right: .3em; }}
</style></head><body>
<h1>verifiers report: {title}</h1>
<h2>Run</h2>
<table id=meta>{meta}</table>
<h2>Per verifier</h2>
<p class=legend><span style="background:#2e7d32">pass</span><span style="background:#c62828">fail</span><span style="background:#f9a825">error</span><span style="background:#78909c">skipped</span>
Reward histograms share the range [0, 1]; latency histograms are per verifier, log scale.</p>
<table id=verifiers><thead><tr><th>verifier</th><th>count</th><th>pass</th><th>fail</th><th>error</th><th>skipped</th>
<th>statuses</th><th>mean reward</th><th>reward distribution</th><th>latency</th><th>latency distribution</th></tr></thead>
<tbody>{verifiers}</tbody></table>
<h2>Components (mean per verifier)</h2>
<table id=components><thead><tr><th>verifier</th><th>component</th><th>mean</th><th>n</th></tr></thead><tbody>{components}</tbody></table>
<h2>Errors by kind</h2>
{errors}
<h2>Failures and errors</h2>
{cap_note}
<p><noscript>The table needs JavaScript. </noscript>{selects}<label>text <input id="f-q" type="search" placeholder="id, message, feedback"></label>
<button id=prev type=button>previous</button> <button id=next type=button>next</button> <span id=shown></span></p>
<table id=failures data-page-size="{page_size}"><thead><tr><th>scored line</th><th>input line</th><th>id</th><th>verifier</th>
<th>status</th><th>kind</th><th>reward</th><th>feedback / error</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="rows">{rows}</script>
<script>{script}</script>
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
