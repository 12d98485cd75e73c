"""Runs the toy kind end to end, embedded, and prints what the test checks (JSON).

``python -m tests.toy_kind.demo`` from the repository root.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import dpframe as dp
import tests.toy_kind.toy_family  # noqa: F401  (in dpframe/mechanisms/, family_classes() imports it)
from dpframe.curator.worst_case import CostModel, worst_case_seconds
from tests.toy_kind.facade import nonnull_count
from tests.toy_kind.node import NonNullCount


def main() -> None:
    """One release, its ledger row, its explanation, its worst case and a refusal."""
    rng = np.random.default_rng(5)  # test data only, not privacy noise
    x = rng.uniform(0, 10, 2000)
    x[:500] = np.nan  # 1,500 rows hold a value
    session = dp.Session(epsilon=10.0, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": x}), bounds={"x": (0.0, 10.0)})
    value = nonnull_count(pf, "x", epsilon=5.0)
    filtered = nonnull_count(pf[pf["x"] > 5], "x", epsilon=4.0)
    row = session.ledger.iloc[0]
    node = NonNullCount(plan=pf.plan, privacy=dp.Privacy(epsilon=1), column="x")
    explained = session.explain(node)
    refused = ""
    try:
        nonnull_count(pf, "x", epsilon=5.0)
    except dp.BudgetExceededError as exc:
        refused = str(exc)
    print(
        json.dumps(
            {
                "value": value,
                "filtered": filtered,
                "filtered_exact": int((x > 5).sum()),  # test data, public here
                "query": str(row["query"]),
                "mechanism": str(row["mechanism"]),
                "releases": len(session.ledger),
                "spent": float(session.spent.epsilon),
                "explained": str(explained),
                "refused": refused,
                "seconds": worst_case_seconds(node, 10**6, CostModel()),
            }
        )
    )


if __name__ == "__main__":
    main()
