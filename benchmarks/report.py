"""Markdown rendering of benchmark results (the same text is printed and saved)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["markdown_table", "render_markdown", "timing_rows", "workload_rows"]


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _mb(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:.1f}"


def _ratio(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if x < 100 else f"{x:.3g}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _mark(t: Mapping[str, Any]) -> str:
    """The suffix of a query label: none (core), " †" (extended) or " *" (reference row)."""
    if t["in_workload"]:
        return ""
    return " †" if t.get("extended") else " *"


def timing_rows(timings: Sequence[Mapping[str, Any]]) -> list[str]:
    """The per-query table: medians of warm runs, their ratio, and the cold first calls."""
    header = [
        "query",
        "keys",
        "N",
        "pandas median s",
        "dpframe median s",
        "ratio",
        "pandas cold s",
        "dpframe cold s",
    ]
    rows = [
        [
            t["query"] + _mark(t),
            t["variant"],
            f"{t['rows']:,}",
            _s(t["pandas_median"]),
            _s(t["dpframe_median"]),
            _ratio(t["ratio"]),
            _s(t["pandas_cold"]),
            _s(t["dpframe_cold"]),
        ]
        for t in timings
    ]
    return markdown_table(header, rows)


def workload_rows(workloads: Sequence[Mapping[str, Any]]) -> list[str]:
    """Workload totals per (N, key dtype): warm medians and cold first calls."""
    header = [
        "keys",
        "N",
        "load s",
        "pandas total s",
        "dpframe total s",
        "ratio (warm)",
        "pandas cold s",
        "dpframe cold s",
        "ratio (cold)",
        "extended: pandas s",
        "dpframe s",
        "ratio",
    ]
    rows = [
        [
            w["variant"],
            f"{w['rows']:,}",
            _s(w.get("load_s")),
            _s(w["pandas_total"]),
            _s(w["dpframe_total"]),
            _ratio(w["ratio"]),
            _s(w["cold_pandas_total"]),
            _s(w["cold_dpframe_total"]),
            _ratio(w["cold_ratio"]),
            _s(w.get("extended_pandas_total")),
            _s(w.get("extended_dpframe_total")),
            _ratio(w.get("extended_ratio")),
        ]
        for w in workloads
    ]
    return markdown_table(header, rows)


def _memory_rows(memory: Sequence[Mapping[str, Any]]) -> list[str]:
    header = [
        "keys",
        "N",
        "step",
        "df size MiB (deep)",
        "df RSS growth MiB",
        "step s",
        "peak RSS increase MiB",
        "increase / df",
        "increase / df RSS growth",
        "tracemalloc peak MiB",
        "retained RSS MiB",
    ]
    rows = []
    for m in memory:
        size = m["df_memory_usage_deep"]
        grown = m["df_rss_growth"]
        for step in ("private_frame", "first groupby state", "first groupby county"):
            e = m[step]
            peak = e["rss_peak_increase"]
            rows.append(
                [
                    m["key_dtype"],
                    f"{m['rows']:,}",
                    step,
                    _mb(size),
                    _mb(m["df_rss_growth"]),
                    _s(e["seconds"]),
                    _mb(peak),
                    "n/a" if peak is None else f"{peak / size:.2f}",
                    "n/a" if peak is None or not grown else f"{peak / grown:.2f}",
                    _mb(e["tracemalloc_peak"]),
                    _mb(e["rss_retained"]),
                ]
            )
    return markdown_table(header, rows)


def render_markdown(results: Mapping[str, Any]) -> str:
    """The whole report as markdown."""
    env = results["environment"]
    lines = [
        f"# dpframe core benchmark, {results['date']}",
        "",
        f"Command: `{results['command']}`  ",
        "Environment: "
        + ", ".join(f"{k} {v}" for k, v in env.items())
        + f"; repeats {results['repeats']} (median of warm runs; first call = cold).",
        "",
        "## Workload totals (count, clamped sum, clamped mean, groupby count, groupby sum)",
        "",
        *workload_rows(results["workloads"]),
        "",
        "Target: ratio (warm) <= 1.3 at 10^7 rows. `load s` is `session.private_frame(df, ...)`"
        " (not in the totals). Extended (warm medians): variance, group-by sum over 100,000"
        " keys, median, sparse vector over 100 predicates, describe().",
        "",
        "## Per query",
        "",
        *timing_rows(results["timings"]),
        "",
        "`†` = extended query; `*` = reference row outside both totals.  pandas group-bys use"
        " `observed=True, sort=False`; dpframe returns every declared key in declared order.",
    ]
    if results.get("cps"):
        cps = results["cps"]
        lines += [
            "",
            f"## Bundled CPS 1988 data ({cps['rows']:,} rows)",
            "",
            *timing_rows(cps["timings"]),
            "",
            *workload_rows([cps["workload"]]),
        ]
    if results.get("import"):
        imp = results["import"]
        lines += [
            "",
            f"## Import time (fresh interpreter, median of {len(imp['runs']['pandas'])})",
            "",
            f"`import pandas` {imp['pandas_s']:.3f} s; `import dpframe` {imp['dpframe_s']:.3f} s;"
            f" **dpframe adds {imp['delta_s']:.3f} s** (bytecode cached, as installed).",
        ]
        inherited = imp.get("inherited")
        if inherited:
            flag = imp.get("pythondontwritebytecode") or "unset"
            lines += [
                "",
                f"With this shell's environment (PYTHONDONTWRITEBYTECODE={flag}; an editable"
                " install then recompiles dpframe on every import): pandas"
                f" {inherited['pandas_s']:.3f} s, dpframe {inherited['dpframe_s']:.3f} s,"
                f" delta {inherited['delta_s']:.3f} s.",
            ]
        if results.get("slowest_imports"):
            shown = "; ".join(f"{name} {sec:.3f} s" for name, sec in results["slowest_imports"])
            lines += [
                "",
                "Where the delta goes (`-X importtime`, cumulative per package imported by a"
                f" dpframe module; dpframe's own modules by self time): {shown}.",
            ]
    if results.get("memory"):
        lines += [
            "",
            "## Memory",
            "",
            *_memory_rows(results["memory"]),
            "",
            "`increase / df` = peak RSS increase of the step / `df.memory_usage(deep=True).sum()`;"
            " the target (peak <= 1.2x the frame) means <= 0.20 for `private_frame`.",
        ]
    if results.get("accuracy"):
        acc = results["accuracy"]
        rows = [
            [
                stat,
                str(a["reps"]),
                f"{a['epsilon']:g}",
                f"{a['mae']:.4g}",
                f"{a['reference_scale']:.4g}",
                f"{a['ratio']:.3f} ± {a['ratio_sem']:.3f}",
                f"{a['expected_ratio']:.3f}",
            ]
            for stat, a in acc["stats"].items()
        ]
        lines += [
            "",
            f"## Accuracy (N = {acc['rows']:,})",
            "",
            *markdown_table(
                [
                    "statistic",
                    "reps",
                    "ε",
                    "MAE",
                    "reference scale",
                    "MAE / scale (± s.e.)",
                    "expected (model)",
                ],
                rows,
            ),
            "",
            "Reference scale: count 1/ε, sum 1e6/ε, mean (U − L)/(ε·n).  `expected` is the"
            " MAE / scale predicted by the noise each release reports (discrete Laplace on its"
            " grid; see benchmarks/accuracy.py): 0.85 for a count at ε = 1, about 1 for a sum;"
            " for the mean the count's noise adds to the sum's.",
        ]
    return "\n".join(lines) + "\n"


def save_results(results: Mapping[str, Any], text: str, output_dir: Path, prefix: str) -> None:
    """Write ``<prefix>-<date>.md`` and ``.json`` into ``output_dir`` and say where."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stem = output_dir / f"{prefix}-{dt.date.today().isoformat()}"
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(f"Saved {stem}.md and {stem}.json ({results['wall_s']:.0f} s)")
