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
	f.w5.judged = mostChargedOfEachRun(series["w5"], series["w5.c128"], series["w5.pgbench.c256"])
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
	others := func(r loadResult) float64 {
		if r.ProcCPUUS > 0 && r.MachineCPUUS > r.ProcCPUUS {
			return r.MachineCPUUS - r.ProcCPUUS
		}
		return 0
	}
	f.w5.othersCPU32, f.w5.othersCPU128 = runValues(series, "w5", others), runValues(series, "w5.c128", others)
	f.w5.machineCPU128 = runValues(series, "w5.c128", machine)
	f.w5.othersCPUPgb, f.w5.machineCPUPgb = runValues(series, "w5.pgbench.c256", others), runValues(series, "w5.pgbench.c256", machine)
	client := func(r loadResult) float64 { return r.ClientCPUUS }
	f.w5.clientCPU128, f.w5.clientCPUPgb = runValues(series, "w5.c128", client), runValues(series, "w5.pgbench.c256", client)
	for _, r := range series["w5.direct"] {
		f.w5.cores = max(f.w5.cores, r.MachineCores)
	}
	if f.w5.cores == 0 && len(f.w5.directCPU) > 0 {
		f.w5.cores = runtime.NumCPU() // results from before loadgen counted them
	}
	f.w5.passCPU = f.pass["simple"].proxyCPU
	for _, n := range scaleClients {
		if r := series[fmt.Sprintf("w10.clients.cachehit.c%d", n)]; n > 1 && len(r) > 0 {
			f.w5.hitCPU = append(f.w5.hitCPU, r[0].ProcCPUUS)
		}
	}
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
