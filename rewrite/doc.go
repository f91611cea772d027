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
//     each group by min(1, L0/k).
//
// The package never runs SQL and never adds noise: that is the engine's job.
package rewrite
