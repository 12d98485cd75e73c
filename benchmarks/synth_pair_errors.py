"""Where each pair's error in a synthetic copy comes from (issue 26, part 3's strict bar).

For every pair of columns of copies made at ε = 1 (the tests' setup:
``tests/test_synth_pairs.py``), the total variation distance from the data's
2-way marginal, split into:

* ``indep``: the TV of the product of the data's own 1-way margins (the bar);
* ``model``: the TV of the fitted model's own pair marginal, before any row is
  drawn (read from the model the mechanism fitted, expanded to the copy's
  cells as the sampler expands them);
* ``copy``: the TV of the copy's rows; ``draw``: the TV between the copy's rows
  and the model's pair marginal (what drawing n rows added);
* ``floor``: the mean TV of n rows drawn i.i.d. from the data's own pair
  marginal (what any copy of n independent rows pays, however good its model);
* ``margins``: the TV between the product of the model's 1-way margins and the
  product of the data's (what the noise of the measured margins alone costs
  any copy); ``dp_indep``: the TV of the product of the model's margins from
  the data (independence as a DP copy could know it);
* ``measured``: the share of copies whose model measured the pair (an MST
  edge; an AIM marginal holding both columns);
* ``direct``: the expected TV that measuring the pair itself would carry, at
  the smallest noise any of the copy's 2-way measurements had (cells × σ ×
  √(2/π) / 2N: the noise alone, before any fit).

Means over ``--runs`` copies (standard errors for ``copy``).  Benchmark only:
it wraps the samplers to keep their models (post-processing, no effect on the
copies) and draws its i.i.d. floor with a seeded numpy generator.

    python -m benchmarks.synth_pair_errors [--data cps,diamonds] [--methods mst,aim] [--runs 10]
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.releases import new_releases

Array = np.ndarray


def _load(name: str) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
    from tests.synth_pairs import DIAMOND_BOUNDS, DIAMOND_CATEGORIES, diamonds

    if name == "cps":
        return load_cps1988(), dict(CPS1988_BOUNDS), dict(CPS1988_CATEGORIES)
    return diamonds(), dict(DIAMOND_BOUNDS), dict(DIAMOND_CATEGORIES)


@contextmanager
def _kept_models(kept: dict[str, Any]) -> Iterator[None]:
    """Wrap MST's and AIM's samplers and MST's domain compression to keep what they saw."""
    from dpframe.mechanisms.synth import synth_aim, synth_domain, synth_family

    patched: list[tuple[Any, str]] = [
        (synth_family, "sample_tree"),
        (synth_aim, "sample_junction"),
        (synth_domain.Compressed, "of"),
    ]
    saved = [getattr(owner, name) for owner, name in patched]
    tree, junction = saved[0], saved[1]
    of = saved[2].__func__

    def keep_tree(model: Any, n: int, gen: Any) -> Any:
        kept["model"] = model
        return tree(model, n, gen)

    def keep_junction(model: Any, n: int, gen: Any) -> Any:
        kept["model"] = model
        return junction(model, n, gen)

    def keep_domain(cls: Any, *args: Any) -> Any:
        found = of(cls, *args)
        kept.setdefault("domains", []).append(found)
        return found

    wrappers = [keep_tree, keep_junction, classmethod(keep_domain)]
    for (owner, name), wrapper in zip(patched, wrappers, strict=True):
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for (owner, name), value in zip(patched, [tree, junction, classmethod(of)], strict=True):
            setattr(owner, name, value)


def _junction_pair(model: Any, i: int, j: int) -> Array:
    """p(x_i, x_j) of a junction-tree model: Π beliefs / Π separators, eliminated by einsum."""
    tree = model.tree
    operands: list[Any] = []
    for k, clique in enumerate(tree.cliques):
        belief = model.belief[k]
        operands += [belief, list(clique)]
        sep = tree.separator(k)
        if sep:
            axes = tuple(p for p, a in enumerate(clique) if a not in sep)
            marginal = belief.sum(axis=axes)
            inverse = np.divide(1.0, marginal, out=np.zeros_like(marginal), where=marginal > 0)
            operands += [inverse, list(sep)]
    found: Array = np.einsum(*operands, [i, j], optimize="greedy")
    return found


def _model_pairs(method: str, kept: dict[str, Any], sizes: list[int]) -> Callable[..., Array]:
    """The model's pair marginal (probabilities) on the copy's cells, as the sampler expands it."""
    model = kept["model"]
    if method == "mst":
        domains = kept["domains"][-len(sizes) :]
        expand = []
        for c, size in zip(domains, sizes, strict=True):
            e = np.zeros((c.size, size))
            inside = np.flatnonzero(c.mapping >= 0)
            e[c.mapping[inside], inside] = c.weights[inside]
            expand.append(e)

        def mst(i: int, j: int) -> Array:
            pair = model.marginal(i, j) / model.total
            table: Array = expand[i].T @ pair @ expand[j]
            out: Array = table / table.sum()
            return out

        return mst

    def aim(i: int, j: int) -> Array:
        pair = _junction_pair(model, i, j)
        table = np.zeros((sizes[i], sizes[j]))
        table[: pair.shape[0], : pair.shape[1]] = pair
        out: Array = table / table.sum()
        return out

    return aim


def _tv(p: Array, q: Array) -> float:
    return float(0.5 * np.abs(p - q).sum())


def decompose(name: str, method: str, runs: int, seed: int = 7) -> list[dict[str, Any]]:
    """Every pair's error terms over ``runs`` copies (see the module docstring)."""
    import dpframe as dp
    from tests.synth_pairs import coded

    data, bounds, categories = _load(name)
    kept: dict[str, Any] = {}
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    gen = np.random.default_rng(seed)  # benchmark only: the i.i.d. floor
    with _kept_models(kept):
        for _ in range(runs):
            kept.clear()
            session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
            pf = session.private_frame(data, bounds=bounds, categories=categories)
            copy = pf.synthesize(epsilon=1.0, method=method, progress=False)
            info = copy.attrs["dpframe_synth"]
            sizes = [
                (len(e) - 1 if e else len(c)) + 1
                for e, c in zip(info.edges, info.categories, strict=True)
            ]
            model_pair = _model_pairs(method, kept, sizes)
            real, fake = coded(data, info), coded(copy, info)
            n = len(copy)
            stds = info.marginal_std or (info.two_way_std,)
            sigma = min(stds)
            cliques = [set(c) for c in info.pairs]
            for (i, a), (j, b) in itertools.combinations(enumerate(info.columns), 2):
                truth = _share(real, a, b, sizes[i], sizes[j])
                made = _share(fake, a, b, sizes[i], sizes[j])
                model = model_pair(i, j)
                product = np.outer(truth.sum(axis=1), truth.sum(axis=0))
                dp_product = np.outer(model.sum(axis=1), model.sum(axis=0))
                drawn = gen.multinomial(n, truth.ravel()).reshape(truth.shape) / n
                found = rows.setdefault((a, b), {})
                for key, value in (
                    ("indep", _tv(truth, product)),
                    ("model", _tv(model, truth)),
                    ("copy", _tv(made, truth)),
                    ("draw", _tv(made, model)),
                    ("floor", _tv(drawn, truth)),
                    ("margins", _tv(dp_product, product)),
                    ("dp_indep", _tv(dp_product, truth)),
                    ("measured", float(any({a, b} <= c for c in cliques))),
                    ("direct", truth.size * sigma * np.sqrt(2 / np.pi) / (2 * len(data))),
                ):
                    found.setdefault(key, []).append(value)
    out = []
    for pair, found in rows.items():
        copies = np.asarray(found["copy"])
        row: dict[str, Any] = {"pair": " × ".join(pair)}
        row.update({k: float(np.mean(v)) for k, v in found.items()})
        row["se"] = float(copies.std(ddof=1) / np.sqrt(len(copies))) if len(copies) > 1 else 0.0
        row["fails"] = row["copy"] > row["indep"] + 2 * row["se"]
        out.append(row)
    return out


def _share(codes: dict[str, Array], a: str, b: str, ka: int, kb: int) -> Array:
    counts = np.bincount(codes[a] * kb + codes[b], minlength=ka * kb).astype(np.float64)
    shares: Array = counts.reshape(ka, kb) / counts.sum()
    return shares


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of :func:`decompose`'s rows (✗: the strict bar missed)."""
    keys = ("indep", "model", "draw", "floor", "margins", "dp_indep", "measured", "direct")
    head = "| pair | copy (mean ± se) | " + " | ".join(keys) + " |"
    lines = [head, "|" + " --- |" * (len(keys) + 2)]
    for r in rows:
        mark = " ✗" if r["fails"] else ""
        cells = " | ".join(f"{r[k]:.4f}" for k in keys)
        lines.append(f"| {r['pair']} | {r['copy']:.4f} ± {r['se']:.4f}{mark} | {cells} |")
    failed = sum(r["fails"] for r in rows)
    lines.append(f"\n{failed} of {len(rows)} pairs above indep + 2 se")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="cps,diamonds")
    parser.add_argument("--methods", default="mst,aim")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    everything = {}
    for name in args.data.split(","):
        for method in args.methods.split(","):
            rows = decompose(name, method, args.runs)
            everything[f"{name} {method}"] = rows
            print(f"\n## {name}, {method.upper()}, {args.runs} copies\n", flush=True)
            print(table(rows), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(everything, out, indent=1)


if __name__ == "__main__":
    with new_releases():
        main()
