package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// quantileQuery is a DP quantile and where its true value comes from.
type quantileQuery struct {
	Name  string  `json:"name"`
	SQL   string  `json:"sql"`
	Table string  `json:"table"`
	Col   string  `json:"column"`
	Group string  `json:"group_by,omitempty"`
	Level float64 `json:"level"`
}

var quantileQueries = []quantileQuery{
	{"median age", `SELECT MEDIAN(age) FROM patients`, "patients", "age", "", 0.5},
	{"90th percentile of income", `SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY income) FROM patients`, "patients", "income", "", 0.9},
	{"median age by region", `SELECT region, MEDIAN(age) FROM patients GROUP BY region`, "patients", "age", "region", 0.5},
	{"median visit cost", `SELECT MEDIAN(cost) FROM visits`, "visits", "cost", "", 0.5},
	{"max age (the 1 quantile)", `SELECT MAX(age) FROM patients`, "patients", "age", "", 1},
}

// QuantileStat is the accuracy of one DP quantile at one ε.
type QuantileStat struct {
	Query   string  `json:"query"`
	Epsilon float64 `json:"epsilon"`
	Runs    int     `json:"runs"`
	Groups  int     `json:"groups"`
	// Errors against the true quantile (PostgreSQL's percentile_cont).
	MeanAbsError float64 `json:"mean_abs_error"`
	MeanRelError float64 `json:"mean_rel_error"`
	// RankBound95 is explain's 95 % rank error (values between the answer
	// and the true quantile); WithinRank the share of answers within it.
	RankBound95 float64 `json:"explain_rank_bound_95"`
	MeanRank    float64 `json:"mean_rank_error"`
	WithinRank  float64 `json:"share_within_rank_bound"`
}

// measureQuantile runs a quantile query `runs` times at eps and compares
// each answer with the true quantile and its rank.
func (e *env) measureQuantile(ctx context.Context, q quantileQuery, eps float64, runs, workers int) (QuantileStat, error) {
	st := QuantileStat{Query: q.Name, Epsilon: eps, Runs: runs}
	stmts, err := rewrite.Parse(q.SQL, rewrite.PostgresFrontEnd)
	if err != nil {
		return st, err
	}
	an, err := rewrite.Analyze(stmts[0], e.pol, rewrite.Options{Dialect: rewrite.SQLite, Epsilon: eps, FrontEnd: rewrite.PostgresFrontEnd})
	if err != nil {
		return st, err
	}
	ex, err := engine.Explain(an.Plan)
	if err != nil {
		return st, err
	}
	st.RankBound95 = toFloat(ex.Rows[0][6])
	values, err := e.columnValues(ctx, q)
	if err != nil {
		return st, err
	}
	st.Groups = len(values)
	valueCol := 0
	if q.Group != "" {
		valueCol = 1
	}
	var abs, rel, rank float64
	var n, within int
	err = e.runFresh(ctx, q.SQL, eps, runs, workers, func(res *sqltypes.Result) {
		for _, row := range res.Rows {
			key := ""
			if q.Group != "" {
				key = keyString(row[0])
			}
			vals, ok := values[key]
			if !ok {
				continue
			}
			v := toFloat(row[valueCol])
			truth := percentileCont(vals, q.Level)
			abs += math.Abs(v - truth)
			if truth != 0 {
				rel += math.Abs(v-truth) / math.Abs(truth)
			}
			r := rankError(vals, v, q.Level)
			rank += r
			if r <= st.RankBound95 {
				within++
			}
			n++
		}
	})
	if err != nil {
		return st, err
	}
	if n > 0 {
		st.MeanAbsError, st.MeanRelError, st.MeanRank = abs/float64(n), rel/float64(n), rank/float64(n)
		st.WithinRank = float64(within) / float64(n)
	}
	return st, nil
}

// columnValues reads a quantile query's column per group, sorted.
func (e *env) columnValues(ctx context.Context, q quantileQuery) (map[string][]float64, error) {
	group := "''"
	if q.Group != "" {
		group = q.Group
	}
	rows, err := e.db.QueryContext(ctx, fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s IS NOT NULL", group, q.Col, q.Table, q.Col))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]float64{}
	for rows.Next() {
		var g, v any
		if err := rows.Scan(&g, &v); err != nil {
			return nil, err
		}
		k := ""
		if q.Group != "" {
			k = keyString(g)
		}
		out[k] = append(out[k], toFloat(v))
	}
	for _, vs := range out {
		sort.Float64s(vs)
	}
	return out, rows.Err()
}

// percentileCont is PostgreSQL's percentile_cont of sorted values.
func percentileCont(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// rankError is how many values lie between v and the q-quantile's rank
// q·n: 0 when q·n falls among the values equal to v.
func rankError(sorted []float64, v, q float64) float64 {
	below := float64(sort.SearchFloat64s(sorted, v))
	atOrBelow := float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > v }))
	t := q * float64(len(sorted))
	return math.Max(0, math.Max(below-t, t-atOrBelow))
}

func quantileMarkdown(stats []QuantileStat) string {
	var sb strings.Builder
	sb.WriteString("\nDP quantiles (the exponential mechanism over the column's bounds, see `rewrite/quantile.go`): errors against the true quantile ")
	sb.WriteString("(PostgreSQL's percentile_cont on all values); the rank error counts the values between the answer and the true quantile, ")
	sb.WriteString("against explain's 95 % rank bound.\n\n")
	sb.WriteString("| query | ε | mean abs error | mean rel error | mean rank error | explain 95% rank bound | within | groups |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range stats {
		fmt.Fprintf(&sb, "| %s | %g | %s | %.3g%% | %s | %s | %.1f%% | %d |\n", s.Query, s.Epsilon, num(s.MeanAbsError), 100*s.MeanRelError,
			num(s.MeanRank), num(s.RankBound95), 100*s.WithinRank, s.Groups)
	}
	return sb.String()
}
