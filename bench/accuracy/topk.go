package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// topKQuery is a DP top-k query and the plain SQL of every group's true
// score (key, score).
type topKQuery struct {
	Name, SQL, Truth string
	K                int
}

var topKQueries = []topKQuery{
	{"top 3 months by visits", `SELECT date_trunc('month', visit_date) AS m, COUNT(*) FROM visits GROUP BY 1 ORDER BY 2 DESC LIMIT 3`,
		`SELECT substr(visit_date, 1, 7), COUNT(*) FROM visits GROUP BY 1`, 3},
	{"top 5 ages by patients", `SELECT age, COUNT(*) FROM patients GROUP BY age ORDER BY COUNT(*) DESC LIMIT 5`,
		`SELECT age, COUNT(*) FROM patients GROUP BY age`, 5},
}

// TopKStat is the accuracy of a DP top-k at one ε.
type TopKStat struct {
	Query   string  `json:"query"`
	Epsilon float64 `json:"epsilon"`
	Runs    int     `json:"runs"`
	// ExactSet is the share of answers whose groups are exactly the true
	// top k; Overlap the mean share of the true top k they hold; Returned
	// the mean number of groups returned.
	ExactSet float64 `json:"share_exact_set"`
	Overlap  float64 `json:"mean_overlap"`
	Returned float64 `json:"mean_returned"`
	// Gap is the true scores of the k-th and (k+1)-th groups.
	Gap string `json:"gap"`
}

func (e *env) measureTopK(ctx context.Context, q topKQuery, eps float64, runs, workers int) (TopKStat, error) {
	st := TopKStat{Query: q.Name, Epsilon: eps, Runs: runs}
	rows, err := e.db.QueryContext(ctx, q.Truth)
	if err != nil {
		return st, err
	}
	type group struct {
		key   string
		score float64
	}
	var groups []group
	for rows.Next() {
		var k, v any
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return st, err
		}
		groups = append(groups, group{keyString(k), toFloat(v)})
	}
	rows.Close()
	sort.Slice(groups, func(i, j int) bool { return groups[i].score > groups[j].score })
	top := map[string]bool{}
	for _, g := range groups[:min(q.K, len(groups))] {
		top[g.key] = true
	}
	if len(groups) > q.K {
		st.Gap = fmt.Sprintf("%g vs %g", groups[q.K-1].score, groups[q.K].score)
	}
	var exact, n int
	var overlap, returned float64
	err = e.runFresh(ctx, q.SQL, eps, runs, workers, func(res *sqltypes.Result) {
		hit := 0
		for _, row := range res.Rows {
			if top[keyString(row[0])] {
				hit++
			}
		}
		n++
		returned += float64(len(res.Rows))
		overlap += float64(hit) / float64(len(top))
		if hit == len(top) && len(res.Rows) == len(top) {
			exact++
		}
	})
	if err != nil {
		return st, err
	}
	if n > 0 {
		st.ExactSet, st.Overlap, st.Returned = float64(exact)/float64(n), overlap/float64(n), returned/float64(n)
	}
	return st, nil
}

func topKMarkdown(stats []TopKStat) string {
	var sb strings.Builder
	sb.WriteString("\nDP top-k (the exponential mechanism picks k groups, `rewrite/topk.go`): how often the answer's groups are exactly the true top k, ")
	sb.WriteString("and the mean share of the true top k it holds.\n\n")
	sb.WriteString("| query | ε | exactly the true top k | mean overlap | groups returned (mean) | k-th vs (k+1)-th true score |\n|---|---|---|---|---|---|\n")
	for _, s := range stats {
		fmt.Fprintf(&sb, "| %s | %g | %.1f%% | %.1f%% | %.2f | %s |\n", s.Query, s.Epsilon, 100*s.ExactSet, 100*s.Overlap, s.Returned, s.Gap)
	}
	return sb.String()
}
