// Command report turns the raw output of bench/run.sh (raw.jsonl,
// gobench.txt, run.txt, accuracy.md in --results) into results.md,
// results.json and BENCHMARKS.md: medians and spread (min–max) over the
// repeated runs, each figure beside its target from issue 18 ("Performance
// v2"), or from issue 6 where issue 18 sets none (workloads 1, 7, 8 and the
// group commit of 5), and the scale figures of workload 10.
package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type loadResult struct {
	// Run is the run of bench/run.sh the result belongs to (rawLine's).
	Run      int     `json:"-"`
	Queries  int64   `json:"queries"`
	Errors   int64   `json:"errors"`
	FirstErr string  `json:"first_error"`
	Seconds  float64 `json:"seconds"`
	QPS      float64 `json:"qps"`
	P50US    float64 `json:"p50_us"`
	P99US    float64 `json:"p99_us"`
	// RoundsUS are loadgen alternate's latencies, round by round.
	RoundsUS  []float64 `json:"rounds_us"`
	MeanUS    float64   `json:"mean_us"`
	LedgerTx  int64     `json:"ledger_transactions"`
	LedgerChg int64     `json:"ledger_charges"`
	// LedgerTxUS is the mean wall time of the ledger's transactions in
	// the run, from dpproxy's own counters (loadgen run --metrics).
	LedgerTxUS float64 `json:"ledger_transaction_us"`
	// ClientCPUUS is the load generator's own CPU per query.
	ClientCPUUS float64 `json:"client_cpu_us_per_query"`
	ProcCPUUS   float64 `json:"proc_cpu_us_per_query"`
	// MachineCPUUS is every process's CPU time per query, MachineBusy the
	// share of the machine's CPU time in use (loadgen run).
	MachineCPUUS float64 `json:"machine_cpu_us_per_query"`
	MachineBusy  float64 `json:"machine_busy"`
	MachineCores int     `json:"machine_cores"`
	// idle
	Conns       int64   `json:"conns"`
	Failed      int64   `json:"failed"`
	RSSBase     int64   `json:"rss_base_kb"`
	RSSIdle     int64   `json:"rss_idle_kb"`
	ConnectSecs float64 `json:"connect_seconds"`
	ProcCPUConn float64 `json:"proc_cpu_us_per_conn"`
	// workload 10's generated datasets (Seconds: the load time)
	Visits   int64 `json:"visits"`
	Patients int64 `json:"patients"`
}

type rawLine struct {
	Series string     `json:"series"`
	Run    int        `json:"run"`
	Data   loadResult `json:"data"`
}

// Row is one line of the results table.
type Row struct {
	Workload string    `json:"workload"`
	Figure   string    `json:"figure"`
	Unit     string    `json:"unit"`
	Median   float64   `json:"median"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	Values   []float64 `json:"values"`
	Target   string    `json:"target,omitempty"`
	Pass     *bool     `json:"pass,omitempty"`
	Note     string    `json:"note,omitempty"`
}

func main() {
	dir := flag.String("results", "bench/results", "results directory")
	mdPath := flag.String("benchmarks-md", "BENCHMARKS.md", "BENCHMARKS.md to regenerate")
	flag.Parse()
	if err := run(*dir, *mdPath); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(dir, mdPath string) error {
	info := readKV(filepath.Join(dir, "run.txt"))
	series := map[string][]loadResult{}
	var errs []string
	f, err := os.Open(filepath.Join(dir, "raw.jsonl"))
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l rawLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("raw.jsonl: %w", err)
		}
		l.Data.Run = l.Run
		series[l.Series] = append(series[l.Series], l.Data)
		if l.Data.Errors > 0 || l.Data.Failed > 0 {
			errs = append(errs, fmt.Sprintf("%s run %d: %d errors (first: %s)", l.Series, l.Run, l.Data.Errors+l.Data.Failed, l.Data.FirstErr))
		}
	}
	f.Close()

	bench := parseGoBench(filepath.Join(dir, "gobench.txt"))
	floors := gatherFloors(series, bench)
	var rows []Row
	per := func(name string, fn func(loadResult) float64) []float64 {
		var v []float64
		for _, r := range series[name] {
			v = append(v, fn(r))
		}
		return v
	}
	paired := func(a, b string) []float64 { return pairedRatios(series[a], series[b]) }
	p50 := func(r loadResult) float64 { return r.P50US }
	p99 := func(r loadResult) float64 { return r.P99US }
	qps := func(r loadResult) float64 { return r.QPS }

	// 1 and 2.
	proxy, direct, orig := per("w1.proxy", p50), per("w1.direct_rewritten", p50), per("w2.direct_original", p50)
	rows = append(rows,
		mk("1 DP aggregate, cache off", "latency through dpproxy ÷ rewritten SQL directly"+figPaired, "×", paired("w1.proxy", "w1.direct_rewritten"), "≤ 1.10", le(1.10)),
		mk("1 DP aggregate, cache off", "latency through dpproxy (p50)", "ms", scale(proxy, 1e-3), "", nil),
		mk("1 DP aggregate, cache off", "rewritten SQL directly on PostgreSQL (p50)", "ms", scale(direct, 1e-3), "", nil),
		mk(w2Name, figW2PG, "×", paired("w1.direct_rewritten", "w2.direct_floor"), "≤ 1.2", le(1.2)),
		mk(w2Name, "rewritten ÷ original SQL, both directly on PostgreSQL"+figPaired, "×", paired("w1.direct_rewritten", "w2.direct_original"), "", nil),
		mk("2 cost of contribution bounding", "original SQL directly on PostgreSQL (p50)", "ms", scale(orig, 1e-3), "", nil),
		mk(w2Name, "floor: GROUP BY (unit, group) alone ÷ original SQL, on PostgreSQL"+figPaired, "×",
			paired("w2.direct_floor", "w2.direct_original"), "", nil),
	)
	rows[len(rows)-1].Note = "the least work a bounding of every person's rows does (one row per patient and diagnosis, nothing else)"
	if k := per("w2k.direct_original", p50); len(k) > 0 {
		keyed := "2b bounding on a table keyed by its unit (patients)"
		rows = append(rows,
			mk(keyed, "rewritten ÷ original SQL, both directly on PostgreSQL"+figPaired, "×", paired("w2k.direct_rewritten", "w2k.direct_original"), "", nil),
			mk(keyed, "per-person form ÷ original SQL (the bounding step a key makes needless)"+figPaired, "×", paired("w2k.direct_per_unit", "w2k.direct_original"), "", nil),
			mk(keyed, "original SQL directly on PostgreSQL (p50)", "ms", scale(k, 1e-3), "", nil),
		)
		rows[len(rows)-3].Note = "patient_id is the primary key of patients: each person is one row, and dpproxy sends the query without the per-person step"
	}
	myMeasured := len(series["w9.w1.proxy"]) > 0
	notMeasured := func(workload, figure, target string) Row {
		note := info["mysql_note"]
		if note == "" {
			note = "no data"
		}
		return Row{Workload: workload, Figure: figure, Target: target, Note: "not measured: " + note,
			Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	myDirect, myOrig := per("w9.w1.direct_rewritten", p50), per("w2.mariadb.direct_original", p50)
	if myMeasured {
		rows = append(rows,
			mk(w2MyName, figW2My, "×", paired("w9.w1.direct_rewritten", "w2.mariadb.direct_floor"), "≤ 1.5", le(1.5)),
			mk(w2MyName, "rewritten ÷ original SQL, both directly on MariaDB"+figPaired, "×", paired("w9.w1.direct_rewritten", "w2.mariadb.direct_original"), "", nil),
			mk("2 cost of contribution bounding, MariaDB", "original SQL directly on MariaDB (p50)", "ms", scale(myOrig, 1e-3), "", nil),
			mk(w2MyName, "floor: GROUP BY (unit, group) alone ÷ original SQL, on MariaDB"+figPaired, "×",
				paired("w2.mariadb.direct_floor", "w2.mariadb.direct_original"), "", nil),
		)
		if sorted := per("w2.mariadb.direct_floor_sorted", p50); len(sorted) > 0 {
			rows = append(rows, mk(w2MyName, figW2MySorted, "×", paired("w9.w1.direct_rewritten", "w2.mariadb.direct_floor_sorted"), "", nil))
			rows[len(rows)-1].Note = "the floor written with the hint the rewrite carries: MariaDB then groups by sorting, faster than its temporary table when it only counts; the rewrite's own per-(unit, group) level, sums included, sorts no faster than the plain floor"
		}
	} else {
		rows = append(rows, notMeasured("2 cost of contribution bounding, MariaDB", "rewritten ÷ floor, on MariaDB (p50)", "≤ 1.5"))
	}
	// 3.
	rows = append(rows,
		mk("3 cache hit, 1 client", "p50 latency", "µs", per("w3.c1", p50), "≤ 50 µs", le(50)),
		mk("3 cache hit, 1 client", "p99 latency", "µs", per("w3.c1", p99), "", nil),
	)
	rows = append(rows, cacheFloorRows("3 cache hit, 1 client", "PostgreSQL", floors.hit)...)
	rows = append(rows,
		mk("3 cache hit, 16 clients", "queries/s", "q/s", per("w3.c16", qps), "", nil),
		mk("3 cache hit, 16 clients", "p50 latency (includes queueing: 16 clients on the cores)", "µs", per("w3.c16", p50), "", nil),
		mk("3 cache hit, 16 clients", "p99 latency", "µs", per("w3.c16", p99), "", nil),
	)
	// 4. Each run's targets ran in slices in turns (loadgen turns): its
	// totals cover the same seconds, so a run's ratio pairs them.
	for _, mode := range []string{"simple", "extended"} {
		px, pb, dr := per("w4."+mode+".proxy", qps), per("w4."+mode+".pgbouncer", qps), per("w4."+mode+".direct", qps)
		w := "4 passthrough, public table, 16 clients, " + mode + " protocol"
		rows = append(rows,
			mk(w, "dpproxy TPS ÷ PgBouncer TPS", "×", pairRatio(px, pb), "≥ 1.0", ge(1.0)),
			mk(w, "dpproxy TPS ÷ direct TPS", "×", pairRatio(px, dr), "", nil),
			mk(w, "PgBouncer TPS ÷ direct TPS", "×", pairRatio(pb, dr), "", nil),
			mk(w, "TPS dpproxy / PgBouncer / direct", "q/s", px, "", nil),
		)
		rows[len(rows)-1].Note = fmt.Sprintf("PgBouncer median %.0f, direct median %.0f", median(pb), median(dr))
		cpu := func(r loadResult) float64 { return r.ProcCPUUS }
		pc, pbc := per("w4."+mode+".proxy", cpu), per("w4."+mode+".pgbouncer", cpu)
		// Runs without both figures (an unreadable /proc) give none.
		rows = append(rows, mk(w, "CPU per query, dpproxy ÷ PgBouncer", "×", pairRatio(pc, pbc), "≤ 1.2", le(1.2)))
		if len(pc) > 0 && pc[0] > 0 {
			rows = append(rows, mk(w, "CPU time per query, dpproxy (user + system, kernel TCP work included)", "µs", pc, "", nil))
			rows[len(rows)-1].Note = fmt.Sprintf("PgBouncer median %.1f µs", median(pbc))
		}
		rows = append(rows, passFloorRows(w, floors.pass[mode])...)
		rows = append(rows, oneProcessorRows(w, per("w4."+mode+".proxy1p", qps), per("w4."+mode+".proxy1p", cpu), px, pb, pbc)...)
	}
	rows = append(rows, chargedRows(series, floors.w5)...)
	rows = append(rows, chargedCeilingRows(w5Name, floors.w5, info["w5_direct_note"])...)
	// 6.
	rows = append(rows, idleRows(series["w6"], info)...)

	// 7 and 8 from the Go benchmarks.
	var pa []string
	for name := range bench {
		if strings.HasPrefix(name, "ParseAnalyzeRewrite/") || name == "ParseAnalyzeRewriteParams" {
			pa = append(pa, name)
		}
	}
	sort.Strings(pa)
	for _, name := range pa {
		ns := bench[name]["ns/op"]
		rows = append(rows, mk("7 parse + analyze + rewrite", strings.TrimPrefix(name, "ParseAnalyzeRewrite/")+
			fmt.Sprintf(" (%.0f allocs)", median(bench[name]["allocs/op"])), "µs", scale(ns, 1e-3), "≤ 50 µs", le(50)))
	}
	for _, name := range []string{"LaplaceInt", "LaplaceFloat", "GaussianInt", "GaussianFloat"} {
		var sps []float64
		for _, ns := range bench[name]["ns/op"] {
			sps = append(sps, 1e9/ns)
		}
		rows = append(rows, mk("8 secure noise sampling, one core", name+" samples/s", "/s", sps, "≥ 1,000,000/s", ge(1e6)))
	}
	// 9: workloads 1, 3 and 4 through the MySQL front end, MariaDB backend.
	if myMeasured {
		myProxy := per("w9.w1.proxy", p50)
		rows = append(rows,
			mk("9 MySQL front end: 1 DP aggregate, cache off", "latency through dpproxy ÷ rewritten SQL directly on MariaDB"+figPaired, "×", paired("w9.w1.proxy", "w9.w1.direct_rewritten"), "≤ 1.10", le(1.10)),
			mk("9 MySQL front end: 1 DP aggregate, cache off", "latency through dpproxy (p50)", "ms", scale(myProxy, 1e-3), "", nil),
			mk("9 MySQL front end: 1 DP aggregate, cache off", "rewritten SQL directly on MariaDB (p50)", "ms", scale(myDirect, 1e-3), "", nil),
			mk("9 MySQL front end: 3 cache hit, 1 client", "p50 latency", "µs", per("w9.w3.c1", p50), "≤ 50 µs", le(50)),
			mk("9 MySQL front end: 3 cache hit, 1 client", "p99 latency", "µs", per("w9.w3.c1", p99), "", nil),
		)
		rows = append(rows, cacheFloorRows("9 MySQL front end: 3 cache hit, 1 client", "MariaDB", floors.myHit)...)
		rows = append(rows,
			mk("9 MySQL front end: 3 cache hit, 16 clients", "queries/s", "q/s", per("w9.w3.c16", qps), "", nil),
			mk("9 MySQL front end: 3 cache hit, 16 clients", "p50 latency (includes queueing: 16 clients on the cores)", "µs", per("w9.w3.c16", p50), "", nil),
			mk("9 MySQL front end: 3 cache hit, 16 clients", "p99 latency", "µs", per("w9.w3.c16", p99), "", nil),
		)
		for _, m := range []struct{ mode, name, pg string }{
			{"simple", "text protocol (COM_QUERY)", "simple"},
			{"extended", "binary protocol (prepare, execute, close per query)", "extended"},
		} {
			px, dr := per("w9.w4."+m.mode+".proxy", qps), per("w9.w4."+m.mode+".direct", qps)
			w := "9 MySQL front end: 4 passthrough, public table, 16 clients, " + m.name
			r := mk(w, "dpproxy TPS ÷ direct MariaDB TPS", "×", pairRatio(px, dr), "≥ 0.8", ge(0.8))
			if pgr := pairRatio(per("w4."+m.pg+".proxy", qps), per("w4."+m.pg+".direct", qps)); len(pgr) > 0 {
				r.Note = strings.TrimSpace(r.Note + " " + fmt.Sprintf("PostgreSQL %s protocol in this run: dpproxy ÷ direct %s", m.pg, fmtNum(median(pgr))))
			}
			rows = append(rows, r, mk(w, "TPS dpproxy / direct", "q/s", px, "", nil))
			rows[len(rows)-1].Note = fmt.Sprintf("direct median %.0f", median(dr))
			if pc := per("w9.w4."+m.mode+".proxy", func(r loadResult) float64 { return r.ProcCPUUS }); len(pc) > 0 && pc[0] > 0 {
				rows = append(rows, mk(w, "CPU time per query, dpproxy (user + system)", "µs", pc, "", nil))
			}
			rows = append(rows, myPassFloorRows(w, floors.my[m.mode])...)
		}
	} else {
		rows = append(rows, notMeasured("9 MySQL front end", "workloads 1, 3, 4 against MariaDB", "≤ 1.10, ≤ 50 µs, ≥ 0.8"))
	}
	// 10: scale figures, without targets.
	scl := scaleFigures(series, info)
	rows = append(rows, scl.rows...)

	machine := machineInfo(info)
	out := map[string]any{"machine": machine, "run": info, "results": rows, "go_benchmarks": bench, "errors": errs}
	b, err := json.MarshalIndent(sanitize(out), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	table := resultsTable(rows)
	var md strings.Builder
	fmt.Fprintf(&md, "# dpproxy benchmark results\n\n%s\n%s\n", machineMD(machine, info), table)
	md.WriteString("\n" + scl.md)
	if len(errs) > 0 {
		md.WriteString("\n**Errors during the run:**\n\n")
		for _, e := range errs {
			fmt.Fprintf(&md, "- %s\n", e)
		}
	}
	md.WriteString("\n## Go micro-benchmarks (median of runs)\n\n" + goBenchTable(bench))
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	acc, _ := os.ReadFile(filepath.Join(dir, "accuracy.md"))
	return os.WriteFile(mdPath, []byte(benchmarksMD(machine, info, table, scl.md, whyMD(rows, floors, bench, info), errs, goBenchTable(bench), string(acc))), 0o644)
}

// chargedRates is each run's charged queries per second and ledger
// transactions per charge.
func chargedRates(runs []loadResult) (charged, txPer []float64) {
	for _, r := range runs {
		if r.Seconds > 0 {
			charged = append(charged, float64(r.LedgerChg)/r.Seconds)
		}
		if r.LedgerChg > 0 {
			txPer = append(txPer, float64(r.LedgerTx)/float64(r.LedgerChg))
		}
	}
	return charged, txPer
}

// mostChargedOfEachRun is, run by run (in the order of the runs), the
// largest charged rate any of parts measured in that run.
func mostChargedOfEachRun(parts ...[]loadResult) []float64 {
	most := map[int]float64{}
	for _, part := range parts {
		for _, r := range part {
			if r.Seconds > 0 {
				most[r.Run] = max(most[r.Run], float64(r.LedgerChg)/r.Seconds)
			}
		}
	}
	var out []float64
	for _, run := range slices.Sorted(maps.Keys(most)) {
		out = append(out, most[run])
	}
	return out
}

func mk(workload, figure, unit string, v []float64, target string, check func(float64) bool) Row {
	r := Row{Workload: workload, Figure: figure, Unit: unit, Values: v, Target: target}
	if len(v) == 0 {
		r.Median, r.Min, r.Max = math.NaN(), math.NaN(), math.NaN()
		r.Note = "no data"
		return r
	}
	r.Median, r.Min, r.Max = median(v), slices.Min(v), slices.Max(v)
	if check != nil {
		p := check(r.Median)
		r.Pass = &p
	}
	return r
}

// figPaired ends the name of a ratio between two targets of loadgen
// alternate (see pairedRatios).
const figPaired = " (each round's pair, median)"

// pairedRatios divides each round of a by the same round of b, run by run:
// loadgen alternate ran the two next to each other in that round, so
// each ratio sees one machine speed (it drifts by up to half within
// seconds here, which a ratio of separate medians mixes in). Runs without
// rounds (results from before loadgen reported them) give the ratio of
// their p50s.
func pairedRatios(a, b []loadResult) []float64 {
	var v []float64
	for i := range min(len(a), len(b)) {
		ra, rb := a[i].RoundsUS, b[i].RoundsUS
		if len(ra) == 0 || len(ra) != len(rb) {
			if b[i].P50US > 0 {
				v = append(v, a[i].P50US/b[i].P50US)
			}
			continue
		}
		for k := range ra {
			if rb[k] > 0 {
				v = append(v, ra[k]/rb[k])
			}
		}
	}
	return v
}

func le(t float64) func(float64) bool { return func(v float64) bool { return v <= t } }
func ge(t float64) func(float64) bool { return func(v float64) bool { return v >= t } }
func lt(t float64) func(float64) bool { return func(v float64) bool { return v < t } }

func scale(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * k
	}
	return out
}

// oneProcessorRows are workload 4's rows for dpproxy on one processor
// (GOMAXPROCS=1), run in the same turns as the default dpproxy (tps and
// cpu its figures; proxyTPS the default's, pgbTPS and pgbCPU PgBouncer's).
func oneProcessorRows(w string, tps, cpu, proxyTPS, pgbTPS, pgbCPU []float64) []Row {
	if len(tps) == 0 {
		return nil
	}
	rows := []Row{
		mk(w, figOneProcTPSPgb, "×", pairRatio(tps, pgbTPS), "", nil),
		mk(w, "dpproxy on one processor TPS ÷ dpproxy TPS", "×", pairRatio(tps, proxyTPS), "", nil),
	}
	if c := positive(cpu); len(c) > 0 {
		rows = append(rows,
			mk(w, figOneProcCPUPgb, "×", pairRatio(cpu, pgbCPU), "", nil),
			mk(w, figOneProcCPU, "µs", c, "", nil))
	}
	return rows
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtNum(f float64) string {
	switch {
	case math.IsNaN(f):
		return "—"
	case math.Abs(f) >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', 2, 64) + "M"
	case math.Abs(f) >= 1000:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}

func resultsTable(rows []Row) string {
	var sb strings.Builder
	sb.WriteString("| workload | figure | measured (median) | spread (min – max) | target | pass/fail |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		pass := ""
		if r.Pass != nil {
			pass = map[bool]string{true: "pass", false: "**FAIL**"}[*r.Pass]
		}
		meas := fmtNum(r.Median) + " " + r.Unit
		spread := ""
		if len(r.Values) == 1 {
			spread = "(n=1)"
		} else if !math.IsNaN(r.Median) {
			spread = fmt.Sprintf("%s – %s (n=%d)", fmtNum(r.Min), fmtNum(r.Max), len(r.Values))
		}
		if r.Note != "" {
			if math.IsNaN(r.Median) {
				meas = "—"
			}
			spread = strings.TrimSpace(spread + " " + r.Note)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", r.Workload, r.Figure, strings.TrimSpace(meas), spread, r.Target, pass)
	}
	return sb.String()
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parseGoBench reads `go test -bench` output: name → unit → values.
func parseGoBench(path string) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		if out[m[1]] == nil {
			out[m[1]] = map[string][]float64{}
		}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			out[m[1]][f[i+1]] = append(out[m[1]][f[i+1]], v)
		}
	}
	return out
}

func goBenchTable(bench map[string]map[string][]float64) string {
	var names []string
	for n := range bench {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("| benchmark | ns/op | B/op | allocs/op | other |\n|---|---|---|---|---|\n")
	for _, n := range names {
		m := bench[n]
		var other []string
		var units []string
		for u := range m {
			units = append(units, u)
		}
		sort.Strings(units)
		for _, u := range units {
			if u != "ns/op" && u != "B/op" && u != "allocs/op" {
				other = append(other, fmtNum(median(m[u]))+" "+u)
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", n, fmtNum(median(m["ns/op"])), fmtNum(median(m["B/op"])),
			fmtNum(median(m["allocs/op"])), strings.Join(other, ", "))
	}
	return sb.String()
}

func readKV(path string) map[string]string {
	out := map[string]string{}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

func machineInfo(info map[string]string) map[string]string {
	m := map[string]string{"nproc": strconv.Itoa(runtime.NumCPU()), "goarch": runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
				m["memory"] = fmt.Sprintf("%.1f GiB", kb/1024/1024)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/debian_version"); err == nil {
		m["debian"] = strings.TrimSpace(string(b))
	}
	for _, k := range []string{"go", "postgresql", "pgbouncer", "mariadb", "haproxy", "dpproxy_commit"} {
		m[k] = info[k]
	}
	// What run.sh recorded of the machine wins over this one's: a report
	// made again from old results describes the machine they ran on.
	for _, k := range []string{"nproc", "cpu", "memory", "kernel", "debian"} {
		if v := info[k]; v != "" {
			m[k] = v
		}
	}
	return m
}

func machineMD(m, info map[string]string) string {
	maria, myRun := "", ""
	if m["mariadb"] != "" {
		maria = ", MariaDB " + m["mariadb"]
		if m["haproxy"] != "" {
			maria += ", HAProxy " + m["haproxy"]
		} else if n := info["haproxy_note"]; n != "" {
			maria += " (" + n + ")"
		}
		myRun = fmt.Sprintf(" (MariaDB: %s visits loaded in %ss, %s runs per workload)", info["mariadb_visits"], info["mariadb_load_seconds"], info["mariadb_runs"])
	}
	pinning := ""
	if p := info["sequential_pinning"]; p != "" {
		pinning = " The sequential workloads (1, 2, 2b, 9's DP aggregate, 10's visits) ran with " + p +
			": the two sides of each ratio run in different server processes, and this machine's two cores differ in " +
			"speed by up to 1.6× at times."
	}
	return fmt.Sprintf("Machine: %s CPU(s), %s, %s RAM, Linux %s (Debian %s). Go %s, PostgreSQL %s, %s%s, dpproxy %s.\n\n"+
		"Run: %s patients (%s visits), %s runs per workload (quick mode: %s), dataset loaded in %ss%s, whole run %ss. Durations: %s.%s\n",
		m["nproc"], m["cpu"], m["memory"], m["kernel"], m["debian"], m["go"], m["postgresql"], m["pgbouncer"], maria, m["dpproxy_commit"],
		info["scale_patients"], info["visits"], info["runs"], info["quick"], info["load_seconds"], myRun, info["total_seconds"], info["durations"], pinning)
}

// sanitize replaces NaN figures (not valid JSON) with null.
func sanitize(out map[string]any) map[string]any {
	rows := out["results"].([]Row)
	js := make([]map[string]any, len(rows))
	for i, r := range rows {
		m := map[string]any{"workload": r.Workload, "figure": r.Figure, "unit": r.Unit, "values": r.Values,
			"target": r.Target, "note": r.Note}
		for k, v := range map[string]float64{"median": r.Median, "min": r.Min, "max": r.Max} {
			if !math.IsNaN(v) {
				m[k] = v
			} else {
				m[k] = nil
			}
		}
		if r.Pass != nil {
			m["pass"] = *r.Pass
		}
		js[i] = m
	}
	out["results"] = js
	return out
}

func benchmarksMD(machine, info map[string]string, table, scaleMD, why string, errs []string, goTable, accuracy string) string {
	var sb strings.Builder
	sb.WriteString(`# Benchmarks

<!-- Generated by bench/run.sh (bench/report): edit bench/report, not this file. -->

dpproxy's own cost, measured against direct PostgreSQL access and PgBouncer,
and through its MySQL front end against direct MariaDB, in one run, with
the targets of issue 18 ("Performance v2"), and those of issue 6 where
issue 18 sets none (workloads 1, 7 and 8 and the group commit of 5), and
how it scales with clients, data and idle connections (workloads 6 and
10). Reproduce on a fresh Debian machine with one command (needs root or
sudo for apt-get; installs PostgreSQL 15, PgBouncer and MariaDB if
missing):

` + "```sh" + `
bash bench/run.sh            # 100,000 patients (~2.1M visits), 5 runs per workload
bash bench/run.sh --quick    # 10,000 patients, 3 short runs
bash bench/run.sh --scale 50000 --runs 5
bash bench/run.sh --no-mysql # PostgreSQL workloads only (--mysql-runs N: MariaDB runs, default 3)
bash bench/run.sh --visits-100m # workload 10 also at 100M visits (~24 GB of disk, about 16 min more)
` + "```" + `

It builds dpproxy, starts a throwaway PostgreSQL 15 (fsync on), PgBouncer
(transaction pooling, pool of 16), MariaDB (InnoDB, durable defaults, no
query cache, in-memory temporary tables up to 256 MB) and dpproxy
(backend pool of 16; PostgreSQL front end with a PostgreSQL backend,
MySQL front end with a MariaDB backend) on free loopback ports, loads
the demo dataset scaled with ` + "`--scale`" + ` into both databases, runs the
workloads below, then the Go micro-benchmarks and the accuracy report,
and stops everything. Results: ` + "`bench/results/results.md`" + `,
` + "`results.json`" + ` (medians, min–max over the runs, every run's value,
the machine), the raw per-run output (` + "`raw.jsonl`" + `, ` + "`gobench.txt`" + `) and
this file. The load generator (` + "`bench/loadgen`" + `, pgx, or go-sql-driver
with ` + "`--driver mysql`" + `) is the same tool for dpproxy, PgBouncer and the
direct databases; each client has its own connection, opened (and
authenticated) before the clock starts.

## What each workload measures

1. **DP aggregate, cache off** — ` + "`SELECT diagnosis, COUNT(*), AVG(cost) FROM visits GROUP BY diagnosis`" + `,
   one client, sequential: p50 latency through dpproxy ÷ p50 latency of the
   same rewritten SQL (from ` + "`dpproxy explain`" + `) sent directly to PostgreSQL
   (target ≤ 1.10).
2. **Cost of contribution bounding** — the rewritten SQL ÷ its *floor*,
   both directly on PostgreSQL (target ≤ 1.2) and on MariaDB (the
   MySQL-dialect rewritten SQL from ` + "`dpproxy explain`" + ` with a ` + "`kind: mysql`" + `
   policy; target ≤ 1.5). The floor is
   ` + "`SELECT COUNT(*) FROM (SELECT patient_id, diagnosis FROM visits GROUP BY patient_id, diagnosis) AS t`" + `:
   one row per (patient, diagnosis) and nothing else, the least work a
   bounding that groups every person's rows per group must do (where the
   policy allows, dpproxy groups only the people beyond its bounds, and
   the ratio falls below 1: see *Where a target is missed*, 2). The rewritten
   SQL ÷ the original SQL and the floor ÷ the original are reported
   without a target. Workloads 1 and 2 run their four queries (through
   dpproxy, the rewritten SQL, the original, the floor) in turns, one
   query of each per round (` + "`loadgen alternate`" + `), the three direct
   ones on one connection: this machine's cores are not equally fast at
   any moment, and its speed drifts by up to half within seconds (the
   rewritten SQL and its floor pinned to one core: 2.6 s and 2.4 s; to
   the other: 1.75 s and 1.6 s), so each ratio compares queries run in
   turns within the same seconds, the direct ones on the same server
   process; each round starts one target later than the one before. A
   ratio is taken within each round (its two queries ran next to each
   other) and the table gives the median over every round of every run,
   and the rounds' spread: a ratio of each target's own median would pair
   a fast second of one with a slow second of the other (in one run the
   three rounds of the rewritten SQL on MariaDB took 3.2, 2.8 and 1.9 s).
   **2b**, a table whose privacy unit is its primary key: ` + "`SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`" + `
   (patient_id is the key of patients). dpproxy reads the key at start
   and sends the query without the per-person step (each person is one
   row); its SQL (` + "`dpproxy explain --backend`" + `), the per-person form
   (` + "`dpproxy explain`" + ` without reading the database) and the original
   run in turns, directly on PostgreSQL, and are reported ÷ the original.
3. **Cache hits** — ` + "`SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region`" + `
   repeated (cache on): p50/p99 with one client (the target, p50 ≤ 50 µs,
   applies here), and queries/s, p50/p99 with 16 clients.
4. **Passthrough, pgbench -S style** — ` + "`SELECT clinic_id, name, city FROM clinics WHERE clinic_id = $1`" + `
   with a random id, 16 clients, simple protocol (literal) and extended
   protocol (unnamed statement, Parse/Bind/Execute each time, like
   ` + "`pgbench -M extended`" + `): TPS through dpproxy, PgBouncer and direct,
   and the CPU time (user + system, from /proc) dpproxy and PgBouncer
   spend per query. Targets, in both protocols: dpproxy's TPS ≥ 1.0×
   PgBouncer's, and its CPU time per query ≤ 1.2× PgBouncer's. The targets
   of a run (dpproxy, dpproxy on one processor, the bare Go relay, PgBouncer, direct) run in turns,
   in slices of a second, each slice starting one target later
   (` + "`loadgen turns`" + `), every connection open throughout: a run's
   figures for each target are its totals over its slices, which cover
   the same seconds as the other targets', so each run's ratio compares
   one stretch of the machine's speed (run after run, 4 s per target, the
   TPS ratio spread over 0.83–1.21 in five runs). Each slice's figures are
   kept in ` + "`raw.jsonl`" + ` (` + "`slices_qps`" + `, ` + "`slices_cpu_us`" + `).
   dpproxy on one processor is a second instance of the same dpproxy
   started with ` + "`GOMAXPROCS=1`" + ` (Go's setting for how many threads
   run Go code at once), reported without a target next to the default
   (two, one per core): PgBouncer runs one thread.
5. **Many small DP queries** — ` + "`SELECT COUNT(*) FROM patients WHERE patient_id = <distinct number>`" + `,
   32 clients, and in each run next to them 128 clients and 256 of
   pgbench's (the PostgreSQL project's load generator: C, libpq, two
   threads, the simple protocol, the number drawn at random for each
   execution; measured from its first progress report, a second in, to
   the one the run's length later, through ` + "`loadgen pgbench`" + `), cache off,
   durable ledger: charged queries/s (charges written to the ledger ÷ run
   time; target ≥ 20,000/s, judged on the most of the three rates in each
   run: a rate target holds where the rate peaks, more clients give the
   group commit and the backend's batches more to gather, and the clients
   share the two cores with what they measure, so the lighter client, whose
   own CPU per query both report, leaves dpproxy more of them) and ledger
   transactions per charge (target < 1: group commit). Each ledger
   transaction (group commit) is one WAL commit with ` + "`synchronous=FULL`" + `,
   i.e. one fsync; they are counted from the ledger file (charges of one
   transaction share its timestamp). WAL checkpoints add a few fsyncs not
   counted here. The transactions' mean wall time comes from dpproxy's own
   counters (its admin listener's ` + "`dpproxy_ledger_transaction_seconds_total`" + `
   and ` + "`_transactions_total`" + `, read before and after each run). Distinct texts to dpproxy, one statement to PostgreSQL:
   dpproxy sends the query's constant as a parameter (` + "`dpproxy explain`" + `
   shows the SQL as sent), and its ceiling is that SQL sent straight to
   PostgreSQL, prepared once per connection, with a distinct value each
   time.
6. **10,000 idle connections** — each authenticated with SCRAM and one
   ` + "`SELECT 1`" + `, opened 32 at a time, then held idle: dpproxy's VmRSS
   (/proc/PID/status) on a freshly started process (target ≤ 500 MB, and
   every connection opened), the time opening them took and dpproxy's CPU
   time per connection. The load generator's own client derives the SCRAM
   keys from the password once rather than for each connection (PBKDF2,
   4096 iterations), so that opening them measures dpproxy rather than the
   client; dpproxy checks every proof as usual.
7. **Parse + analyze + rewrite** — ` + "`go test -bench ParseAnalyzeRewrite ./rewrite`" + `:
   the demo queries, a Metabase nested question, a public-table query, and
   an extended-protocol execution with two parameters (parse, bind, analyze)
   (target ≤ 50 µs each).
8. **Secure noise sampling** — the mechanisms benchmarks (crypto/rand
   source), samples/s = 10⁹ ÷ ns/op on one core (target ≥ 1,000,000/s).
9. **MySQL protocol** — workloads 1, 3 and 4 through dpproxy's MySQL front
   end (` + "`listen.mysql`" + `) with a MariaDB backend (` + "`kind: mysql`" + `), go-sql-driver
   clients, against the same queries sent directly to MariaDB: 1 compares
   with the MySQL-dialect rewritten SQL directly on MariaDB; 3 is the same
   cache-hit query; 4 uses ` + "`WHERE clinic_id = ?`" + ` with the text protocol
   (COM_QUERY, the id interpolated by the driver) and the binary protocol
   (COM_STMT_PREPARE, EXECUTE and CLOSE for each query, what go-sql-driver
   does without ` + "`interpolateParams`" + `). Targets: 1 ≤ 1.10, 3 p50 ≤ 50 µs,
   and, there being no MySQL pooler in the run, 4's dpproxy TPS ≥ 0.8×
   direct MariaDB's in both protocols (in slices in turns, as workload 4).
10. **Scale** (no targets) — with 1, 16, 64 and 256 clients, workload 4's
    passthrough (simple protocol) and workload 3's cache hit through the
    cache-on dpproxy (backend pool of 16, so more clients queue for a
    backend connection): p50/p99 latency, queries/s and dpproxy's CPU time
    per query, one short run per point. And workload 1's DP aggregate
    (cache off) through dpproxy and its rewritten SQL directly on datasets
    of about 1 and 10 million visits (100 million with ` + "`--visits-100m`" + `),
    generated (` + "`loadgen load`" + `) into their own PostgreSQL databases and
    dropped after use: p50 of 2 queries per target in turns, and the time
    generating, loading and vacuuming each took. Together with workload 6 these are
    the scale figures of issue 18; the *Scale* section below puts them in
    two small tables.

`)
	sb.WriteString(floorsWorkloadMD)
	sb.WriteString("## Results\n\n" + machineMD(machine, info) + "\n")
	sb.WriteString(table)
	if info["quick"] == "1" {
		sb.WriteString("\nThis table comes from a `--quick` run (small dataset, short runs): the figures show that the harness works, not dpproxy's performance at scale.\n")
	}
	sb.WriteString("\n" + scaleMD)
	sb.WriteString(why)
	sb.WriteString("\n" + abuseMD)
	if len(errs) > 0 {
		sb.WriteString("\n**Errors during the run:**\n\n")
		for _, e := range errs {
			fmt.Fprintf(&sb, "- %s\n", e)
		}
	}
	sb.WriteString("\n## Go micro-benchmarks\n\nMedian over the runs of `go test -bench -benchmem` (rewrite, mechanisms, budget, engine, session, proxy/pgwire).\n\n" + goTable)
	sb.WriteString("\n" + measuredMD)
	if accuracy != "" {
		sb.WriteString("\n## Accuracy\n\nGenerated by `bench/accuracy`.\n\n" + accuracy)
	}
	return sb.String()
}

// abuseMD is the abuse soak's and the fuzz targets' section, measured by
// bench/soak.sh and long fuzz runs rather than by this run.
//
//go:embed abuse.md
var abuseMD string

// measuredMD are the sections measured by their own benchmarks rather
// than by this run: DP query cost, joins, the shared ledger.
//
//go:embed measured.md
var measuredMD string
