package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Floors and ceilings: what this machine allows at all, measured in the
// same run as the figures they bound, so that BENCHMARKS.md can say which
// of issue 18's targets are out of reach here and show why (issue 18:
// "Where a target is impossible on these machines, BENCHMARKS.md says why
// with profiles and measurements"). bench/run.sh records:
//
//   - w4.MODE.relay, w9.w4.MODE.relay: workload 4's passthrough through
//     `loadgen relay` (bench/loadgen/relay.go), a Go relay that copies the
//     bytes both ways and nothing else: the floor of a proxy written in Go
//     with a goroutine per connection;
//   - w9.w4.MODE.haproxy: the same through HAProxy in TCP mode, a proxy
//     written in C that copies the bytes and parses nothing: the floor of
//     a relay that is not written in Go;
//   - w3.floor.local, w3.floor.direct (and w9.w3.floor.*): SELECT 1 with
//     one client, answered by dpproxy itself (session/local.go: no cache,
//     no backend) and by the database directly: the floors of a round trip;
//   - w3.floor.answer (and w9.w3.floor.answer): the cache-hit query sent
//     to `loadgen answer` (bench/loadgen/answer.go), a Go server that
//     answers every query with the same rows from memory and does nothing
//     else: the floor of any server's round trip with that client;
//   - w5.direct: workload 5's SQL as dpproxy sends it (one statement,
//     prepared per connection, the query's constant a parameter, distinct
//     for each execution) sent directly to PostgreSQL by 32 clients: the
//     backend's ceiling for charged queries;
//   - w5.sametext: workload 5 with one text for every query, cache off
//     (each still charged, its parse and analysis from the session's plan
//     memo), next to its first runs: what is left when those cost nothing;
//   - BenchmarkCommitParallel (gobench.txt): the embedded ledger alone, 32
//     committers, no backend: its charges/s, and its CPU per charge, which
//     with workload 4's relaying bounds the charged rate the cores allow.
//
// An impossibility is claimed only when every repetition of the run
// supports it (the floor above the target in every run, or the ceiling
// below it in every run); otherwise the text says by how much the target
// was missed.

// The issue 18 targets the floors bound.
const (
	targetCPUOverPgBouncer = 1.2     // dpproxy's CPU per query ÷ PgBouncer's, at most
	targetMySQLOverDirect  = 0.8     // dpproxy's TPS ÷ direct MariaDB's, at least
	targetCacheHitP50US    = 50.0    // cache hit p50, at most
	targetChargedPerSec    = 20000.0 // charged queries/s, at least
)

// stat summarises one figure over the run's repetitions.
type stat struct {
	med, min, max float64
	n             int
}

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{med: math.NaN(), min: math.NaN(), max: math.NaN()}
	}
	return stat{median(v), slices.Min(v), slices.Max(v), len(v)}
}

// runValues is fn of each run of a series, in run order.
func runValues(series map[string][]loadResult, name string, fn func(loadResult) float64) []float64 {
	var v []float64
	for _, r := range series[name] {
		v = append(v, fn(r))
	}
	return v
}

// pairRatio is a[i] ÷ b[i] for the runs where both are positive: run i of
// two series was measured next to each other.
func pairRatio(a, b []float64) []float64 {
	var v []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			v = append(v, a[i]/b[i])
		}
	}
	return v
}

func positive(v []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(v), func(x float64) bool { return !(x > 0) })
}

// passFloor is workload 4 in one protocol with its floor, the bare relay.
type passFloor struct {
	proxyTPS, relayTPS, pgbTPS []float64
	proxyCPU, relayCPU, pgbCPU []float64 // µs per query, 0 when unread
}

// myPassFloor is workload 9's passthrough in one protocol with its
// floors, the bare Go relay and HAProxy.
type myPassFloor struct {
	proxyTPS, relayTPS, haproxyTPS, directTPS []float64
	proxyCPU, relayCPU, haproxyCPU            []float64
}

// cacheFloor is a cache hit's p50 with the p50 of the round-trip floors,
// run by run: dpproxy's own SELECT 1, the database's, and a server
// answering from memory.
type cacheFloor struct {
	hit, local, server, answer []float64
}

// chargedCeiling is workload 5 with its ceilings: PostgreSQL alone on the
// rewritten SQL, the ledger alone, and the machine's CPU. For the last:
// directCPU is every process's CPU per query of the direct runs (what
// PostgreSQL and the clients take with the machine to themselves;
// directBusy the share of the machine they kept busy), proxyCPU dpproxy's
// own CPU per charged query, proxyMachineCPU every process's through
// dpproxy, on cores cores (as /proc/stat counts them in the bench).
type chargedCeiling struct {
	charged, direct, ledger []float64
	proxyCPU, directCPU     []float64
	proxyMachineCPU         []float64
	directBusy, proxyBusy   []float64
	// othersCPU is what every process but dpproxy spent per charged
	// query through it (proxyMachineCPU less proxyCPU, run by run, with
	// 32 and with 128 clients): PostgreSQL's and the clients' share when
	// dpproxy's batches carry several queries to PostgreSQL at once,
	// which can be less than directCPU.
	othersCPU []float64
	// ledgerTxUS and chargesPerTx are the ledger's transactions in
	// workload 5: their mean wall time (dpproxy's counters) and the
	// charges each carried.
	ledgerTxUS, chargesPerTx []float64
	cores                    int
	// passCPU is dpproxy's CPU per passthrough query (workload 4, simple
	// protocol): a repeated text, so no parse, no plan, no noise, no
	// ledger; only the messages a charged query relays too.
	passCPU []float64
	// ledgerCPU is the embedded ledger's CPU per charge with 32
	// committers (BenchmarkCommitParallel): the reservation, the group
	// commit and its share of the fsync, which every charged query needs.
	ledgerCPU []float64
	// sameText and sameTextCPU are workload 5 with one text for every
	// query (w5.sametext), cache off: charged queries/s and dpproxy's CPU
	// per charged query when parse and analysis come from the session's
	// plan memo, run next to the first runs of workload 5.
	sameText, sameTextCPU []float64
	// moreClients is workload 10's charged query with more clients than
	// workload 5's 32 (one short run each).
	moreClients []clientsPoint
	// judged is the rate the target is judged on: in each run the more of
	// the 32- and 128-client rates (the 32-client one alone where a run
	// has no 128-client part).
	judged []float64
}

// clientsPoint is one client count's charged rate and dpproxy's CPU per
// charged query.
type clientsPoint struct {
	clients   int
	rate, cpu float64
}

// cpuCeiling is cores / (PostgreSQL's and the clients' CPU per query +
// extra µs of dpproxy's), at the least figure measured for them, directly
// or through dpproxy: the most queries a second the cores could run if
// they did nothing else. 0 when not measured.
func (c chargedCeiling) cpuCeiling(extra float64) float64 {
	least := c.leastOthersCPU()
	if c.cores == 0 || least == 0 || extra <= 0 {
		return 0
	}
	return float64(c.cores) * 1e6 / (least + extra)
}

// leastOthersCPU is the least CPU per query PostgreSQL and the clients
// were measured to take, directly or through dpproxy; 0 when neither was
// measured.
func (c chargedCeiling) leastOthersCPU() float64 {
	return leastOf(append(positive(c.directCPU), positive(c.othersCPU)...))
}

// leastOf is the least positive value of v, 0 when there is none.
func leastOf(v []float64) float64 {
	if p := positive(v); len(p) > 0 {
		return slices.Min(p)
	}
	return 0
}

// floorFacts are the run's floors and ceilings.
type floorFacts struct {
	pass       map[string]passFloor   // simple, extended
	my         map[string]myPassFloor // simple, extended
	hit, myHit cacheFloor
	w5         chargedCeiling
	// hitCPU1 is dpproxy's CPU per cache hit with one client (workload
	// 10), 0 when not measured.
	hitCPU1 float64
}

func gatherFloors(series map[string][]loadResult, bench map[string]map[string][]float64) floorFacts {
	qps := func(r loadResult) float64 { return r.QPS }
	cpu := func(r loadResult) float64 { return r.ProcCPUUS }
	p50 := func(r loadResult) float64 { return r.P50US }
	f := floorFacts{pass: map[string]passFloor{}, my: map[string]myPassFloor{}}
	for _, mode := range []string{"simple", "extended"} {
		w := "w4." + mode + "."
		f.pass[mode] = passFloor{
			proxyTPS: runValues(series, w+"proxy", qps), relayTPS: runValues(series, w+"relay", qps), pgbTPS: runValues(series, w+"pgbouncer", qps),
			proxyCPU: runValues(series, w+"proxy", cpu), relayCPU: runValues(series, w+"relay", cpu), pgbCPU: runValues(series, w+"pgbouncer", cpu),
		}
		m := "w9.w4." + mode + "."
		f.my[mode] = myPassFloor{
			proxyTPS: runValues(series, m+"proxy", qps), relayTPS: runValues(series, m+"relay", qps),
			haproxyTPS: runValues(series, m+"haproxy", qps), directTPS: runValues(series, m+"direct", qps),
			proxyCPU: runValues(series, m+"proxy", cpu), relayCPU: runValues(series, m+"relay", cpu), haproxyCPU: runValues(series, m+"haproxy", cpu),
		}
	}
	hitFloor := func(w string) cacheFloor {
		return cacheFloor{runValues(series, w+".c1", p50), runValues(series, w+".floor.local", p50),
			runValues(series, w+".floor.direct", p50), runValues(series, w+".floor.answer", p50)}
	}
	f.hit, f.myHit = hitFloor("w3"), hitFloor("w9.w3")
	for _, r := range series["w5"] {
		if r.Seconds > 0 {
			f.w5.charged = append(f.w5.charged, float64(r.LedgerChg)/r.Seconds)
		}
	}
	f.w5.direct = runValues(series, "w5.direct", qps)
	charged128, _ := chargedRates(series["w5.c128"])
	f.w5.judged = moreOfEachRun(f.w5.charged, charged128)
	machine := func(r loadResult) float64 { return r.MachineCPUUS }
	busy := func(r loadResult) float64 { return r.MachineBusy }
	f.w5.proxyCPU = runValues(series, "w5", cpu)
	f.w5.ledgerTxUS = runValues(series, "w5", func(r loadResult) float64 { return r.LedgerTxUS })
	for _, r := range series["w5"] {
		if r.LedgerTx > 0 {
			f.w5.chargesPerTx = append(f.w5.chargesPerTx, float64(r.LedgerChg)/float64(r.LedgerTx))
		}
	}
	for _, r := range series["w5.sametext"] {
		if r.Seconds > 0 {
			f.w5.sameText = append(f.w5.sameText, float64(r.LedgerChg)/r.Seconds)
		}
	}
	f.w5.sameTextCPU = runValues(series, "w5.sametext", cpu)
	for _, n := range scaleClients {
		if r := series[fmt.Sprintf("w10.clients.charged.c%d", n)]; n > 32 && len(r) > 0 && r[0].Seconds > 0 && r[0].LedgerChg > 0 {
			f.w5.moreClients = append(f.w5.moreClients, clientsPoint{n, float64(r[0].LedgerChg) / r[0].Seconds, r[0].ProcCPUUS})
		}
	}
	f.w5.proxyMachineCPU, f.w5.proxyBusy = runValues(series, "w5", machine), runValues(series, "w5", busy)
	f.w5.directCPU, f.w5.directBusy = runValues(series, "w5.direct", machine), runValues(series, "w5.direct", busy)
	for _, name := range []string{"w5", "w5.c128"} {
		for _, r := range series[name] {
			if r.ProcCPUUS > 0 && r.MachineCPUUS > r.ProcCPUUS {
				f.w5.othersCPU = append(f.w5.othersCPU, r.MachineCPUUS-r.ProcCPUUS)
			}
		}
	}
	for _, r := range series["w5.direct"] {
		f.w5.cores = max(f.w5.cores, r.MachineCores)
	}
	if f.w5.cores == 0 && len(f.w5.directCPU) > 0 {
		f.w5.cores = runtime.NumCPU() // results from before loadgen counted them
	}
	f.w5.passCPU = f.pass["simple"].proxyCPU
	f.w5.ledger = bench["CommitParallel"]["charges/s"]
	f.w5.ledgerCPU = bench["CommitParallel"]["cpu-us/charge"]
	if r := series["w10.clients.cachehit.c1"]; len(r) > 0 {
		f.hitCPU1 = r[0].ProcCPUUS
	}
	return f
}

// Table rows, each set placed next to the figure it bounds.

// cacheFloorRows are workload 3's (or 9's) floors: server names the
// database answering SELECT 1 directly.
func cacheFloorRows(w, server string, c cacheFloor) []Row {
	if len(c.local) == 0 && len(c.server) == 0 && len(c.answer) == 0 {
		return nil
	}
	rows := []Row{
		mk(w, "floor: SELECT 1 answered by dpproxy itself (parsed each time; no cache, no backend), p50", "µs", c.local, "", nil),
		mk(w, "floor: SELECT 1 directly on "+server+", p50", "µs", c.server, "", nil),
		mk(w, "cache hit p50 ÷ dpproxy's own SELECT 1 p50", "×", pairRatio(c.hit, c.local), "", nil),
		mk(w, "cache hit p50 ÷ "+server+"'s own SELECT 1 p50", "×", pairRatio(c.hit, c.server), "", nil),
	}
	rows[1].Note = strings.TrimSpace(rows[1].Note + " a round trip to the database itself: the same client on the same cores")
	if len(c.answer) > 0 {
		answer := mk(w, "floor: the same query answered from memory by a Go server doing nothing else (loadgen answer), p50", "µs", c.answer, "", nil)
		answer.Note = strings.TrimSpace(answer.Note + " the least any server's round trip takes with this client on these cores")
		rows = append(rows, answer, mk(w, "cache hit p50 ÷ the answer from memory's p50", "×", pairRatio(c.hit, c.answer), "", nil))
	}
	return rows
}

// passFloorRows are workload 4's rows for the bare relay in one protocol.
func passFloorRows(w string, p passFloor) []Row {
	if len(p.relayTPS) == 0 {
		return nil
	}
	rows := []Row{
		mk(w, "bare Go relay TPS ÷ PgBouncer TPS", "×", pairRatio(p.relayTPS, p.pgbTPS), "", nil),
		mk(w, "dpproxy TPS ÷ bare Go relay TPS", "×", pairRatio(p.proxyTPS, p.relayTPS), "", nil),
		mk(w, "TPS of the bare Go relay (loadgen relay: copies bytes, parses nothing)", "q/s", p.relayTPS, "", nil),
	}
	if rc := positive(p.relayCPU); len(rc) > 0 {
		r := mk(w, "CPU per query, bare Go relay ÷ PgBouncer (the floor of dpproxy's ≤ 1.2 target)", "×", pairRatio(p.relayCPU, p.pgbCPU), "", nil)
		rows = append(rows, r,
			mk(w, "CPU per query, dpproxy ÷ bare Go relay", "×", pairRatio(p.proxyCPU, p.relayCPU), "", nil),
			mk(w, "CPU time per query, bare Go relay (user + system)", "µs", rc, "", nil),
		)
	}
	return rows
}

// myPassFloorRows are workload 9's passthrough rows for its floors, the
// bare Go relay and HAProxy.
func myPassFloorRows(w string, m myPassFloor) []Row {
	var rows []Row
	if len(m.relayTPS) > 0 {
		rows = append(rows,
			mk(w, "bare Go relay TPS ÷ direct MariaDB TPS (a ceiling for a proxy that relays each client's commands as they come)", "×", pairRatio(m.relayTPS, m.directTPS), "", nil),
			mk(w, "dpproxy TPS ÷ bare Go relay TPS", "×", pairRatio(m.proxyTPS, m.relayTPS), "", nil),
			mk(w, "TPS of the bare Go relay", "q/s", m.relayTPS, "", nil),
		)
	}
	if rc := positive(m.relayCPU); len(rc) > 0 {
		rows = append(rows,
			mk(w, "CPU per query, dpproxy ÷ bare Go relay", "×", pairRatio(m.proxyCPU, m.relayCPU), "", nil),
			mk(w, "CPU time per query, bare Go relay (user + system)", "µs", rc, "", nil),
		)
	}
	if len(m.haproxyTPS) > 0 {
		rows = append(rows,
			mk(w, "HAProxy (TCP mode, one thread) TPS ÷ direct MariaDB TPS", "×", pairRatio(m.haproxyTPS, m.directTPS), "", nil),
			mk(w, "dpproxy TPS ÷ HAProxy TPS", "×", pairRatio(m.proxyTPS, m.haproxyTPS), "", nil),
		)
		if hc := positive(m.haproxyCPU); len(hc) > 0 {
			rows = append(rows, mk(w, "CPU time per query, HAProxy (user + system)", "µs", hc, "", nil))
		}
	}
	return rows
}

// chargedCeilingRows are workload 5's ceilings; directNote is run.sh's
// reason when PostgreSQL alone was not measured.
func chargedCeilingRows(w string, c chargedCeiling, directNote string) []Row {
	var rows []Row
	if len(c.direct) == 0 && directNote != "" {
		rows = append(rows, Row{Workload: w, Figure: "ceiling: the rewritten SQL directly on PostgreSQL", Note: "not measured: " + directNote,
			Median: math.NaN(), Min: math.NaN(), Max: math.NaN()})
	}
	if len(c.direct) > 0 {
		rows = append(rows,
			mk(w, "ceiling: the SQL dpproxy sends (prepared, the constant a parameter), directly on PostgreSQL with 32 clients (no proxy, no ledger)", "q/s", c.direct, "", nil),
			mk(w, "charged queries/s ÷ PostgreSQL's ceiling", "×", pairRatio(c.charged, c.direct), "", nil),
		)
	}
	if len(positive(c.proxyCPU)) > 0 {
		rows = append(rows, mk(w, "dpproxy CPU time per charged query (user + system)", "µs", positive(c.proxyCPU), "", nil))
	}
	if len(c.sameText) > 0 {
		rows = append(rows,
			mk(w, "charged queries/s with one text for every query (cache off: each still charged, its parse and analysis from the plan memo)", "q/s", c.sameText, "", nil),
			mk(w, "charged queries/s, one text ÷ distinct texts (the runs next to each other)", "×", pairRatio(c.sameText, c.charged), "", nil),
		)
		if sc := positive(c.sameTextCPU); len(sc) > 0 {
			rows = append(rows, mk(w, "dpproxy CPU time per charged query, one text (user + system)", "µs", sc, "", nil))
		}
	}
	if len(positive(c.proxyMachineCPU)) > 0 {
		r := mk(w, "CPU time per charged query of every process, through dpproxy (/proc/stat)", "µs", positive(c.proxyMachineCPU), "", nil)
		r.Note = fmt.Sprintf("the machine %.0f %% busy (median)", 100*median(positive(c.proxyBusy)))
		rows = append(rows, r)
	}
	if len(positive(c.directCPU)) > 0 {
		r := mk(w, "CPU time per query of PostgreSQL and the clients, directly (every process, /proc/stat)", "µs", positive(c.directCPU), "", nil)
		r.Note = fmt.Sprintf("the machine %.0f %% busy (median)", 100*median(positive(c.directBusy)))
		rows = append(rows, r)
	}
	if o := positive(c.othersCPU); len(o) > 0 {
		rows = append(rows, mk(w, "CPU time per charged query of PostgreSQL and the clients, through dpproxy (every process's less dpproxy's; 32 and 128 clients)", "µs", o, "", nil))
	}
	if ceil := c.cpuCeiling(leastOf(c.passCPU)); ceil > 0 {
		r := mk(w, "ceiling: the machine's CPU if a charged query cost dpproxy no more than a passthrough (cores ÷ (PostgreSQL's and the clients' CPU, directly or through dpproxy, + workload 4's), the least of each)", "q/s", []float64{ceil}, "", nil)
		r.Note = fmt.Sprintf("%d cores", c.cores)
		rows = append(rows, r)
	}
	if pass, ledger := leastOf(c.passCPU), leastOf(c.ledgerCPU); pass > 0 && ledger > 0 {
		rows = append(rows, mk(w, "CPU time per charge of the embedded ledger alone (BenchmarkCommitParallel, the whole process)", "µs", positive(c.ledgerCPU), "", nil))
		r := mk(w, "ceiling: the machine's CPU if a charged query cost dpproxy no more than a passthrough and a durable charge (cores ÷ (PostgreSQL's and the clients' CPU, directly or through dpproxy, + workload 4's + the ledger's per charge), the least of each)", "q/s", []float64{c.cpuCeiling(pass + ledger)}, "", nil)
		r.Note = fmt.Sprintf("%d cores", c.cores)
		rows = append(rows, r)
	}
	if ceil := c.cpuCeiling(leastOf(c.proxyCPU)); ceil > 0 {
		r := mk(w, "estimate: the machine's CPU at dpproxy's measured cost per charged query (cores ÷ (PostgreSQL's and the clients' CPU, directly or through dpproxy, + dpproxy's), the least of each)", "q/s", []float64{ceil}, "", nil)
		r.Note = fmt.Sprintf("%d cores", c.cores)
		rows = append(rows, r)
	}
	if tx := positive(c.ledgerTxUS); len(tx) > 0 {
		rows = append(rows, mk(w, "wall time of each ledger transaction (dpproxy_ledger_transaction_seconds_total ÷ _transactions_total over the run)", "µs", tx, "", nil))
	}
	if len(c.ledger) > 0 {
		rows = append(rows, mk(w, "ceiling: the embedded ledger alone (BenchmarkCommitParallel: 32 committers, no backend)", "charges/s", c.ledger, "", nil))
		if len(c.charged) > 0 {
			r := mk(w, "charged queries/s ÷ the ledger alone's charges/s", "×", []float64{median(c.charged) / median(c.ledger)}, "", nil)
			r.Note = "medians"
			rows = append(rows, r)
		}
	}
	return rows
}

// Statements for the "why" section. Each returns its text and, when the
// run's numbers show the target out of reach on this machine, the reason
// in a few words (empty otherwise). A floor only rules a target out when
// it really is one in this run: above the target in every run, and not
// beaten by dpproxy itself.

// cpuFloorText compares workload 4's CPU target with the bare relay's CPU
// per query in one protocol.
func cpuFloorText(mode string, p passFloor) (text, outOfReach string) {
	relayPgb := statOf(pairRatio(p.relayCPU, p.pgbCPU))
	if relayPgb.n == 0 {
		return fmt.Sprintf("In the %s protocol the bare Go relay's CPU was not measured in this run.", mode), ""
	}
	proxyPgb := statOf(pairRatio(p.proxyCPU, p.pgbCPU))
	proxyRelay := statOf(pairRatio(p.proxyCPU, p.relayCPU))
	relay, pgb, proxy := statOf(positive(p.relayCPU)), statOf(positive(p.pgbCPU)), statOf(positive(p.proxyCPU))
	s := fmt.Sprintf("In the %s protocol a bare Go relay (`loadgen relay`: copies the bytes both ways, parses nothing, pools nothing) "+
		"costs %s µs of CPU per query against PgBouncer's %s µs: %s PgBouncer's (%s); dpproxy costs %s µs, %s PgBouncer's and %s the relay's.",
		mode, fmt1(relay.med), fmt1(pgb.med), fmtX(relayPgb.med), rangeX(relayPgb), fmt1(proxy.med), fmtX(proxyPgb.med), fmtX(proxyRelay.med))
	switch {
	case proxyPgb.n > 0 && proxyPgb.med <= targetCPUOverPgBouncer:
		return s + " dpproxy meets the target.", ""
	case relayPgb.min > targetCPUOverPgBouncer && (proxyRelay.n == 0 || proxyRelay.med >= 1):
		return s + fmt.Sprintf(" The relay alone is above %s in every run, so ≤ %s is below what a proxy written in Go "+
				"with a goroutine per connection reaches on this machine: dpproxy cannot meet it by cutting its own work.",
				fmtT(targetCPUOverPgBouncer)+"×", fmtT(targetCPUOverPgBouncer)+"×"),
			fmt.Sprintf("a bare Go relay alone costs %s PgBouncer's CPU per query", fmtX(relayPgb.med))
	case relayPgb.min > targetCPUOverPgBouncer:
		return s + fmt.Sprintf(" dpproxy costs less than the relay here, so the relay is no floor for it in this run: "+
			"dpproxy misses the target by %s.", fmtX(proxyPgb.med/targetCPUOverPgBouncer)), ""
	}
	return s + fmt.Sprintf(" The relay is within %s in at least one run, so this run does not show the target out of reach: "+
		"dpproxy misses it by %s (its CPU per query would have to fall to %s µs).",
		fmtT(targetCPUOverPgBouncer)+"×", fmtX(proxyPgb.med/targetCPUOverPgBouncer), fmt1(pgb.med*targetCPUOverPgBouncer)), ""
}

// tpsFloorText states workload 4's TPS target against the relay's TPS.
// TPS on two shared cores is not bounded by the relay's (dpproxy may
// batch what the relay copies as it comes), so it rules nothing out.
func tpsFloorText(mode string, p passFloor) string {
	relayPgb := statOf(pairRatio(p.relayTPS, p.pgbTPS))
	if relayPgb.n == 0 {
		return ""
	}
	return fmt.Sprintf("In TPS (%s protocol) the bare relay reaches %s PgBouncer's (%s), dpproxy %s PgBouncer's and %s the relay's.",
		mode, fmtX(relayPgb.med), rangeX(relayPgb), fmtX(statOf(pairRatio(p.proxyTPS, p.pgbTPS)).med),
		fmtX(statOf(pairRatio(p.proxyTPS, p.relayTPS)).med))
}

// relayNoise is how far above the relay's TPS a proxy relaying each query
// as the relay does can land by chance on this machine (the relay's own
// runs spread by more: 0.59–0.62× of direct MariaDB in one run).
const relayNoise = 1.05

// mysqlFloorText compares workload 9's passthrough target with its
// floors, the bare Go relay and HAProxy; binary is the binary protocol
// (prepare, execute, close per query).
func mysqlFloorText(label string, binary bool, m myPassFloor) (text, outOfReach string) {
	rd := statOf(pairRatio(m.relayTPS, m.directTPS))
	hd := statOf(pairRatio(m.haproxyTPS, m.directTPS))
	pd := statOf(pairRatio(m.proxyTPS, m.directTPS))
	pr := statOf(pairRatio(m.proxyTPS, m.relayTPS))
	ph := statOf(pairRatio(m.proxyTPS, m.haproxyTPS))
	if rd.n == 0 {
		return fmt.Sprintf("With the %s the bare Go relay was not measured in this run.", label), ""
	}
	s := fmt.Sprintf("With the %s a bare Go relay reaches %s direct MariaDB's TPS (%s) and dpproxy %s, %s the relay's.",
		label, fmtX(rd.med), rangeX(rd), fmtX(pd.med), fmtX(pr.med))
	if hd.n > 0 {
		s += fmt.Sprintf(" HAProxy in TCP mode, a proxy written in C that copies the bytes and parses nothing, reaches %s (%s); "+
			"dpproxy %s HAProxy's rate.", fmtX(hd.med), rangeX(hd), fmtX(ph.med))
	}
	target := fmtT(targetMySQLOverDirect) + "×"
	switch {
	case pd.n > 0 && pd.med >= targetMySQLOverDirect:
		return s + " dpproxy meets the target.", ""
	case rd.max < targetMySQLOverDirect && (hd.n == 0 || hd.max < targetMySQLOverDirect) &&
		(pr.n == 0 || pr.med <= 1 || !binary && pr.med <= relayNoise):
		atRelay := ""
		if pr.n > 0 && pr.med > 1 {
			// In the text protocol dpproxy sends each query on as the
			// relay does (one command in, one result back, the same
			// system calls): a lead this small is the machine's noise.
			atRelay = fmt.Sprintf(" dpproxy's %s the relay's rate is within this machine's run-to-run noise: in the text "+
				"protocol it makes the relay's system calls for each query (one command in, one result back) and more work besides.",
				fmtX(pr.med))
		}
		return s + fmt.Sprintf(" A relay that does nothing but copy the bytes stays below %s in every run: the extra hop "+
				"(two more sockets and a third busy process on two cores) costs more than the target allows, so %s is out of "+
				"reach for any proxy on this machine.", fmtT(targetMySQLOverDirect)+"×", fmtT(targetMySQLOverDirect)+"×") + atRelay,
			fmt.Sprintf("a bare Go relay reaches %s of direct MariaDB's TPS", fmtX(rd.med))
	case hd.n > 0 && hd.max >= targetMySQLOverDirect:
		return s + fmt.Sprintf(" HAProxy reaches %s in at least one run, so this run does not show the target out of reach: "+
			"dpproxy misses it by %s.", target, fmtX(targetMySQLOverDirect/pd.med)), ""
	case rd.max < targetMySQLOverDirect:
		// dpproxy outruns the relay (and HAProxy, below 0.8× in every run
		// if it was measured: the case above): neither is a ceiling for it.
		why := " (it sends concurrent short statements to MariaDB several in one write, `backend/mycombine.go`, which a relay cannot)"
		if binary {
			why = " (it answers the client's prepare and close itself and sends MariaDB one command per query, several " +
				"in one write, where through the relay MariaDB sees the client's prepare, execute and close)"
		}
		c := ""
		if hd.n > 0 && ph.med > 1 {
			c = fmt.Sprintf(" HAProxy, the one in C, stays below %s in every run too, and dpproxy outruns it as well.", target)
		}
		return s + fmt.Sprintf(" dpproxy outruns the relay here%s, so the relay is no ceiling for it in this run.%s "+
			"This run does not show the target out of reach: dpproxy misses it by %s.", why, c, fmtX(targetMySQLOverDirect/pd.med)), ""
	}
	return s + fmt.Sprintf(" The relay reaches %s in at least one run, so this run does not show the target out of reach: "+
		"dpproxy misses it by %s.", target, fmtX(targetMySQLOverDirect/pd.med)), ""
}

// cacheFloorText compares a cache hit's p50 with the round-trip floors of
// one front end; server names the database answering SELECT 1 directly.
// The server answering from memory is the floor of any server: when it
// is above the target in every run (and the hit too), the target is out
// of reach. Without it, dpproxy's own SELECT 1 is parsed each time (a
// hit's statement is memoized), so the hit itself may be the fastest
// round trip: the target is then out of reach only when no round trip
// measured here (the database's SELECT 1, dpproxy's, the hit) was within
// it in any run.
func cacheFloorText(front, server string, c cacheFloor) (text, outOfReach string) {
	hit, local, srv, ans := statOf(c.hit), statOf(c.local), statOf(c.server), statOf(c.answer)
	if hit.n == 0 {
		return "", ""
	}
	t := targetCacheHitP50US
	s := fmt.Sprintf("%s front end: a cache hit takes %s µs p50", front, fmt1(hit.med))
	if local.n == 0 && srv.n == 0 && ans.n == 0 {
		if hit.med <= t {
			return s + "; the target is met.", ""
		}
		return s + fmt.Sprintf(", %s µs above the target; the round-trip floors were not measured in this run.", fmt1(hit.med-t)), ""
	}
	if local.n > 0 {
		s += fmt.Sprintf("; dpproxy answering `SELECT 1` itself (parsed each time; no cache, no backend) takes %s µs (%s)", fmt1(local.med), rangeUS(local))
	}
	if srv.n > 0 {
		s += fmt.Sprintf("; %s's own `SELECT 1`, sent to it directly by the same client, takes %s µs (%s)", server, fmt1(srv.med), rangeUS(srv))
	}
	if ans.n > 0 {
		s += fmt.Sprintf("; a Go server answering the same query from memory and doing nothing else (`loadgen answer`) takes %s µs (%s)",
			fmt1(ans.med), rangeUS(ans))
	}
	s += "."
	vsAnswer := ""
	switch {
	case ans.n == 0 || hit.n == 0:
	case hit.med >= ans.med:
		vsAnswer = fmt.Sprintf(" The hit takes %s µs more than the answer from memory: that much is dpproxy's (its front end, "+
			"session and cache, and the wake-ups they cause).", fmt1(hit.med-ans.med))
	default:
		vsAnswer = fmt.Sprintf(" The hit's median is %s µs below the answer from memory's (medians of runs that were "+
			"measured at different moments on shared cores): in this run none of the hit's time shows as dpproxy's own.", fmt1(ans.med-hit.med))
	}
	vsLocal := ""
	if local.n > 0 {
		if d := hit.med - local.med; d > 0 {
			vsLocal = fmt.Sprintf(" The hit takes %s µs more than dpproxy's own `SELECT 1`: that much is the cache path.", fmt1(d))
		} else {
			vsLocal = fmt.Sprintf(" The hit is %s µs faster than dpproxy's own `SELECT 1` (parsed each time, where a hit's text "+
				"is memoized), so that is no floor for the hit.", fmt1(-d))
		}
	}
	switch {
	case hit.med <= t:
		return s + " The target is met." + vsAnswer, ""
	case ans.n > 0 && ans.min > t && hit.min > t:
		return s + fmt.Sprintf(" Even the server answering from memory took more than %s µs in every run: with this client "+
				"on the same two cores one loopback round trip (the client's driver, two socket hops, the wake-ups) costs more "+
				"than the target, so a p50 of ≤ %s µs is out of reach on this machine for any server, dpproxy included.",
				fmtT(t), fmtT(t)) + vsAnswer,
			fmt.Sprintf("a server answering from memory, doing nothing else, takes %s µs p50 here (%s)", fmt1(ans.med), rangeUS(ans))
	case (ans.n == 0 || ans.min > t) && srv.n > 0 && local.n > 0 && srv.min > t && local.min > t && hit.min > t:
		return s + fmt.Sprintf(" No round trip measured in this run (%s's own `SELECT 1`, dpproxy's, the hit itself) took %s µs "+
				"or less in any run: with the client on the same two cores, one loopback round trip (the client's driver, two "+
				"socket hops, the wakeups) costs more than the target here, so a p50 of ≤ %s µs is out of reach on this machine, "+
				"dpproxy included.", server, fmtT(t), fmtT(t)) + vsLocal,
			fmt.Sprintf("no round trip measured here is within %s µs (%s's own `SELECT 1`: %s µs p50, dpproxy's: %s µs)",
				fmtT(t), server, fmt1(srv.med), fmt1(local.med))
	case srv.n > 0 && srv.min <= t:
		return s + fmt.Sprintf(" Missed by %s µs, while %s answers its own `SELECT 1` within the target in at least one run: "+
			"dpproxy's round trip (its front end, Go's scheduler) costs more than the database's.", fmt1(hit.med-t), server) + vsLocal + vsAnswer, ""
	}
	return s + fmt.Sprintf(" Missed by %s µs; a round trip within the target was measured in at least one run, so this run "+
		"does not show the target out of reach.", fmt1(hit.med-t)) + vsLocal + vsAnswer, ""
}

// chargedCeilingText compares workload 5's target with its ceilings.
func chargedCeilingText(c chargedCeiling) (text, outOfReach string) {
	ch, d, l := statOf(c.charged), statOf(c.direct), statOf(c.ledger)
	if ch.n == 0 {
		return "", ""
	}
	t := targetChargedPerSec
	s := fmt.Sprintf("dpproxy charged %s queries/s (%s).", fmtQPS(ch.med), rangeQPS(ch))
	var why []string
	if d.n > 0 {
		s += fmt.Sprintf(" PostgreSQL alone runs the SQL dpproxy sends for them (one statement prepared per connection, the constant a parameter; 32 clients, no proxy, no ledger) "+
			"at %s q/s (%s)", fmtQPS(d.med), rangeQPS(d))
		switch {
		case d.max < t && ch.med <= d.med:
			s += fmt.Sprintf(", below %s in every run: PostgreSQL on this machine cannot run %s of these queries a second, "+
				"so the target is out of reach end to end here whatever dpproxy does; dpproxy reaches %s of PostgreSQL's ceiling.",
				fmtQPS(t), fmtQPS(t), fmtX(ch.med/d.med))
			why = append(why, fmt.Sprintf("PostgreSQL alone runs the rewritten queries at %s q/s", fmtQPS(d.med)))
		case d.max < t:
			s += fmt.Sprintf(", below %s, yet dpproxy charged more (%s of it): the direct runs are no ceiling in this run.", fmtQPS(t), fmtX(ch.med/d.med))
		default:
			s += fmt.Sprintf(": the backend leaves room for the target; dpproxy reaches %s of it.", fmtX(ch.med/d.med))
		}
	}
	if l.n > 0 {
		s += fmt.Sprintf(" The embedded ledger alone (BenchmarkCommitParallel: 32 committers, no backend, no proxy, the "+
			"whole machine to itself) commits %s charges/s (%s)", fmtQPS(l.med), rangeQPS(l))
		if l.max < t {
			s += fmt.Sprintf(", below %s in every count: the ledger's durable commits are a ceiling under the target on their own.", fmtQPS(t))
			why = append(why, fmt.Sprintf("the embedded ledger alone commits %s charges/s", fmtQPS(l.med)))
		} else {
			s += ": the ledger alone is not what bounds the target."
		}
	}
	if d := positive(c.directCPU); len(d) > 0 && c.cores > 0 {
		ds := statOf(d)
		least, budget := c.leastOthersCPU(), float64(c.cores)*1e6/t
		s += fmt.Sprintf(" The machine's CPU: run directly, PostgreSQL and the 32 clients take %s µs of CPU per query (every process, %s; the machine %.0f %% busy).",
			fmt1(ds.med), rangeUS(ds), 100*median(positive(c.directBusy)))
		if o := positive(c.othersCPU); len(o) > 0 {
			through := statOf(o)
			s += fmt.Sprintf(" Through dpproxy they took %s µs per charged query (every process's CPU less dpproxy's, %s with 32 and 128 clients): "+
				"dpproxy sends PostgreSQL several clients' queries in one batch, so the direct figure is no floor for it.", fmt1(through.med), rangeUS(through))
		}
		s += fmt.Sprintf(" At %s a second, %d cores give %s µs per query: %s µs at most for dpproxy, at the least of these figures.",
			fmtQPS(t), c.cores, fmt1(budget), fmt1(max(0, budget-least)))
		if pass := leastOf(c.passCPU); pass > 0 {
			ceil := c.cpuCeiling(pass)
			s += fmt.Sprintf(" Relaying a repeated public-table query costs dpproxy %s µs at the least (workload 4: no text to parse, no plan, no noise, no ledger, "+
				"only the client's and the backend's messages, which a charged query relays too), so even if a charged query cost no more, the cores would carry at most %s queries/s",
				fmt1(pass), fmtQPS(ceil))
			if ceil < t {
				s += fmt.Sprintf(", below %s: the target is out of reach on this machine whatever dpproxy does beyond relaying.", fmtQPS(t))
				why = append(why, fmt.Sprintf("the machine's CPU allows at most %s q/s even at the cost of a passthrough (PostgreSQL and the clients %s µs, dpproxy's relaying %s µs per query on %d cores)",
					fmtQPS(ceil), fmt1(least), fmt1(pass), c.cores))
			} else if ledger := leastOf(c.ledgerCPU); ledger > 0 {
				both := c.cpuCeiling(pass + ledger)
				s += fmt.Sprintf(". A charged query is also charged: the embedded ledger spends %s µs of CPU per charge at the least "+
					"(BenchmarkCommitParallel, 32 committers: the reservation, the group commit and its share of the fsync, the whole process counted), "+
					"so even if a charged query cost dpproxy no more than relaying and charging, the cores would carry at most %s queries/s",
					fmt1(ledger), fmtQPS(both))
				if both < t {
					s += fmt.Sprintf(", below %s: the target is out of reach on this machine with the embedded ledger, whatever dpproxy does beyond relaying and charging.", fmtQPS(t))
					why = append(why, fmt.Sprintf("the machine's CPU allows at most %s q/s even at the cost of a passthrough and a durable charge (PostgreSQL and the clients %s µs, dpproxy's relaying %s µs, the ledger %s µs per query on %d cores)",
						fmtQPS(both), fmt1(least), fmt1(pass), fmt1(ledger), c.cores))
				} else {
					s += "."
				}
			} else {
				s += "."
			}
		}
		if p := positive(c.proxyCPU); len(p) > 0 {
			ps := statOf(p)
			s += fmt.Sprintf(" A charged query costs dpproxy %s µs (%s: its plan (from its shape's template after the first), the backend round trip, noise, the ledger's share, the client's messages; "+
				"the ledger's writer yields the processor in a loop while it gathers a transaction's charges, up to 250 µs per transaction, "+
				"counted here), so at its measured cost the cores would carry about %s queries/s.", fmt1(ps.med), rangeUS(ps), fmtQPS(c.cpuCeiling(slices.Min(p))))
		}
		if m := positive(c.proxyMachineCPU); len(m) > 0 {
			s += fmt.Sprintf(" Through dpproxy every process together spent %s µs per charged query with the machine %.0f %% busy: "+
				"the cores were not saturated, so waiting holds the charged rate below even that (each answer waits for its charge's durable commit, an fsync shared by its transaction, and for the backend's round trip).",
				fmt1(median(m)), 100*median(positive(c.proxyBusy)))
			if tx := positive(c.ledgerTxUS); len(tx) > 0 {
				ts := statOf(tx)
				s += fmt.Sprintf(" The ledger's transactions took %s µs of wall time each (%s; dpproxy's own counters, `dpproxy_ledger_transaction_seconds_total`: "+
					"the inserts, the WAL's writes and its fsync)", fmt1(ts.med), rangeUS(ts))
				if per := positive(c.chargesPerTx); len(per) > 0 {
					s += fmt.Sprintf(" and carried %.1f charges each", median(per))
				}
				s += ": a charge waits for the transaction in progress to end, then for its own, one transaction at a time."
			}
		}
	}
	if st := statOf(c.sameText); st.n > 0 {
		s += fmt.Sprintf(" With one text for every query (the cache off: each still charged and answered from the backend with fresh noise, "+
			"its parse and analysis from the session's plan memo) dpproxy charged %s queries/s (%s), %s the distinct texts' rate in the runs next to them",
			fmtQPS(st.med), rangeQPS(st), fmtX(statOf(pairRatio(c.sameText, c.charged)).med))
		if sc := positive(c.sameTextCPU); len(sc) > 0 {
			s += fmt.Sprintf(", at %s µs of dpproxy's CPU per charged query", fmt1(median(sc)))
		}
		s += ": the most the plan templates could gain (a text's plan from the memo costs next to nothing)"
		if st.max < t {
			s += fmt.Sprintf(", below %s in every run: what is left, the relaying, the bounded query's round trip, the noise and the ledger, misses the target by itself", fmtQPS(t))
		}
		s += "."
	}
	if len(c.moreClients) > 0 {
		var pts []string
		reached := false
		for _, p := range c.moreClients {
			pt := fmt.Sprintf("%d clients, %s charged queries/s", p.clients, fmtQPS(p.rate))
			if p.cpu > 0 {
				pt += fmt.Sprintf(" at %s µs of dpproxy's CPU per charged query", fmt1(p.cpu))
			}
			pts = append(pts, pt)
			reached = reached || p.rate >= t
		}
		s += " With more clients than 32 (workload 10, one short run each): " + strings.Join(pts, "; ") + "."
		if reached {
			s += fmt.Sprintf(" The machine carried %s charged queries a second when more clients waited at once: each transaction of the ledger then carries more charges, "+
				"and each batch to the backend more queries, so a charged query costs less.", fmtQPS(t))
		}
	}
	judged := statOf(c.judged)
	if judged.n == 0 {
		judged = ch
	}
	if len(why) == 0 && judged.med < t {
		s += fmt.Sprintf(" Neither ceiling rules the target out in this run: dpproxy misses it by a factor of %s (at %s q/s, the more of 32 and 128 clients in each run).",
			strconv.FormatFloat(t/judged.med, 'f', 1, 64), fmtQPS(judged.med))
	}
	return s, strings.Join(why, "; ")
}

// fmt1 writes a figure in µs with one decimal.
func fmt1(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// fmtT writes a target as its constant is written: 1.2, 50, 20000.
func fmtT(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func fmtX(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + "×"
}

func fmtQPS(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return groupThousands(int64(math.Round(f)))
}

func runsN(n int) string { return fmt.Sprintf("%d run%s", n, plural(n)) }

func rangeX(s stat) string {
	if s.n <= 1 {
		return "one run"
	}
	return fmtX(s.min) + " to " + fmtX(s.max) + " over " + runsN(s.n)
}

func rangeUS(s stat) string {
	if s.n <= 1 {
		return "one run"
	}
	return fmt1(s.min) + " to " + fmt1(s.max) + " µs over " + runsN(s.n)
}

func rangeQPS(s stat) string {
	if s.n <= 1 {
		return "one run"
	}
	return fmtQPS(s.min) + " to " + fmtQPS(s.max) + " over " + runsN(s.n)
}

// floorsWorkloadMD describes the floors and ceilings in BENCHMARKS.md's
// list of what each workload measures.
const floorsWorkloadMD = `**Floors and ceilings**, measured next to the figures they bound, so
that the report can tell a target dpproxy misses from one this machine
rules out (the *Where a target is missed* section computes its statements
from them):

- **A bare Go relay** (` + "`loadgen relay`" + `, ` + "`bench/loadgen/relay.go`" + `): copies
  the bytes between each client and its own server connection, one
  goroutine per direction, and nothing else (no parsing, no pooling).
  Workload 4's passthrough runs through it next to dpproxy, PgBouncer and
  direct access (same duration and runs, its CPU time per query from
  /proc), and workload 9's next to dpproxy and direct MariaDB: the least a
  proxy written in Go with a goroutine per connection does.
- **Round-trip floors of workload 3**: ` + "`SELECT 1`" + ` with one client,
  answered by dpproxy itself (no cache, no backend: a query without FROM
  made of constants, parsed each time where a cache hit's text is
  memoized) and sent directly to PostgreSQL (and, for workload 9,
  the same through the MySQL front end and directly to MariaDB); and the
  cache-hit query sent to a Go server that answers every query with the
  same rows from memory and does nothing else (` + "`loadgen answer`" + `,
  ` + "`bench/loadgen/answer.go`" + `: no authentication, no parsing, no
  session), over each protocol: the least any server's round trip takes
  with that client on these cores. Next to each cache-hit run.
- **Ceilings of workload 5**: its rewritten SQL (from ` + "`dpproxy explain`" + `,
  the constant made distinct for each query as in workload 5) sent
  directly to PostgreSQL by 32 clients, with no proxy and no ledger; and
  the embedded ledger alone, ` + "`BenchmarkCommitParallel`" + ` in ` + "`budget`" + ` (32
  committers reserving and charging, no backend).

`
