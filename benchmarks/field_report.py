"""Markdown report of ``benchmarks.run_field`` results, with the issue's targets checked.

Everything here reads the results dictionary built by ``run_field.main``
(also saved as JSON), so a report can be re-rendered from a saved run::

    python -m benchmarks.field_report benchmarks/results/field-<date>.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.field_costs import (
    MEAN_NEIGHBOURS,
    Cost,
    cost_cell,
    mean_comparable,
    neighbours_short,
)
from benchmarks.report import markdown_table

__all__ = ["CPS_LABEL", "FLOAT_SAFE", "render", "targets"]

#: Label of the bundled CPS 1988 data set in the tables.
CPS_LABEL = "CPS 1988 (28,155)"
#: Libraries with noise that is safe against floating-point attacks (the issue's list).
FLOAT_SAFE = ("opendp", "smartnoise-sql", "pipeline-dp", "tumult")
_EPSILON = 1.0


def _s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _r(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def _mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.0f} MiB"


def _median(results: dict[str, Any], column: str, label: str, query: str) -> float | None:
    cell = results["medians"].get(column, {}).get(label, {}).get(query)
    return None if cell is None or "median" not in cell else float(cell["median"])


def _cold(results: dict[str, Any], column: str, label: str, query: str) -> float | None:
    cell = results["medians"].get(column, {}).get(label, {}).get(query)
    return None if cell is None or "cold" not in cell else float(cell["cold"])


def _total(results: dict[str, Any], column: str, label: str, queries: list[str]) -> float | None:
    parts = [_median(results, column, label, q) for q in queries]
    return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


def _kind(results: dict[str, Any], label: str) -> str:
    return str(next(d["kind"] for d in results["datasets"] if d["label"] == label))


def _dataset_tables(results: dict[str, Any], label: str) -> list[str]:
    columns: list[str] = ["pandas", "dpframe", *results["libs"]]
    kind = _kind(results, label)
    queries: list[str] = results["queries"][kind]
    core: list[str] = results["core"][kind]
    extended = [q for q in queries if q not in core]
    order: list[tuple[str, list[str] | None]] = [(q, None) for q in core]
    order.append(("**core total**", core))
    order += [(q, None) for q in extended]
    order.append(("**extended total**", extended))

    def value(column: str, name: str, group: list[str] | None) -> float | None:
        if group is not None:
            return _total(results, column, label, group)
        return _median(results, column, label, name)

    lines = [f"## {label} rows", "", "Warm medians:", ""]
    table = [[q, *[_s(value(c, q, g)) for c in columns]] for q, g in order]
    table.append(
        [
            "setup (not in totals)",
            *[_s(results["load"].get(c, {}).get(label)) if c != "pandas" else "-" for c in columns],
        ]
    )
    mem_row, ratio_row = ["peak RSS increase"], ["peak increase / frame"]
    for c in columns:
        m = results["memory"].get(c, {}).get(label) or {}
        peak, size = m.get("peak_increase"), m.get("df_bytes")
        mem_row.append(_mib(peak))
        ratio_row.append("n/a" if peak is None or not size else f"{peak / size:.2f}")
    table += [mem_row, ratio_row]
    lines += markdown_table(["query", *columns], table)
    for base in ("pandas", "dpframe"):
        lines += ["", f"Ratio to {base} (library median / {base} median):", ""]
        rows = []
        for q, g in order:
            cells = []
            for c in columns[1:]:
                v, b = value(c, q, g), value(base, q, g)
                cells.append(_r(None if v is None or not b else v / b))
            rows.append([q, *cells])
        lines += markdown_table(["query", *columns[1:]], rows)
    return [*lines, ""]


def _epsilon(results: dict[str, Any]) -> float:
    return float(results.get("epsilon", _EPSILON))


def _accuracy(results: dict[str, Any]) -> list[str]:
    acc = results.get("accuracy")
    if not acc:
        return []
    eps = _epsilon(results)
    columns = ["dpframe", *results["libs"]]
    lines = [
        f"## Accuracy: {acc['rows']:,} rows, ε = {eps:g}, MAE / best possible",
        "",
        "Mean absolute error of repeated releases against the exact clamped answer, divided"
        " by the best possible for the query: the Laplace scale Δ/ε for count (1/ε) and sum"
        " (1e6/ε); for the mean, (U − L)/(ε n), the error of a Laplace sum with sensitivity"
        " U − L divided by the exact n. ± one standard error.",
        "",
    ]
    table = []
    for stat in ("count", "sum", "mean"):
        cells = []
        for c in columns:
            cell = acc["stats"].get(c, {}).get(stat)
            if cell is None or "ratio" not in cell:
                cells.append("n/a")
            else:
                cells.append(f"{cell['ratio']:.3f} ± {cell['ratio_sem']:.3f}")
        table.append([stat, *cells])
    reps = []
    for c in columns:
        made = {v.get("reps") for v in acc["stats"].get(c, {}).values() if "reps" in v}
        reps.append("/".join(str(r) for r in sorted(made)) if made else "n/a")
    table.append(["reps", *reps])
    table.append(["ε spent (count/sum/mean)", *[_spent(acc, c, eps) for c in columns]])
    table.append(["mean: neighbours", *[neighbours_short(c) for c in columns]])
    lines += markdown_table(["statistic", *columns], table)
    dpf = acc["stats"].get("dpframe", {})
    expected = ", ".join(f"{s} {v['expected_ratio']:.3f}" for s, v in dpf.items())
    lines += [
        "",
        f"dpframe's expected ratios from its own noise model (discrete Laplace on its grid):"
        f" {expected}.",
        "",
        "ε spent: the cost of one release in the library's own accounting (dpframe: the"
        " session's spent ε / releases; the others: see the cost table), each configured to"
        f" spend ε = {eps:g} in total; bold when it is not. How each mean treats"
        " neighbouring data sets:",
        "",
    ]
    for c in columns:
        if c in MEAN_NEIGHBOURS:
            relation, n, how = MEAN_NEIGHBOURS[c]
            lines.append(f"- {c}: {relation}; {n}; {how}.")
    lines += [
        "",
        "A substitute-one ε with n public is not comparable to an add/remove ε with n"
        " private (no noise is spent on the count); the mean target compares dpframe with"
        " the add/remove libraries that spent exactly ε only.",
        "",
    ]
    return lines


def _spent(acc: dict[str, Any], column: str, eps: float) -> str:
    cells = []
    for stat in ("count", "sum", "mean"):
        cell = acc["stats"].get(column, {}).get(stat) or {}
        spent = cell.get("epsilon_spent")
        cells.append(cost_cell(None if spent is None else {"epsilon": float(spent)}, eps))
    return "n/a" if set(cells) == {"n/a"} else " / ".join(cells)


def _costs(results: dict[str, Any]) -> list[str]:
    """Per query and library, the ε one release spent in the library's own accounting."""
    libs = [lib for lib in results["libs"] if results["workers"].get(lib, {}).get("costs")]
    roles: dict[str, str] = results.get("roles", {}).get("synthetic", {})
    if not libs or not roles:
        return []
    eps = _epsilon(results)
    table = []
    for role, label in roles.items():
        row = []
        for lib in libs:
            costs: dict[str, Cost] = results["workers"][lib]["costs"].get("synthetic", {})
            row.append(cost_cell(costs.get(role), eps) if role in costs else "n/a")
        table.append([label, *row])
    sources = []
    for lib in libs:
        found = {
            c["source"]
            for c in results["workers"][lib]["costs"].get("synthetic", {}).values()
            if "source" in c
        }
        sources.append(f"- {lib}: " + "; ".join(f"`{x}`" for x in sorted(found)))
    return [
        f"## Privacy cost per release (library's own accounting, target ε = {eps:g})",
        "",
        "Measured by each worker on the first 2,000 rows of its data with the same"
        " configuration as the timed and accuracy runs. n/a: the library has no such query;"
        " unknown (refused): the library refused to build the query, so it has no cost.",
        "",
        *markdown_table(["query", *libs], table),
        "",
        "Reported by:",
        "",
        *sources,
        "",
    ]


def _mean_target(
    acc: dict[str, Any], ours: dict[str, Any], eps: float
) -> tuple[str, str, bool | None]:
    """dpframe's mean error against the libraries with its neighbouring relation at ε."""
    comparable: dict[str, float] = {}
    other: dict[str, tuple[float, str]] = {}
    for lib, stats in acc["stats"].items():
        cell = stats.get("mean", {})
        if lib == "dpframe" or "ratio" not in cell:
            continue
        spent = cell.get("epsilon_spent")
        why = mean_comparable(lib, None if spent is None else float(spent), eps)
        if why is None:
            comparable[lib] = float(cell["ratio"])
        else:
            other[lib] = (float(cell["ratio"]), why)
    best = min(comparable.items(), key=lambda kv: kv[1]) if comparable else None
    text = (
        f"dpframe {ours['ratio']:.3f} ± {ours['ratio_sem']:.3f}; best other"
        f" (add/remove, ε spent = {eps:g}) "
        + ("n/a" if best is None else f"{best[0]} {best[1]:.3f}")
    )
    if other:
        text += "; not comparable: " + ", ".join(
            f"{lib} {r:.3f} ({why})" for lib, (r, why) in sorted(other.items())
        )
    return (
        "mean: error no worse than any other library's at the same ε",
        text,
        None if best is None else ours["ratio"] <= best[1],
    )


def _yes(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**met**" if ok else "**missed**")


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, what was measured, met?) for every target of the issue that this run covers."""
    out: list[tuple[str, str, bool | None]] = []
    labels = [d["label"] for d in results["datasets"]]
    big = "10,000,000" if "10,000,000" in labels else None
    mid = "1,000,000" if "1,000,000" in labels else None
    if big:
        core = results["core"]["synthetic"]
        p, d = _total(results, "pandas", big, core), _total(results, "dpframe", big, core)
        ratio = None if p is None or d is None else d / p
        out.append(
            (
                "core workload ≤ 1.3× plain pandas at 10^7 rows",
                f"{_r(ratio)}× ({_s(d)} vs {_s(p)}, warm medians)",
                None if ratio is None else ratio <= 1.3,
            )
        )
    if mid:
        worst: tuple[float, str, str] | None = None
        for q in results["queries"]["synthetic"]:
            dpf = _median(results, "dpframe", mid, q)
            others = [
                (m, lib) for lib in FLOAT_SAFE if (m := _median(results, lib, mid, q)) is not None
            ]
            if dpf is None or not others:
                continue
            fastest, lib = min(others)
            if worst is None or fastest / dpf < worst[0]:
                worst = (fastest / dpf, q, lib)
        if worst is not None:
            out.append(
                (
                    "≥ 10× faster than the fastest float-safe library on every shared query"
                    " at 10^6 rows",
                    f"smallest speed-up {worst[0]:.1f}× ({worst[1]}, vs {worst[2]})",
                    worst[0] >= 10,
                )
            )
    if "diffprivlib" in results["medians"]:
        slower = []
        compared = 0
        for label in labels:
            for q in results["queries"][_kind(results, label)]:
                dpf = _median(results, "dpframe", label, q)
                dpl = _median(results, "diffprivlib", label, q)
                if dpf is None or dpl is None:
                    continue
                compared += 1
                if dpf > dpl:
                    slower.append(f"{q} at {label}: {_s(dpf)} vs {_s(dpl)}")
        out.append(
            (
                "no slower than diffprivlib on any query it has",
                f"{compared} (query, size) pairs compared; dpframe slower on "
                + ("; ".join(slower) if slower else "none"),
                None if not compared else not slower,
            )
        )
    if big:
        cross = next((q for q in results["queries"]["synthetic"] if "×" in q), None)
        if cross:
            warm = _median(results, "dpframe", big, cross)
            cold = _cold(results, "dpframe", big, cross)
            out.append(
                (
                    "group-by sum over 100,000 keys, exact secure noise, under 1 s at 10^7 rows",
                    f"warm {_s(warm)}, cold (first call, key codes built) {_s(cold)}",
                    None if warm is None else warm < 1.0,
                )
            )
    acc = results.get("accuracy")
    if acc:
        dpf = acc["stats"].get("dpframe", {})
        for stat in ("count", "sum"):
            if stat in dpf:
                a = dpf[stat]
                out.append(
                    (
                        f"{stat}: error / best possible ≤ 1.05",
                        f"{a['ratio']:.3f} ± {a['ratio_sem']:.3f} measured,"
                        f" {a['expected_ratio']:.3f} expected from the noise model",
                        a["ratio"] <= 1.05,
                    )
                )
        if "mean" in dpf:
            out.append(_mean_target(acc, dpf["mean"], _epsilon(results)))
    imp = results.get("import")
    if imp and "dpframe" in imp and "pandas" in imp:
        delta = imp["dpframe"]["s"] - imp["pandas"]["s"]
        out.append(
            (
                "`import dpframe` ≤ 0.3 s over `import pandas`",
                f"{delta:.3f} s ({imp['dpframe']['s']:.3f} vs {imp['pandas']['s']:.3f})",
                delta <= 0.3,
            )
        )
    for label in [big] if big else labels[-1:]:
        probe: dict[str, Any] = results["memory"].get("dpframe", {}).get(label) or {}
        peak, size = probe.get("peak_increase"), probe.get("df_bytes")
        if peak is not None and size:
            out.append(
                (
                    "peak memory ≤ 1.2× the DataFrame (peak increase ≤ 0.2× the frame)",
                    f"{peak / size:.2f}× the frame at {label} rows over setup and every"
                    f" query ({_mib(peak)} over a {_mib(size)} frame)",
                    peak / size <= 0.2,
                )
            )
    return out


def _notes(results: dict[str, Any]) -> Iterator[str]:
    seen: set[str] = set()
    for note in results.get("notes", []):
        if note not in seen:
            seen.add(note)
            yield note
    for lib in results["libs"]:
        for label, cells in results["medians"].get(lib, {}).items():
            for q, cell in cells.items():
                if "na" in cell:
                    text = f"{lib}, {q}: {cell['na']}"
                    if text not in seen:
                        seen.add(text)
                        yield text + f" (first seen at {label} rows)"


def _epsilon_sentence(results: dict[str, Any]) -> str:
    eps = _epsilon(results)
    if any(info.get("costs") for info in results["workers"].values()):
        return (
            f"ε = {eps:g} per release in total, in each library's own accounting"
            " (see the cost table). "
        )
    return (
        f"ε = {eps:g} requested per release (this run did not record what each library"
        " charged: a multi-measurement query may have cost more). "
    )


def render(results: dict[str, Any]) -> str:
    """The whole report as markdown."""
    lines = [
        f"# Field benchmark, {results['date']}",
        "",
        f"Command: `{results['command']}`",
        "",
        _epsilon_sentence(results)
        + (
            "Accuracy only (`--accuracy-only`): no timings, memory or import times."
            if results.get("accuracy_only")
            else f"{results['repeats']} warm runs per query after one cold call (median"
            " kept), str keys. Ratios use medians from the same run."
        )
        + f" Machine load: `{results.get('uptime at start', 'n/a')}` at the start,"
        f" `{results.get('uptime at end', 'n/a')}` at the end (2 shared cores: timings are"
        " noisy). n/a: the library has no such query, refused it, or was not run (see notes).",
        "",
        "## Targets",
        "",
        *markdown_table(
            ["target", "measured", "status"], [[t, m, _yes(ok)] for t, m, ok in targets(results)]
        ),
        "",
    ]
    for d in results["datasets"]:
        lines += _dataset_tables(results, d["label"])
    if results.get("import"):
        imp = results["import"]
        lines += ["## Import time (median of 5 fresh interpreters, bytecode cached)", ""]
        lines += markdown_table(
            ["library", "statement", "seconds"],
            [[k, f"`{v['stmt']}`", f"{v['s']:.3f}"] for k, v in imp.items()],
        )
        lines.append("")
    lines += _accuracy(results)
    lines += _costs(results)
    lines += ["## Libraries and calls", ""]
    table = []
    for lib in results["libs"]:
        info = results["workers"].get(lib, {})
        if "version" not in info:
            table.append([lib, "-", info.get("error", "not run")])
            continue
        versions = f"{lib} {info['version']}, pandas {info['pandas']}, numpy {info['numpy']}"
        calls = "; ".join(f"{q}: `{a}`" for q, a in info.get("api", {}).items())
        table.append([lib, versions, calls])
    lines += markdown_table(["library", "versions", "calls (by query role)"], table)
    notes = list(_notes(results))
    if notes:
        lines += ["", "Notes:", "", *[f"- {n}" for n in notes]]
    env = results["environment"]
    lines += ["", "## Environment", ""]
    lines += markdown_table(["", ""], [[k, str(v)] for k, v in env.items()])
    lines.append(f"\nWall time {results['wall_s']:.0f} s.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Re-render a saved JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    text = render(json.loads(args.json.read_text()))
    if args.output is None:
        print(text)
    else:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
