"""The steps of the peers' tutorials, each with the dpframe spellings to try (see peer_tutorials).

Sources (read for issue 15): OpenDP ``docs/source/getting-started/tabular-data/
essential-statistics.ipynb`` and ``grouping.ipynb``; Tumult Analytics
``doc/tutorials/{first-steps, privacy-budget-basics, clamping-bounds,
groupby-queries, simple-transformations, privacy-id-basics}.rst``; diffprivlib
``notebooks/exploration.ipynb``.  Each step: its name, the peer's own call
(for the report), the spellings in order (the first is the pandas-vocabulary
one; statements separated by newlines, the last one's value is shown), and a note.
"""

# ruff: noqa: E501  (spellings are a table: one per line, as the analyst typed it)
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One tutorial step: what it asks, and the dpframe spellings to try (statements)."""

    name: str
    peer: str
    spellings: tuple[str, ...] = ()
    note: str = ""


OPENDP_ESSENTIAL: tuple[Step, ...] = (
    Step(
        "Context: unit of 36 contributions, ε=1 split evenly over 5 queries",
        "dp.Context.compositor(data, privacy_unit=dp.unit_of(contributions=36), privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=5)",
        (
            "pf = session.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, max_rows_per_unit=36)\npf",
            "df['person'] = np.arange(len(df)).astype(str)\npf = session.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, privacy_unit=dp.PrivacyUnit('person', max_rows=36))\neps = session.remaining.epsilon / 5\npf",
        ),
    ),
    Step(
        "count rows (dp.len())",
        "context.query().select(dp.len())",
        ("r = pf.count(epsilon=0.2)\nr",),
    ),
    Step(
        "accuracy before release: summarize(alpha=0.05)",
        "query.summarize(alpha=0.05)",
        (
            "session.explain(pf.count, epsilon=0.2)",
            "session.explain(lambda: pf.count(epsilon=0.2)).plain()",
        ),
    ),
    Step(
        "accuracy at 99%: summarize(alpha=0.01)",
        "query.summarize(alpha=0.01)",
        (
            "session.explain(lambda: pf.count(epsilon=0.2), level=0.99)",
            "pf.count(epsilon=0.2).ci(0.99)",
        ),
        "ci(level) is free but only after the release",
    ),
    Step("release the count", ".release().collect().item()", ("int(pf.count(epsilon=0.2))",)),
    Step(
        "count of rows in a column, including nulls (.len())",
        "pl.col.X.dp.len()",
        (
            "pf['education'].size(epsilon=0.2)",
            "pf[['education']].count(epsilon=0.2)",
            "pf.count(epsilon=0.2)",
        ),
    ),
    Step(
        "count of non-null values (.count())",
        "pl.col.X.dp.count()",
        ("pf['education'].count(epsilon=0.2)",),
    ),
    Step(
        "count of nulls (.null_count())",
        "pl.col.X.dp.null_count()",
        ("pf['education'].isna().sum(epsilon=0.2)",),
    ),
    Step(
        "count of unique values (.n_unique())",
        "pl.col.X.dp.n_unique()",
        ("pf['region'].nunique(epsilon=0.2)",),
    ),
    Step(
        "margin: max_partition_length (overflow guard)",
        "dp.polars.Margin(max_partition_length=60_000_000 * 36)",
        ("pf['education'].clip(0, 20).sum(epsilon=0.2)",),
        "nothing to declare: the sum runs without a margin (exact sums on a quantum)",
    ),
    Step(
        "sum of a filtered, null-filled, integer column with bounds (0, 80)",
        "filter(HWUSUAL != 99).select(pl.col.HWUSUAL.cast(int).fill_null(35).dp.sum(bounds=(0, 80)))",
        (
            "p = pf[pf['education'] != 99]\np['education'].fillna(12).astype(int).sum(bounds=(0, 20), epsilon=0.2)",
            "p = pf[pf['education'] != 99]\np['education'].fillna(12).astype(int).clip(0, 20).sum(epsilon=0.2)",
        ),
    ),
    Step(
        "summarize the sum (scale, accuracy)",
        "query_work_hours.summarize(alpha=0.05)",
        ("session.explain(lambda: pf['education'].clip(0, 20).sum(epsilon=0.2)).plain()",),
    ),
    Step(
        "sum and length in one query",
        ".select(sum, dp.len())",
        ("pf['education'].agg(['sum', 'count'], epsilon=0.2)",),
    ),
    Step(
        "mean as noisy sum / noisy length (post-processing)",
        "release().with_columns(mean=HWUSUAL / len)",
        ("r = pf['education'].agg(['sum', 'count'], epsilon=0.2)\nr['sum'] / r['count']",),
    ),
    Step(
        "bounded-DP mean with the length public (Margin(public_info='lengths'))",
        "dp.polars.Margin(public_info='lengths') then .dp.mean(bounds)",
        (
            "pf2 = session.private_frame(df, bounds=CPS1988_BOUNDS, public_length=True)\npf2['education'].mean(epsilon=0.2)",
            "pf['education'].mean(epsilon=0.2)",
        ),
        "the length is always private: the mean spends a share on the count",
    ),
    Step(
        "median with candidates range(20, 60)",
        ".dp.median(candidates)",
        ("pf['experience'].median(epsilon=0.2, candidates=list(range(20, 60)))",),
    ),
    Step(
        "three quartiles with candidates",
        ".dp.quantile(a, candidates) for a in [0.25, 0.5, 0.75]",
        (
            "pf['experience'].quantile([0.25, 0.5, 0.75], epsilon=0.2, candidates=list(range(0, 60)))",
        ),
    ),
    Step(
        "summarize the quantiles (scale per quantile)",
        "query_multi_quantiles.summarize()",
        (
            "session.explain(lambda: pf['experience'].quantile([0.25, 0.5, 0.75], epsilon=0.2, candidates=list(range(0, 60)))).plain()",
        ),
    ),
)

OPENDP_GROUPING: tuple[Step, ...] = (
    Step(
        "stable keys: group by two columns, keys found privately (ε, δ)",
        "group_by('AGE', 'ILOSTAT').agg(dp.len()) with delta=1e-7",
        (
            "g = pf.groupby(['experience', 'region']).size(epsilon=0.25, delta=1e-7)\ng",
            "keys = pf.discover_keys(['experience', 'region'], epsilon=0.125, delta=1e-7)\ng = pf.groupby(['experience', 'region'], keys=keys).size(epsilon=0.125)\ng",
        ),
    ),
    Step(
        "summarize before release (accuracy and threshold)",
        "query_age_ilostat.summarize(alpha=0.05)",
        (
            "session.explain(lambda: pf.groupby(['experience', 'region']).size(epsilon=0.25, delta=1e-7)).plain()",
            "session.explain(lambda: pf.discover_keys(['experience', 'region'], epsilon=0.125, delta=1e-7)).plain()",
        ),
    ),
    Step(
        "plot the released counts by group",
        "df.sort('AGE').hvplot.line(x='AGE', y='len', by='ILOSTAT')",
        (
            "g = pf.groupby(['region', 'smsa']).size(epsilon=0.25)\ng.unstack().plot()",
            "g = pf.groupby(['region', 'smsa']).size(epsilon=0.25)\ndp.plot(g)",
        ),
    ),
    Step(
        "explicit keys: reuse released keys, no δ (with_keys)",
        ".group_by('AGE', 'ILOSTAT').agg(dp.len()).with_keys(df['AGE', 'ILOSTAT'])",
        (
            "keys = pd.DataFrame({'region': ['south', 'west'], 'smsa': ['yes', 'yes']})\npf.groupby(['region', 'smsa'], keys=keys).size(epsilon=0.25)",
        ),
    ),
    Step(
        "explicit keys as a right join",
        ".agg(dp.len()).join(keys.lazy(), how='right', on=[...])",
        (
            "keys = pd.DataFrame({'region': ['south', 'west'], 'smsa': ['yes', 'yes']})\npf.groupby(['region', 'smsa']).size(epsilon=0.25).reset_index().merge(keys, how='right', on=['region', 'smsa'])",
        ),
    ),
    Step(
        "invariant (public) keys: no threshold, every key released",
        "Margin(by=['YEAR', 'QUARTER'], invariant='keys')",
        ("pf.groupby('region').size(epsilon=0.25)",),
        "declared categories= are the public keys",
    ),
    Step(
        "error bars from the accuracy of the release",
        "summary['accuracy'] as yerr",
        ("g = pf.groupby('region').size(epsilon=0.25)\ndp.ci(g)",),
    ),
    Step(
        "preprocess before the context (filter HWUSUAL < 99)",
        "pl.scan_csv(...).filter(pl.col('HWUSUAL') < 99)",
        ("p = pf[pf['education'] < 99]\np",),
    ),
    Step(
        "mean by group with group lengths public (invariant='lengths')",
        "Margin(by=['SEX'], invariant='lengths'); group_by('SEX').agg(HWUSUAL.dp.mean((0, 98)))",
        (
            "pf.groupby('smsa')['education'].mean(epsilon=1, public_lengths=True)",
            "pf.groupby('smsa')['education'].mean(epsilon=1)",
        ),
        "group lengths are always private",
    ),
    Step(
        "label the released groups by a public table (join on the key)",
        "pl.DataFrame({'SEX': [1, 2], 'SEX_STR': [...]}).join(df, on='SEX')",
        (
            "m = pf.groupby('smsa')['education'].mean(epsilon=1)\npd.DataFrame({'smsa': ['yes', 'no'], 'label': ['city', 'rural']}).join(m, on='smsa')",
        ),
    ),
)

TUMULT: tuple[Step, ...] = (
    Step(
        "T1 Session.from_dataframe(PureDPBudget(3), source_id, dataframe)",
        "Session.from_dataframe(privacy_budget=PureDPBudget(3), source_id='members', dataframe=df)",
        (
            "s = dp.Session(epsilon=3, ledger=':memory:', name='t1')\npf = s.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)\npf",
        ),
    ),
    Step(
        "T1 total count at ε=1",
        "session.evaluate(QueryBuilder('members').count(), PureDPBudget(1))",
        ("pf.count(epsilon=1)",),
    ),
    Step(
        "T1 the same query again: another noisy value",
        "evaluate(count_query, PureDPBudget(1)) again",
        ("pf.count(epsilon=1)",),
    ),
    Step(
        "T1 compare with the true count",
        "members_df.count()",
        ("len(pf)", "pf.count()"),
        "the exact count is private",
    ),
    Step(
        "T2 session with ε=2.5",
        "Session.from_dataframe(PureDPBudget(epsilon=2.5), ...)",
        (
            "s = dp.Session(epsilon=2.5, ledger=':memory:', name='t2')\npf = s.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)\ns",
        ),
    ),
    Step(
        "T2 filtered count (age < 18 → education < 12)",
        "QueryBuilder('members').filter('age < 18').count()",
        ("pf[pf['education'] < 12].count(epsilon=1)",),
    ),
    Step("T2 remaining budget", "session.remaining_privacy_budget", ("s.remaining",)),
    Step(
        "T2 count with an IN filter",
        "filter(\"education_level IN ('masters-degree', 'doctorate-professional')\")",
        ("pf.query(\"region in ['south', 'west']\").count(epsilon=1)",),
    ),
    Step(
        "T2 over budget: refused, nothing charged",
        "evaluate(..., PureDPBudget(1)) with 0.5 left -> RuntimeError",
        ("pf.count(epsilon=1)",),
        "refused as the tutorial expects",
    ),
    Step(
        "T2 remaining unchanged after the refusal",
        "session.remaining_privacy_budget",
        ("s.remaining",),
    ),
    Step(
        "T2 spend exactly what is left",
        "evaluate(count, privacy_budget=session.remaining_privacy_budget)",
        ("pf.count(privacy=s.remaining)", "pf.count(epsilon=s.remaining.epsilon)"),
    ),
    Step(
        "T3-T5 session with an infinite budget (tutorials only)",
        "Session.from_dataframe(privacy_budget=PureDPBudget(epsilon=float('inf')), ...)",
        (
            "s = dp.Session(epsilon=float('inf'), ledger=':memory:', name='t3')\npf = s.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)\ns",
            "s = dp.Session(epsilon=1000, ledger=':memory:', name='t3')\npf = s.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)\ns",
        ),
    ),
    Step(
        "T3 average with clamping bounds low=0, high=120",
        "QueryBuilder('members').average('age', low=0, high=120)",
        (
            "pf['experience'].mean(low=-8, high=64, epsilon=1)",
            "pf['experience'].clip(-8, 64).mean(epsilon=1)",
        ),
    ),
    Step(
        "T3 sum with a bound that clips outliers (books_borrowed, high=200)",
        "QueryBuilder('members').sum('books_borrowed', low=0, high=200)",
        ("pf['wage'].clip(0, 2000).sum(epsilon=1)",),
    ),
    Step(
        "T3 look at the distribution to choose bounds (without the exact max)",
        "histogram of books_borrowed, then a judgment call",
        ("pf['wage'].approx_bounds(epsilon=0.5)",),
    ),
    Step(
        "T4 KeySet.from_dict + groupby average",
        "groupby(KeySet.from_dict({'education_level': [...]})).average('age', 0, 120)",
        ("pf.groupby('region')['experience'].mean(epsilon=1).sort_values()",),
    ),
    Step(
        "T4 keys that never occur (ages 5-17): pure-noise counts",
        "KeySet.from_dict({'age': range(5, 18)}); groupby(...).count()",
        (
            "pf.groupby('education', keys=pd.DataFrame({'education': range(18, 30)})).size(epsilon=0.1)",
            "pf.groupby(pf['education'].cut(list(range(18, 31)), right=False)).size(epsilon=0.1)",
        ),
    ),
    Step(
        "T4 two-column KeySet from a dict (cross product)",
        "KeySet.from_dict({'age': range(13, 22), 'education_level': [...]})",
        ("pf.groupby(['region', 'smsa']).size(epsilon=0.2)",),
    ),
    Step(
        "T4 inspect the KeySet's combinations",
        "teen_edu_keys.dataframe().show()",
        (
            "pf.groupby(['region', 'smsa']).keys",
            "pd.MultiIndex.from_product([CPS1988_CATEGORIES['region'], CPS1988_CATEGORIES['smsa']]).to_frame(index=False)",
        ),
    ),
    Step(
        "T4 KeySet.from_dataframe of allowed combinations",
        "KeySet.from_dataframe(spark.createDataFrame([(13, 'up-to-high-school'), ...]))",
        (
            "allowed = pd.DataFrame({'region': ['south', 'south', 'west'], 'smsa': ['yes', 'no', 'yes']})\npf.groupby(['region', 'smsa'], keys=allowed).size(epsilon=0.2)",
        ),
    ),
    Step(
        "T4 KeySet cross product with *",
        "teen_keys * edu_keys",
        (
            "dp.KeySet.from_dict({'region': CPS1988_CATEGORIES['region']}) * dp.KeySet.from_dict({'smsa': ['yes', 'no']})",
            "pd.DataFrame({'region': CPS1988_CATEGORIES['region']}).merge(pd.DataFrame({'smsa': ['yes', 'no']}), how='cross')",
        ),
    ),
    Step(
        "T5 filter then count",
        "QueryBuilder('members').filter('age < 18').count()",
        ("pf[pf['education'] < 12].count(epsilon=1)",),
    ),
    Step(
        "T5 map: bin ages into decades (a Python row function)",
        ".map(bin_age, new_column_types={'binned_age': VARCHAR}, augment=True)",
        (
            "pf.assign(binned=pf.apply(lambda row: row['experience'] // 10, axis=1)).groupby(['binned', 'region']).size(epsilon=1)",
            "pf.assign(binned=pf['experience'].cut(list(range(-10, 70, 10)), right=False)).groupby(['binned', 'region']).size(epsilon=1)",
        ),
    ),
    Step(
        "T5 flat_map: one row per favourite genre, max_num_rows=3",
        ".flat_map(expand_genre, max_num_rows=3)",
        (
            "pf['parttime'].str.split(';').explode()",
            "pf.explode('parttime')",
        ),
    ),
    Step(
        "T5 public join then count per joined column",
        "QueryBuilder('members').join_public(nc_zip_df).groupby(KeySet.from_dataframe(nc_zip_df.select('City'))).count()",
        (
            "lookup = pd.DataFrame({'region': CPS1988_CATEGORIES['region'], 'census': ['NE', 'MW', 'S', 'W']})\npf.merge(lookup, on='region').groupby('census').size(epsilon=1).sort_values(ascending=False)",
        ),
    ),
    Step(
        "T6 privacy IDs: AddRowsWithID(id_column='member_id')",
        "Session.from_dataframe(..., protected_change=AddRowsWithID(id_column='member_id'))",
        (
            "s = dp.Session(epsilon=10, ledger=':memory:', name='t6')\npu = s.private_frame(checkouts(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, privacy_unit='member_id')\npu",
            "pu = s.private_frame(checkouts(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, privacy_unit=dp.PrivacyUnit('member_id', max_rows=20))\npu",
        ),
        "dpframe asks for the per-person limit when loading; Tumult when querying",
    ),
    Step("T6 session.describe()", "session.describe()", ("s.describe()", "repr(pu)")),
    Step(
        "T6 group-by count with no per-ID limit: refused",
        "groupby(keyset).count() -> 'A constraint on the number of rows contributed by each ID is needed'",
        (
            "s.private_frame(checkouts(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, privacy_unit='member_id').groupby('region').size(epsilon=1)",
        ),
        "refused as the tutorial expects (at loading, before any query)",
    ),
    Step(
        "T6 enforce(MaxRowsPerID(20)), count per key, top five",
        ".enforce(MaxRowsPerID(20)).groupby(keyset).count(); sort desc, limit 5",
        (
            "pu.enforce(max_rows=20).groupby('region').size(epsilon=1).nlargest(5)",
            "pu.groupby('region').size(epsilon=1).nlargest(5)",
        ),
    ),
    Step(
        "T6 MaxGroupsPerID(5) + MaxRowsPerGroupPerID(1): people per key",
        ".enforce(MaxGroupsPerID('isbn', 5)).enforce(MaxRowsPerGroupPerID('isbn', 1)).groupby(top5).count()",
        (
            "pu2 = s.private_frame(checkouts(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, privacy_unit='member_id', max_rows_per_unit=20, max_groups_per_unit=4, max_rows_per_group_per_unit=1)\npu2.groupby('region').size(epsilon=1)",
        ),
    ),
    Step(
        "T6 count_distinct(member_id) per key",
        ".groupby(top_five_keyset).count_distinct(['member_id'])",
        (
            "pu.groupby('region')['member_id'].nunique(epsilon=1)",
            "pu.groupby('region').nunique('member_id', epsilon=1)",
        ),
    ),
)

DIFFPRIVLIB: tuple[Step, ...] = (
    Step(
        "BudgetAccountant(1, 0).set_default(); eps = 0.04",
        "acc = dp.BudgetAccountant(1, 0); acc.set_default()",
        (
            "s = dp.Session(epsilon=1, delta=0, ledger=':memory:', name='dpl')\npf = s.private_frame(df, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)\neps = 0.04\ns",
        ),
    ),
    Step(
        "public column ranges (not computed from the data)",
        "ranges = [(1000.0, 4000.0), (0, 360), ...]",
        ("pf.bounds",),
    ),
    Step(
        "histogram of the labels, numpy style (bins=7, range=(1, 8)) / n",
        "dp.tools.histogram(labels, epsilon=eps, bins=7, range=(1, 8))[0] / n_examples",
        (
            "np.histogram(pf['education'], bins=7, range=(0, 21))",
            "pf['education'].hist(7, epsilon=eps)",
        ),
    ),
    Step(
        "label shares (counts / n) for a categorical label",
        "hist / n_examples",
        ("pf['region'].value_counts(normalize=True, epsilon=eps)",),
    ),
    Step(
        "histogram of every column with its public range",
        "for i in range(12): dp.tools.histogram(data[:, i], bins=10, range=ranges[i], epsilon=eps)",
        ("[pf[c].hist(10, epsilon=eps) for c in ['wage', 'education', 'experience']]",),
    ),
    Step("total spend so far", "acc.total()", ("s.spent",)),
    Step("number of queries so far", "len(acc)", ("len(s.ledger)",)),
    Step(
        "2-d histogram: a feature against the label",
        "dp.tools.histogram2d(data[:, col], labels, epsilon=eps, bins=(10, 7), range=(ranges[col], (1, 8)))",
        (
            "np.histogram2d(pf['education'], pf['experience'], bins=10)",
            "dp.crosstab(pf['experience'].cut(10), pf['region'], epsilon=eps)",
        ),
    ),
    Step(
        "2-d histogram against a thresholded second feature",
        "histogram2d(col1, (col2 > 1000) + (col2 > 2000) + ..., bins=(10, 5))",
        (
            "dp.crosstab(pf['education'].cut(10), pf['wage'].cut([0, 1000, 2000, 3000, 4000, 5000]), epsilon=eps)",
        ),
    ),
    Step(
        "colour map of two numeric features (histogram2d, default bins)",
        "dp.tools.histogram2d(data[:, col1], data[:, col2], epsilon=eps, range=(...))",
        ("dp.crosstab(pf['experience'].cut(10), pf['education'].cut(10), epsilon=eps)",),
    ),
    Step(
        "mean with bounds",
        "dp.tools.mean(data[:, 0], bounds=ranges[0], epsilon=eps)",
        ("pf['wage'].mean(epsilon=eps)",),
    ),
    Step(
        "variance with bounds",
        "dp.tools.var(data[:, 0], bounds=ranges[0], epsilon=eps)",
        ("pf['wage'].var(epsilon=eps)",),
    ),
    Step(
        "share of rows meeting a condition (count_nonzero / n)",
        "dp.tools.count_nonzero(data[:, 0] >= 3000, epsilon=eps) / n_examples",
        ("(pf['wage'] >= 1000).mean(epsilon=eps)",),
    ),
    Step(
        "mean over a subset (labels == 1)",
        "dp.tools.mean(data[labels == 1, 0], bounds=ranges[0], epsilon=eps)",
        ("pf[pf['region'] == 'south']['wage'].mean(epsilon=eps)",),
    ),
    Step("total privacy loss", "acc.total()", ("s.spent",)),
    Step("remaining budget", "acc.remaining()", ("s.remaining",)),
)
