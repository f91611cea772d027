// Command accuracy measures the utility of dpproxy's answers on the demo
// dataset (issue 6, accuracy report): for the demo queries at ε = 1 and
// ε = 0.1 it runs each query many times, fresh (result cache off), through
// the engine in-process over a SQLite copy of the demo data, and compares
// the answers with
//
//   - the true answer: the plain, unbounded SQL on the same file;
//   - the bounded truth: the plan's backend SQL run once without noise
//     (what dpproxy's noise is added to), so that the bias from
//     contribution bounding is reported apart from the noise;
//   - the 95% error bound that `dpproxy explain` predicts for each
//     measurement.
//
// It writes accuracy.md, accuracy.json and accuracy.png (relative error
// against ε for COUNT, SUM and AVG) to --out.
//
//	go run ./bench/accuracy --runs 200 --out bench/results
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqltypes"
	_ "modernc.org/sqlite"
)

// query is a DP query and the plain SQL of its true answer (same columns,
// same order; group keys first as in the DP query).
type query struct {
	Name  string `json:"name"`
	SQL   string `json:"sql"`
	Truth string `json:"truth_sql"`
}

// The queries `dpproxy demo` suggests.
var demoQueries = []query{
	{"count patients", `SELECT COUNT(*) FROM patients`, `SELECT COUNT(*) FROM patients`},
	{"region count, avg income", `SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`,
		`SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`},
	{"visits by diagnosis", `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY 2 DESC`,
		`SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`},
	{"visits by month", `SELECT date_trunc('month', visit_date) AS month, COUNT(*) FROM visits GROUP BY 1 ORDER BY 1`,
		`SELECT substr(visit_date, 1, 7), COUNT(*) FROM visits GROUP BY 1`},
	{"avg visit cost", `SELECT AVG(cost) FROM visits`, `SELECT AVG(cost) FROM visits`},
	{"count visits", `SELECT COUNT(*) FROM visits`, `SELECT COUNT(*) FROM visits`},
	{"visits and patients by year", `SELECT date_trunc('year', visit_date) AS y, COUNT(*), COUNT(DISTINCT patient_id) FROM visits GROUP BY 1`,
		`SELECT substr(visit_date, 1, 4) || '-01', COUNT(*), COUNT(DISTINCT patient_id) FROM visits GROUP BY 1`},
}

// autoQueries run with the visits table's max_rows_per_unit: auto.
var autoQueries = []query{
	{"count visits (auto bound)", `SELECT COUNT(*) FROM visits`, `SELECT COUNT(*) FROM visits`},
	{"visits by diagnosis (auto bound)", `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`, `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`},
}

// The chart's queries: one aggregate each, on the patients table (one row
// per person: only clamping biases them).
var chartQueries = []query{
	{"COUNT(*)", `SELECT COUNT(*) FROM patients`, `SELECT COUNT(*) FROM patients`},
	{"SUM(income)", `SELECT SUM(income) FROM patients`, `SELECT SUM(income) FROM patients`},
	{"AVG(income)", `SELECT AVG(income) FROM patients`, `SELECT AVG(income) FROM patients`},
}

// Stat is the accuracy of one aggregate column of one query at one ε.
type Stat struct {
	Query     string  `json:"query"`
	Aggregate string  `json:"aggregate"`
	Epsilon   float64 `json:"epsilon"`
	Runs      int     `json:"runs"`
	Groups    int     `json:"groups"`
	// Observed error against the true (unbounded) answer, averaged over
	// runs and released groups.
	MeanAbsError float64 `json:"mean_abs_error"`
	MeanRelError float64 `json:"mean_rel_error"`
	// Error against the bounded truth: the noise alone.
	NoiseMeanAbs float64 `json:"noise_mean_abs_error"`
	// Bound95 is explain's 95% bound (for AVG an approximation: the
	// centred sum's bound over the bounded count); Within95 the share of
	// answers within it of the bounded truth.
	Bound95       float64 `json:"explain_error_bound_95"`
	BoundApprox   bool    `json:"bound_is_approximation,omitempty"`
	Within95      float64 `json:"share_within_bound"`
	BiasAbs       float64 `json:"bounding_bias_abs"` // mean |bounded − true| over groups
	BiasRel       float64 `json:"bounding_bias_rel"` // mean (bounded − true)/|true| over groups (signed)
	ReleasedShare float64 `json:"released_share"`    // released groups / true groups
	// IntervalTrue and IntervalBounded are the shares of answers whose
	// released 95 % interval (SET dpproxy.intervals) holds the true and
	// the bounded value: coverage with bias included, and of the noise.
	IntervalTrue    float64 `json:"interval_covers_true"`
	IntervalBounded float64 `json:"interval_covers_bounded"`
	// BiasIntervalTrue is the share of answers whose interval holds the
	// true value when the session asks for intervals, whose plans then
	// measure what bounding removed (rewrite/excess.go) — bias included —
	// and BiasIntervalWidth the mean half-width of those intervals
	// relative to the true value.
	BiasIntervalTrue  float64 `json:"bias_interval_covers_true"`
	BiasIntervalWidth float64 `json:"bias_interval_half_width_rel"`
}

func main() {
	runs := flag.Int("runs", 200, "fresh runs per query and ε")
	out := flag.String("out", "bench/results", "output directory")
	patients := flag.Int("patients", demo.DefaultPatients, "demo dataset size")
	policyPath := flag.String("policy", "cmd/dpproxy/demo_policy.yaml", "the demo policy")
	workers := flag.Int("workers", 2, "concurrent sessions")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(*runs, *out, *patients, *policyPath, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}

type env struct {
	pol *config.Policy
	srv *session.Server
	db  *sql.DB
}

// newEnv serves pol over the SQLite file at dbPath with a fresh ledger,
// the result cache off.
func newEnv(ctx context.Context, pol *config.Policy, dbPath, ledgerPath string, workers int) (*env, func(), error) {
	pol.Cache.Size = 0 // every run is a fresh release
	pol.Backend.Kind, pol.Backend.Path = config.BackendSQLite, dbPath
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	be, err := backend.OpenSQLite(ctx, dbPath, workers)
	if err != nil {
		return nil, closeAll, err
	}
	closers = append(closers, be.Close)
	store, err := budget.OpenSQLite(ctx, ledgerPath)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, store.Close)
	acct, err := budget.NewAccountant(ctx, store, map[string]budget.Cost{"analyst": {Epsilon: 1e15, Delta: 0.9}})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	eng, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, db.Close)
	srv, err := session.NewServer(ctx, eng)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, srv.Close)
	return &env{pol: pol, srv: srv, db: db}, closeAll, nil
}

func run(runs int, out string, patients int, policyPath string, workers int) error {
	ctx := context.Background()
	start := time.Now()
	dir, err := os.MkdirTemp("", "dpproxy-accuracy")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLiteWith(ctx, dbPath, demo.GenerateOptions{Patients: patients}); err != nil {
		return err
	}
	pol, err := config.Load(policyPath)
	if err != nil {
		return err
	}
	e, closeEnv, err := newEnv(ctx, pol, dbPath, filepath.Join(dir, "ledger.db"), workers)
	if err != nil {
		return err
	}
	defer closeEnv()

	var stats []Stat
	for _, q := range demoQueries {
		for _, eps := range []float64{1, 0.1} {
			s, err := e.measure(ctx, q, eps, runs, workers)
			if err != nil {
				return fmt.Errorf("%s at ε=%g: %w", q.Name, eps, err)
			}
			stats = append(stats, s...)
			fmt.Fprintf(os.Stderr, "accuracy: %s ε=%g done (%.0fs)\n", q.Name, eps, time.Since(start).Seconds())
		}
	}
	// Auto bounds: the visits table with max_rows_per_unit: auto (and no
	// total bound), each query choosing Linf from the data.
	autoPol, err := config.Load(policyPath)
	if err != nil {
		return err
	}
	for i := range autoPol.ProtectedTables {
		if t := &autoPol.ProtectedTables[i]; t.Name == "visits" {
			t.MaxRowsPerUnit, t.MaxTotalRowsPerUnit = config.RowsAuto, 0
		}
	}
	autoEnv, closeAuto, err := newEnv(ctx, autoPol, dbPath, filepath.Join(dir, "ledger-auto.db"), workers)
	if err != nil {
		return err
	}
	defer closeAuto()
	for _, q := range autoQueries {
		for _, eps := range []float64{1, 0.1} {
			s, err := autoEnv.measure(ctx, q, eps, runs, workers)
			if err != nil {
				return fmt.Errorf("%s at ε=%g: %w", q.Name, eps, err)
			}
			stats = append(stats, s...)
		}
	}
	fmt.Fprintf(os.Stderr, "accuracy: auto bounds done (%.0fs)\n", time.Since(start).Seconds())
	var tstats []TopKStat
	for _, q := range topKQueries {
		for _, eps := range []float64{1, 0.1} {
			s, err := e.measureTopK(ctx, q, eps, runs, workers)
			if err != nil {
				return fmt.Errorf("%s at ε=%g: %w", q.Name, eps, err)
			}
			tstats = append(tstats, s)
		}
	}
	var qstats []QuantileStat
	for _, q := range quantileQueries {
		for _, eps := range []float64{1, 0.1} {
			s, err := e.measureQuantile(ctx, q, eps, runs, workers)
			if err != nil {
				return fmt.Errorf("%s at ε=%g: %w", q.Name, eps, err)
			}
			qstats = append(qstats, s)
		}
	}
	fmt.Fprintf(os.Stderr, "accuracy: quantiles done (%.0fs)\n", time.Since(start).Seconds())
	chartEps := []float64{0.05, 0.1, 0.2, 0.5, 1, 2}
	var chart []Stat
	for _, q := range chartQueries {
		for _, eps := range chartEps {
			s, err := e.measure(ctx, q, eps, runs, workers)
			if err != nil {
				return fmt.Errorf("%s at ε=%g: %w", q.Name, eps, err)
			}
			chart = append(chart, s...)
		}
	}
	fmt.Fprintf(os.Stderr, "accuracy: chart series done (%.0fs)\n", time.Since(start).Seconds())

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	colours := []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}}
	var ss []series
	for i, q := range chartQueries {
		s := series{name: q.Name, col: colours[i%len(colours)]}
		for _, st := range chart {
			if st.Query == q.Name {
				s.xs = append(s.xs, st.Epsilon)
				s.ys = append(s.ys, st.MeanRelError)
				// explain's bound relative to the true value, for scale.
				s.lower = append(s.lower, st.Bound95/math.Max(1e-300, relBase(st)))
			}
		}
		ss = append(ss, s)
	}
	title := fmt.Sprintf("Mean relative error vs ε (%d patients, %d runs each)", patients, runs)
	if err := drawChart(filepath.Join(out, "accuracy.png"), title, "ε (log scale)", "mean relative error (log scale)", chartEps, ss); err != nil {
		return err
	}

	report := map[string]any{
		"patients": patients, "runs": runs, "queries": demoQueries, "stats": stats, "quantiles": qstats, "top_k": tstats,
		"chart": chart, "chart_png": "accuracy.png", "seconds": time.Since(start).Seconds(),
		"note": "errors are against the true (unbounded) answer; bias = bounded truth (backend SQL without noise, run once) minus true answer; explain's 95% bound is for the noise around the bounded truth",
	}
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "accuracy.json"), b, 0o644); err != nil {
		return err
	}
	sel, err := selectionMarkdown(pol, 1)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "accuracy.md"), []byte(markdown(stats, chart, patients, runs)+quantileMarkdown(qstats)+topKMarkdown(tstats)+sel), 0o644)
}

// relBase recovers |true| from a stat (mean abs / mean rel) for the chart's
// bound line; the chart's queries have one group.
func relBase(s Stat) float64 {
	if s.MeanRelError == 0 {
		return 1
	}
	return s.MeanAbsError / s.MeanRelError
}

// measure runs q at eps `runs` times and compares every answer.
func (e *env) measure(ctx context.Context, q query, eps float64, runs, workers int) ([]Stat, error) {
	stmts, err := rewrite.Parse(q.SQL, rewrite.PostgresFrontEnd)
	if err != nil {
		return nil, err
	}
	an, err := rewrite.Analyze(stmts[0], e.pol, rewrite.Options{Dialect: rewrite.SQLite, Epsilon: eps, FrontEnd: rewrite.PostgresFrontEnd})
	if err != nil {
		return nil, err
	}
	plan := an.Plan
	if plan == nil {
		return nil, fmt.Errorf("not a DP query")
	}
	var aggCols []int // output columns that are aggregates
	for i, o := range plan.Output {
		if o.Source.Aggregate >= 0 {
			aggCols = append(aggCols, i)
		}
	}
	truth, err := e.truth(ctx, q.Truth, plan)
	if err != nil {
		return nil, fmt.Errorf("true answer: %w", err)
	}
	bounded, bcounts := map[string][]float64{}, map[string][]float64{}
	if plan.Auto == nil { // an auto bound's bounded truth depends on the bound chosen
		if bounded, bcounts, err = e.bounded(ctx, plan); err != nil {
			return nil, fmt.Errorf("bounded truth: %w", err)
		}
	}
	// explain's bound per group (they differ between groups only for AVG).
	groupBounds := map[string][]float64{}
	var approx []bool
	meanBound := make([]float64, len(aggCols))
	for k, c := range bcounts {
		b, ap, err := explainBounds(plan, c)
		if err != nil {
			return nil, err
		}
		groupBounds[k], approx = b, ap
		for j := range b {
			meanBound[j] += b[j] / float64(len(bcounts))
		}
	}

	// The noisy runs.
	type acc struct {
		abs, rel, noise                    float64
		n, nrel, within, covT, covB, nIval int
	}
	accs := make([]acc, len(aggCols))
	released := 0
	err = e.runFresh(ctx, q.SQL, eps, runs, workers, func(res *sqltypes.Result) {
		for ri, row := range res.Rows {
			key := rowKey(row, plan)
			t, ok := truth[key]
			if !ok {
				continue
			}
			released++
			for j, c := range aggCols {
				v := toFloat(row[c])
				a := &accs[j]
				if ri < len(res.Intervals) && res.Intervals[ri][c] != nil {
					iv := res.Intervals[ri][c]
					a.nIval++
					if t[j] >= iv.Lo && t[j] <= iv.Hi {
						a.covT++
					}
					if bt, ok := bounded[key]; ok && bt[j] >= iv.Lo && bt[j] <= iv.Hi {
						a.covB++
					}
				}
				a.abs += math.Abs(v - t[j])
				a.n++
				if t[j] != 0 {
					a.rel += math.Abs(v-t[j]) / math.Abs(t[j])
					a.nrel++
				}
				if bt, ok := bounded[key]; ok && groupBounds[key] != nil {
					d := math.Abs(v - bt[j])
					a.noise += d
					if d <= groupBounds[key][j] {
						a.within++
					}
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	// Again with intervals asked for (SET dpproxy.intervals): the plans
	// measure what bounding removed; coverage of the truth and width.
	biasCov, biasN, biasWidth := make([]int, len(aggCols)), make([]int, len(aggCols)), make([]float64, len(aggCols))
	err = e.runFresh(ctx, q.SQL, eps, runs, workers, func(res *sqltypes.Result) {
		for ri, row := range res.Rows {
			t, ok := truth[rowKey(row, plan)]
			if !ok || ri >= len(res.Intervals) {
				continue
			}
			for j, c := range aggCols {
				biasN[j]++
				iv := res.Intervals[ri][c]
				if iv == nil {
					continue // no bound (a mean of too few values): not covered
				}
				if t[j] >= iv.Lo && t[j] <= iv.Hi {
					biasCov[j]++
				}
				if t[j] != 0 {
					biasWidth[j] += (iv.Hi - iv.Lo) / 2 / math.Abs(t[j])
				}
			}
		}
	}, "SET dpproxy.intervals = notice")
	if err != nil {
		return nil, err
	}

	var out []Stat
	for j, c := range aggCols {
		a := accs[j]
		st := Stat{Query: q.Name, Aggregate: aggLabel(plan, c), Epsilon: eps, Runs: runs, Groups: len(truth),
			Bound95: meanBound[j], BoundApprox: j < len(approx) && approx[j], ReleasedShare: float64(released) / float64(runs*len(truth))}
		if a.n > 0 {
			st.MeanAbsError = a.abs / float64(a.n)
			st.NoiseMeanAbs = a.noise / float64(a.n)
			st.Within95 = float64(a.within) / float64(a.n)
		}
		if a.nrel > 0 {
			st.MeanRelError = a.rel / float64(a.nrel)
		}
		if a.nIval > 0 {
			st.IntervalTrue = float64(a.covT) / float64(a.nIval)
			st.IntervalBounded = float64(a.covB) / float64(a.nIval)
		}
		if biasN[j] > 0 {
			st.BiasIntervalTrue = float64(biasCov[j]) / float64(biasN[j])
			st.BiasIntervalWidth = biasWidth[j] / float64(biasN[j])
		}
		nb := 0
		for k, t := range truth {
			if plan.Auto != nil {
				break // no bounded truth to compare
			}
			bt, ok := bounded[k]
			if !ok {
				bt = make([]float64, len(aggCols)) // a group bounding removed entirely
			}
			st.BiasAbs += math.Abs(bt[j] - t[j])
			if t[j] != 0 {
				st.BiasRel += (bt[j] - t[j]) / math.Abs(t[j])
			}
			nb++
		}
		if nb > 0 {
			st.BiasAbs /= float64(nb)
			st.BiasRel /= float64(nb)
		}
		out = append(out, st)
	}
	return out, nil
}

func aggLabel(plan *rewrite.Plan, col int) string {
	a := plan.Aggregates[plan.Output[col].Source.Aggregate]
	if a.Column == nil {
		return a.Func.String()
	}
	return fmt.Sprintf("%s(%s)", a.Func, a.Column.Name)
}

// truth runs the plain SQL: key → aggregate values.
func (e *env) truth(ctx context.Context, sqlText string, plan *rewrite.Plan) (map[string][]float64, error) {
	rows, err := e.db.QueryContext(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := map[string][]float64{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var keys []string
		var aggs []float64
		for i, o := range plan.Output {
			if o.Source.Aggregate >= 0 {
				aggs = append(aggs, toFloat(vals[i]))
			} else {
				keys = append(keys, keyString(vals[i]))
			}
		}
		out[strings.Join(keys, "|")] = aggs
	}
	return out, rows.Err()
}

// bounded runs the plan's backend SQL once and computes each aggregate
// without noise, the way the engine's release does.
func (e *env) bounded(ctx context.Context, plan *rewrite.Plan) (vals, counts map[string][]float64, err error) {
	vals, counts = map[string][]float64{}, map[string][]float64{}
	err = e.boundedInto(ctx, plan, vals, counts)
	return vals, counts, err
}

// boundedInto fills vals (key → aggregate values) and counts (key → each
// aggregate's bounded count measurement).
func (e *env) boundedInto(ctx context.Context, plan *rewrite.Plan, out, counts map[string][]float64) error {
	rows, err := e.db.QueryContext(ctx, plan.BackendSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var raws [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		raws = append(raws, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// Plans that weight groups return a row per group and k, as the
	// engine gets them: fold them the same way.
	raws, err = plan.FoldGroups(raws)
	if err != nil {
		return err
	}
	for _, vals := range raws {
		meas := make([]float64, len(plan.Measurements))
		for i, m := range plan.Measurements {
			meas[i] = measurementValue(m, vals)
		}
		var keys []string
		var aggs, cnts []float64
		for _, o := range plan.Output {
			if o.Source.Aggregate >= 0 {
				a := plan.Aggregates[o.Source.Aggregate]
				aggs = append(aggs, aggregateValue(a, meas))
				cnts = append(cnts, meas[a.Measurements[0]])
			} else {
				keys = append(keys, keyString(vals[plan.Groups[o.Source.Group].BackendColumn]))
			}
		}
		k := strings.Join(keys, "|")
		out[k], counts[k] = aggs, cnts
	}
	return nil
}

func measurementValue(m rewrite.Measurement, exact []any) float64 {
	count := toFloat(exact[m.CountColumn])
	sum, squares := 0.0, 0.0
	if m.SumColumn >= 0 {
		sum = toFloat(exact[m.SumColumn])
	}
	if m.SquaresColumn >= 0 {
		squares = toFloat(exact[m.SquaresColumn])
	}
	switch m.Kind {
	case rewrite.MeasureSum:
		return sum
	case rewrite.MeasureCenteredSum:
		return sum - m.Mid*count
	case rewrite.MeasureCenteredSquares:
		return squares - 2*m.Mid*sum + m.Mid*m.Mid*count
	}
	return count
}

func aggregateValue(a rewrite.Aggregate, meas []float64) float64 {
	switch a.Func {
	case rewrite.Avg:
		mid := (a.Bounds.Lo + a.Bounds.Hi) / 2
		return meas[a.Measurements[1]]/math.Max(1, meas[a.Measurements[0]]) + mid
	}
	return meas[a.Measurements[0]]
}

// explainBounds returns, per aggregate output column, the 95% bound of
// explain (engine.Explain) for one group: for COUNT and SUM the bound of
// its measurement; for AVG (flagged as an approximation) the centred sum's
// bound divided by the group's bounded count.
func explainBounds(plan *rewrite.Plan, counts []float64) ([]float64, []bool, error) {
	ex, err := engine.Explain(plan)
	if err != nil {
		return nil, nil, err
	}
	// Explain rows: aggregate label, measurement, ..., error_bound_95 (last).
	byMeasurement := map[string]float64{}
	for _, r := range ex.Rows {
		byMeasurement[fmt.Sprint(r[0])+"/"+fmt.Sprint(r[1])] = toFloat(r[len(r)-1])
	}
	var bounds []float64
	var approx []bool
	j := 0
	for i, o := range plan.Output {
		if o.Source.Aggregate < 0 {
			continue
		}
		a := plan.Aggregates[o.Source.Aggregate]
		label := aggLabel(plan, i)
		b := byMeasurement[label+"/"+plan.Measurements[a.Measurements[0]].Kind.String()]
		if a.Func == rewrite.Avg {
			b = byMeasurement[label+"/"+plan.Measurements[a.Measurements[1]].Kind.String()] / math.Max(1, counts[j])
		}
		bounds = append(bounds, b)
		approx = append(approx, a.Func == rewrite.Avg)
		j++
	}
	return bounds, approx, nil
}

var dateLike = regexp.MustCompile(`^\d{4}-\d{2}`)

// keyString normalizes a group key: dates (time buckets) to YYYY-MM.
func keyString(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01")
	case []byte:
		return keyString(string(x))
	case string:
		if dateLike.MatchString(x) {
			return x[:7]
		}
		return x
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

func rowKey(row []any, plan *rewrite.Plan) string {
	var keys []string
	for i, o := range plan.Output {
		if o.Source.Aggregate < 0 {
			keys = append(keys, keyString(row[i]))
		}
	}
	return strings.Join(keys, "|")
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case int:
		return float64(x)
	case sqltypes.Decimal:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	case []byte:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	}
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}

func markdown(stats, chart []Stat, patients, runs int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Demo dataset, %d patients (SQLite, in-process engine, result cache off), %d fresh runs per query and ε. "+
		"Errors are against the true, unbounded answer, averaged over runs and groups; *noise only* is against the bounded truth "+
		"(the plan's backend SQL run once without noise); *bias* is bounded truth − true answer, the cost of contribution bounding "+
		"and clamping, independent of ε. *Explain 95%%* is the half-width `dpproxy explain` predicts for the noise "+
		"(for AVG: the centred sum's bound ÷ the bounded count, an approximation); *within* is the share of answers within it of the bounded truth. "+
		"Where group keys come from the data (visits by month: partition selection), bounding keeps at most 12 groups per patient chosen at random, "+
		"so the bounded truth itself varies from run to run and the noise-only error includes that sampling variation; the demo's visits keep "+
		"at most 40 rows per patient in all (max_total_rows_per_unit), which no patient exceeds. *95%% interval, bias included* is the interval each answer "+
		"carries when the session asks for intervals (SET dpproxy.intervals; the plan then spends a tenth of ε measuring what bounding removed, "+
		"rewrite/excess.go, in a second set of fresh runs): the share of answers whose interval holds the true value, and its mean half-width relative to "+
		"the true value. *Noise-only interval* is the interval of the noise alone (the plan without those measurements): the share holding the true "+
		"value and the bounded truth. "+
		"The *auto bound* rows use max_rows_per_unit: auto for visits (no total bound): each query chooses its bound from the data, so there "+
		"is no single bounded truth to compare with.\n\n", patients, runs)
	sb.WriteString("| query | aggregate | ε | mean abs error | mean rel error | noise only (mean abs) | explain 95% | within | 95% interval, bias included: holds truth | … its half-width (rel) | noise-only interval holds truth | … holds bounded truth | bias (mean abs) | bias (mean rel, signed) | groups released |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range stats {
		approx := ""
		if s.BoundApprox {
			approx = "≈"
		}
		fmt.Fprintf(&sb, "| %s | %s | %g | %s | %.3g%% | %s | %s%s | %.0f%% | %.1f%% | %.3g%% | %.1f%% | %.1f%% | %s | %+.3g%% | %.0f%% of %d |\n",
			s.Query, s.Aggregate, s.Epsilon, num(s.MeanAbsError), 100*s.MeanRelError, num(s.NoiseMeanAbs), approx, num(s.Bound95),
			100*s.Within95, 100*s.BiasIntervalTrue, 100*s.BiasIntervalWidth, 100*s.IntervalTrue, 100*s.IntervalBounded, num(s.BiasAbs), 100*s.BiasRel, 100*s.ReleasedShare, s.Groups)
	}
	sb.WriteString("\nRelative error against ε (patients table, no GROUP BY; dashed: explain's 95% bound relative to the true value):\n\n")
	sb.WriteString("![relative error against epsilon](bench/results/accuracy.png)\n\n")
	sb.WriteString("| aggregate | ε | mean rel error | bias (rel) |\n|---|---|---|---|\n")
	sort.SliceStable(chart, func(i, j int) bool { return chart[i].Query < chart[j].Query })
	for _, s := range chart {
		fmt.Fprintf(&sb, "| %s | %g | %.3g%% | %+.3g%% |\n", s.Query, s.Epsilon, 100*s.MeanRelError, 100*s.BiasRel)
	}
	return sb.String()
}

func num(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 1:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}
