// Package rewrite turns an analyst's SQL into a plan dpproxy can answer
// with differential privacy.
//
// The pipeline is parse → analyze → plan → emit:
//
//   - Parse reads the SQL with the TiDB parser (ANSI quotes, so PostgreSQL
//     "identifiers" parse) and maps syntax errors to SQLSTATE 42601 with
//     the parser's position.
//   - Analyze checks a SELECT against the policy: one protected table,
//     allowed aggregates over declared columns, WHERE built only from
//     expressions that cannot fail on data, GROUP BY on allowed columns.
//     Anything else is rejected with an *sqlerr.Error saying why and what
//     is allowed. Queries that touch only public tables pass through.
//   - Plan derives each aggregate's measurements (noisy counts and sums)
//     with their L1 sensitivity from the table's contribution bounds (L0
//     groups per unit, Linf rows per unit per group, clamp bounds) and the
//     neighbouring definition, and splits the query's ε across them.
//   - Emit writes backend SQL for a Dialect: the inner query clamps values,
//     the middle one aggregates per (unit, group) and counts each unit's
//     groups k (or numbers them at random, for partition selection), the
//     outer one caps each unit's counts at Linf, scales its sums down to
//     Linf values and aggregates per group and k (or per group, keeping L0
//     random groups per unit). Plan.FoldGroups then weights the rows of
//     each group by min(1, L0/k). With the total bound, the outer level
//     weighs each unit's cells by min(1, C/T) (bounding.go; on MySQL
//     computed for heavy units only, and with Linf ≥ C on every backend
//     where the unit is declared NOT NULL, the other units summed straight
//     from the rows: heavy.go). On PostgreSQL the plan also holds the
//     same SQL with the query's constants as parameters (Plan.Bound,
//     constants.go): queries that differ only in their constants are then
//     one statement, which the backend prepares once per connection.
//   - A Shape (shape_text.go) is a PostgreSQL text with the integers its
//     WHERE compares columns with taken out; a Template (template.go) is
//     the plan of a shape with those constants' markers still in its SQL,
//     admitted only when three analyses of the shape agree, so that each
//     text of the shape gets exactly the plan a full analysis gives it,
//     without being parsed or analyzed.
//
// The package never runs SQL and never adds noise: that is the engine's job.
//
// # Privacy of a plan
//
// What follows is the argument that a plan's release is (ε, δ)-DP under
// each neighbouring definition, step by step. Each step has a test: the
// sensitivities and selection calibration are checked on hand-built worst
// cases in sensitivity_test.go, and the whole release path is audited
// black-box on neighbouring databases in the engine (privacy_test.go).
//
// Notation: L0 groups per unit, Linf rows per unit per group, values
// clamped to [lo, hi], M = max(|lo|, |hi|), h = (hi − lo)/2, mid = (lo +
// hi)/2. Add/remove neighbours: D′ is D with one unit's rows added or
// removed. Replace neighbours: one unit's rows are changed (it may move to
// other groups, or be filtered out by WHERE).
//
// 1. Bounding depends only on the unit's own rows. WHERE filters each row
// by its own values; the unit's groups, its count per group (capped at
// Linf), its sums (scaled to Linf values), its number of groups k and its
// random choice of L0 groups are computed from its rows alone. So between
// neighbours the bounded data of every other unit is the same.
//
// 2. One unit's contribution to one group's value of a measurement (see
// Plan.contribution) lies in a fixed range: counts in [0, Linf], distinct
// units in [0, 1], sums in [Linf·min(0, lo), Linf·max(0, hi)] (magnitude
// Linf·M: a unit's c > Linf values are scaled to Linf·mean, inside the
// range), centred sums Σ(x − mid) in [−Linf·h, Linf·h], centred squares
// Σ(x − mid)² in [0, Linf·h²].
//
// 3. Without GROUP BY there is one group. Add/remove moves it by the
// contribution's magnitude: Linf, 1, Linf·M, Linf·h, Linf·h². Replace
// moves it from one value of the range to another: by the range's width,
// Linf, 1, Linf·(max(0, hi) − min(0, lo)) = Linf·max(hi − lo, M),
// 2·Linf·h = Linf·(hi − lo), Linf·h². (COUNT and COUNT(DISTINCT unit) are
// not 0 under replace: the changed rows may fall outside WHERE.)
//
// 4. With GROUP BY and partition selection, the unit keeps at most L0
// groups. Add/remove changes at most L0 groups, each by at most the
// magnitude: L1 sensitivity L0·magnitude. Replace removes the unit from
// up to L0 groups and adds it to up to L0 (possibly the same) groups:
// at most 2·L0 groups change by the magnitude, and a group it stays in
// changes by at most the width ≤ 2·magnitude, counting for two of the
// 2·L0. So the sensitivity is changedGroups·magnitude, changedGroups = L0
// (add/remove) or 2·L0 (replace).
//
// 5. With public key lists (WeightsGroups), a unit in k groups weighs
// w = min(1, L0/k) in each: the sum of its weighted contributions' magnitudes
// over all groups is k·w·magnitude ≤ L0·magnitude. Add/remove: L1 change
// ≤ L0·magnitude; replace: its old weighted contributions out, its new
// ones in, ≤ 2·L0·magnitude. Same bounds as 4, and k depends only on the
// unit's rows (1). FoldGroups applies w in exact rationals after the
// backend's sums, so no rounding pushes a unit past L0 groups' worth.
// COUNT(DISTINCT unit) is weighted the same way (magnitude 1).
//
// 6. The random choice of L0 groups (partition selection plans) is, for
// each unit, a function of its own rows and of randomness independent of
// everything else (1). The other units' choices have the same distribution
// on D and D′: condition on them, so they are the same on both sides. Then
// for any choice c of the changed unit on D and any c′ on D′ the bounded
// databases are neighbours in the sense of 4 (≤ changedGroups groups, each
// unit count by ≤ 1), and the mixture over the unit's choices satisfies
// the same inequality: P[M(D) ∈ S] = Σ_c P(c)·P[M(D, c) ∈ S] ≤
// Σ_c Σ_c′ P(c)·P′(c′)·(e^ε·P[M(D′, c′) ∈ S] + δ) = e^ε·P[M(D′) ∈ S] + δ.
// The draws must only be independent of how many the changed unit uses
// (a deterministic choice from the unit's own rows would do as well); the
// argument needs no cryptographic quality from the backend's random().
//
// 7. Partition selection releases a group with probability π(n), n its
// number of distinct (kept) units. Between neighbours, n changes by at most
// one in at most changedGroups groups (4, 6): L0 under add/remove, 2·L0
// under replace, where the unit leaves up to L0 groups and joins up to L0
// others. Each group's test is (ε_s/changedGroups, δ/changedGroups)-DP in
// n, so by basic composition over the changed groups (the others' outputs
// have identical distributions) the released key set is (ε_s, δ)-DP.
// Calibrating for L0 under replace, as before issue 10, spent 2·ε_s and
// 2·δ. A group that exists only because of the unit has n = 1 and is
// released with probability π(1) ≤ δ/changedGroups: that is where δ goes.
// With public key lists nothing is selected: exactly the listed keys are
// released, a set that does not depend on the data.
//
// 7′. When the plan thresholds a count instead (CountThreshold: a count of
// distinct units, or of rows, with Laplace noise, when that releases
// groups at least as readily as 7 for the plan's bounds), the selection is
// the released noisy count itself: a group is kept when it exceeds τ. For
// the groups both neighbours have this is post-processing of the
// measurement (8). A group only one side has exists because of the unit
// alone: its count is at most MaxAlone (1 unit, or Linf rows) and it
// passes with probability ≤ δ/L0, over at most L0 such groups: δ. The
// selection then spends no ε of its own.
//
// 8. Each measurement gets Laplace noise of scale sensitivity/ε_m over all
// groups at once: ε_m-DP for the whole vector of its per-group values
// (released groups only: dropping groups is post-processing of the vector
// and the selection). A measurement of sensitivity 0 (lo = hi) is the same
// on every database and released as it is. Counts are whole numbers and
// get discrete Laplace noise unless weighted (5); other values get grid
// noise whose sensitivity covers the rounding to the grid (mechanisms).
//
// 9. The ε split: the query's ε is divided equally between its
// measurements and, when present, the selection (ε_m = ε_s = ε/parts);
// basic composition gives (Σε, δ) = (ε, δ): δ is spent by the selection
// alone, measurements are pure ε-DP. Everything after the noise is
// post-processing and free: AVG = noisy centred sum / max(1, noisy count)
// + mid clamped to [lo, hi]; the variance family from count, centred sum
// and centred squares, clamped to [0, h²]; rounding and clamping counts
// at 0; ORDER BY, LIMIT and outer queries over the released rows.
//
// 10. Row privacy (each row a unit): L0 = Linf = 1 by construction; every
// step above applies with those values (replace: a row that changes group
// moves two groups by one row). The same holds for a table whose unit is
// its primary key (one column, never NULL, unique in all a scan reads:
// config.ProtectedTable.UnitIsKey) in a query that joins nothing to it:
// each unit is one row of what is aggregated, so the per-unit step is
// the identity and is left out (Plan.OneRowPerUnit). WHERE only removes
// rows and subqueries in it read public tables only, so no row is
// repeated. A join, even with a public table, may repeat a row: it keeps
// the per-unit step with the table's own bounds.
//
// For the other mechanisms, the same reasoning gives:
//   - Gaussian noise needs the L2 sensitivity. Add/remove: at most L0
//     groups each by ≤ magnitude, and with weights Σ_g w² ≤ L0 (k groups of
//     (L0/k)²), so √L0·magnitude. Replace: at most 2·L0 groups by the
//     magnitude, or groups the unit stays in by up to the width ≤
//     2·magnitude, each such group taking two of the 2·L0 (with weights,
//     Cauchy–Schwarz on the old and new weighted contributions gives the
//     same): the L2 sensitivity is √(L0·max(width², 2·magnitude²)). It
//     exceeds the naive √(2·L0)·magnitude exactly when width > √2·magnitude:
//     always for centred sums (width = 2·magnitude), and for plain sums when
//     min(|lo|, |hi|) > (√2 − 1)·max(|lo|, |hi|) with lo < 0 < hi.
//     Ungrouped replace: the width.
//   - Quantiles (quantile.go) by the exponential mechanism over a fixed
//     grid with the score of mechanisms.Quantile:
//     the unit removes b₁ ≤ Linf values, a₁ of them below c, and adds
//     b₂ ≤ Linf, a₂ below c (add/remove: one of the two is empty), so the
//     score moves by (a₂ − q·b₂) − (a₁ − q·b₁), each term in
//     [−q·Linf, (1 − q)·Linf]: by at most Linf under both definitions. Per group,
//     quantiles of the changed groups compose like selection (7).
//     Each unit keeps L0 random groups and weighs at most Linf in each
//     (values scaled by min(1, Linf/c)), as in 1 and 6.
//   - COUNT(DISTINCT column) (distinct.go): each unit keeps Linf random
//     distinct values per group in L0 random groups; a group's count moves
//     by at most Linf when the unit comes, goes or changes, so it is a
//     count of magnitude and width Linf in 2–4.
//   - GROUP BY numeric bins (numericbin.go) are group keys computed from a
//     row's own value (1); bins of a bounded column and width_bucket's
//     buckets are a public key list (5), other bins pass selection (7).
//   - Top-k by the exponential mechanism or Gumbel noise over group
//     counts: its sensitivity is the most one candidate's score moves,
//     Linf under both definitions; the number of changed groups does not
//     enter, but each of the k picks costs its share of ε.
//
// Not covered by these bounds: floating-point summation order in the
// backend (Casacuberta et al. 2022; SQLite sums doubles), which can move
// a sum by a few ulps beyond the ideal bound.
package rewrite
