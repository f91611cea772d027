package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Workload 6 (idle connections) and workload 10 (scale figures, issue 18
// item 4): how latency and dpproxy's CPU time per query grow with the
// number of clients and of visits.

// scaleClients are workload 10's client counts, scaleSizes its datasets
// (run.sh's SCALE_SIZES names).
var (
	scaleClients = []int{1, 16, 64, 256}
	scaleSizes   = []struct{ key, label string }{{"1m", "1M"}, {"10m", "10M"}, {"100m", "100M"}}
	scaleQueries = []struct{ key, label, short string }{
		{"passthrough", "passthrough (workload 4's query, simple protocol)", "passthrough"},
		{"cachehit", "cache hit (workload 3's query)", "cache hit"},
		{"charged", "charged DP query (workload 5's: distinct text, cache off)", "charged DP query"},
	}
)

// idleRows are workload 6's rows: the VmRSS target holds only when every
// run opened all its connections.
func idleRows(runs []loadResult, info map[string]string) []Row {
	want, err := strconv.ParseInt(info["idle_conns"], 10, 64)
	if err != nil || want <= 0 {
		want = 10000
	}
	w := "6 " + groupThousands(want) + " idle connections"
	rss := make([]float64, 0, len(runs))
	var base, secs, cpu, opened []float64
	for _, r := range runs {
		rss = append(rss, float64(r.RSSIdle)/1024)
		base = append(base, float64(r.RSSBase)/1024)
		opened = append(opened, float64(r.Conns))
		if r.ConnectSecs > 0 {
			secs = append(secs, r.ConnectSecs)
		}
		if r.ProcCPUConn > 0 {
			cpu = append(cpu, r.ProcCPUConn)
		}
	}
	memory := mk(w, "dpproxy resident memory (VmRSS)", "MB", rss, "≤ 500 MB", le(500))
	if len(opened) > 0 && slices.Min(opened) < float64(want) {
		fail := false
		memory.Pass = &fail
		memory.Note = strings.TrimSpace(memory.Note + fmt.Sprintf(" only %.0f of %d connections opened in the worst run", slices.Min(opened), want))
	}
	rows := []Row{
		memory,
		mk(w, "dpproxy VmRSS before the connections", "MB", base, "", nil),
		mk(w, "connections opened", "", opened, "", nil),
	}
	if len(secs) > 0 {
		rows = append(rows, mk(w, "time to open them (SCRAM login + SELECT 1, 32 at a time)", "s", secs, "", nil))
	}
	if len(cpu) > 0 {
		rows = append(rows, mk(w, "dpproxy CPU time per connection opened", "µs", cpu, "", nil))
	}
	return rows
}

// scaleResult is workload 10 as table rows and as the scale section.
type scaleResult struct {
	rows []Row
	md   string
}

func scaleFigures(series map[string][]loadResult, info map[string]string) scaleResult {
	var res scaleResult
	one := func(name string) (loadResult, bool) {
		if v := series[name]; len(v) > 0 {
			return v[0], true
		}
		return loadResult{}, false
	}
	val := func(name string, fn func(loadResult) float64) []float64 {
		if r, ok := one(name); ok {
			return []float64{fn(r)}
		}
		return nil
	}
	var md strings.Builder
	md.WriteString("## Scale (workload 10)\n\n")
	md.WriteString("How latency and dpproxy's CPU time per query grow with the number of clients (one run of " +
		orDash(info["scale_client_seconds"]) + " s per point: the passthrough and the cache hit through the cache-on dpproxy, the charged query, each with a new text, through the cache-off one; " +
		"each dpproxy's backend pool holds 16 connections) " +
		"and with the number of visits (workload 1's DP aggregate, cache off, 2 queries per target in turns after the load's VACUUM; " +
		"p50 of 2 is the faster one). Generated data, loopback only.\n\n")

	// Clients.
	anyClients := false
	md.WriteString("| query | clients | p50 | p99 | q/s | dpproxy CPU/query |\n|---|---|---|---|---|---|\n")
	for _, q := range scaleQueries {
		for _, c := range scaleClients {
			name := fmt.Sprintf("w10.clients.%s.c%d", q.key, c)
			r, ok := one(name)
			if !ok {
				fmt.Fprintf(&md, "| %s | %d | — | — | — | — |\n", q.short, c)
				continue
			}
			anyClients = true
			// A charged query's rate is the ledger's: what it recorded in
			// the run (each answer is charged before it leaves).
			rate := r.QPS
			if r.LedgerChg > 0 && r.Seconds > 0 {
				rate = float64(r.LedgerChg) / r.Seconds
			}
			fmt.Fprintf(&md, "| %s | %d | %s | %s | %s | %s |\n", q.short, c, fmtUS(r.P50US), fmtUS(r.P99US), fmtNum(rate), fmtCPU(r.ProcCPUUS))
			w := fmt.Sprintf("10 scale: %s, %d client%s", q.label, c, plural(c))
			res.rows = append(res.rows,
				mk(w, "p50 latency", "µs", val(name, func(r loadResult) float64 { return r.P50US }), "", nil),
				mk(w, "p99 latency", "µs", val(name, func(r loadResult) float64 { return r.P99US }), "", nil),
				mk(w, "queries/s", "q/s", []float64{rate}, "", nil),
			)
			if r.ProcCPUUS > 0 {
				res.rows = append(res.rows, mk(w, "dpproxy CPU time per query (user + system)", "µs", []float64{r.ProcCPUUS}, "", nil))
			}
		}
	}
	if !anyClients {
		res.rows = append(res.rows, Row{Workload: "10 scale: clients", Figure: "1, 16, 64, 256 clients", Note: "not measured: no data",
			Median: math.NaN(), Min: math.NaN(), Max: math.NaN()})
	}

	// Visits.
	md.WriteString("\n| visits (patients) | generated and loaded in | through dpproxy (p50) | rewritten SQL directly (p50) | dpproxy ÷ direct |\n|---|---|---|---|---|\n")
	notes := strings.Split(info["scale_note"], "; ")
	for _, size := range scaleSizes {
		base := "w10.visits." + size.key
		ld, loaded := one(base + ".load")
		px := val(base+".proxy", func(r loadResult) float64 { return r.P50US })
		dr := val(base+".direct_rewritten", func(r loadResult) float64 { return r.P50US })
		if !loaded && len(px) == 0 {
			note := "not measured: no data"
			for _, n := range notes {
				if strings.HasPrefix(n, size.label+" ") {
					note = n
				}
			}
			res.rows = append(res.rows, Row{Workload: "10 scale: DP aggregate (workload 1), " + size.label + " visits",
				Figure: "latency through dpproxy ÷ rewritten SQL directly (p50)", Note: note,
				Median: math.NaN(), Min: math.NaN(), Max: math.NaN()})
			fmt.Fprintf(&md, "| %s | %s | | | |\n", size.label, note)
			continue
		}
		label := size.label
		if ld.Visits > 0 {
			label = fmt.Sprintf("%s (%s)", fmtCount(ld.Visits), fmtCount(ld.Patients))
		}
		w := "10 scale: DP aggregate (workload 1), " + fmtCount(ld.Visits) + " visits"
		if ld.Visits == 0 {
			w = "10 scale: DP aggregate (workload 1), " + size.label + " visits"
		}
		ratioV := []float64{}
		if len(px) > 0 && len(dr) > 0 && dr[0] > 0 {
			ratioV = append(ratioV, px[0]/dr[0])
		}
		res.rows = append(res.rows,
			mk(w, "latency through dpproxy ÷ rewritten SQL directly (p50)", "×", ratioV, "", nil),
			mk(w, "latency through dpproxy (p50)", "ms", scale(px, 1e-3), "", nil),
			mk(w, "rewritten SQL directly on PostgreSQL (p50)", "ms", scale(dr, 1e-3), "", nil),
		)
		if loaded {
			res.rows = append(res.rows, mk(w, "generating and loading the dataset (loadgen load)", "s", []float64{ld.Seconds}, "", nil))
		}
		cell := func(v []float64, unit string, k float64) string {
			if len(v) == 0 {
				return "—"
			}
			return fmtNum(v[0]*k) + " " + unit
		}
		loadCell := "—"
		if loaded {
			loadCell = fmtNum(ld.Seconds) + " s"
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s | %s |\n", label, loadCell, cell(px, "ms", 1e-3), cell(dr, "ms", 1e-3), cell(ratioV, "×", 1))
	}

	// Idle connections (workload 6), for the scale picture.
	if idle := series["w6"]; len(idle) > 0 {
		var rss, secs []float64
		for _, r := range idle {
			rss = append(rss, float64(r.RSSIdle)/1024)
			if r.ConnectSecs > 0 {
				secs = append(secs, r.ConnectSecs)
			}
		}
		conns := make([]float64, 0, len(idle))
		for _, r := range idle {
			conns = append(conns, float64(r.Conns))
		}
		fmt.Fprintf(&md, "\nIdle connections (workload 6): %s connections held by a freshly started dpproxy: VmRSS %s MB (median of %d run%s)",
			groupThousands(int64(median(conns))), fmtNum(median(rss)), len(rss), plural(len(rss)))
		if len(secs) > 0 {
			fmt.Fprintf(&md, ", opened in %s s", fmtNum(median(secs)))
		}
		md.WriteString(".\n")
	}
	res.md = md.String()
	return res
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fmtUS writes a latency in µs below 10 ms, else in ms.
func fmtUS(us float64) string {
	if us >= 10000 {
		return fmtNum(us/1000) + " ms"
	}
	return fmtNum(us) + " µs"
}

func fmtCPU(us float64) string {
	if us <= 0 {
		return "—"
	}
	return fmtNum(us) + " µs"
}

// fmtCount writes a count as 1.00M, 482k or 950.
func fmtCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// groupThousands writes 10000 as 10,000.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
