package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Workload 5's ceilings: what bounds the charged queries a second on
// this machine (PostgreSQL alone, the ledger alone, the machine's CPU),
// as rows beside the figure and as the "why" text.

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
	// othersCPU32 and othersCPU128 are what every other process and the
	// kernel spent per charged query through dpproxy, with 32 and with 128
	// clients (every process's CPU less dpproxy's, run by run): PostgreSQL
	// and the clients, whose share can be less than directCPU when
	// dpproxy's batches carry several queries to PostgreSQL at once.
	othersCPU32, othersCPU128 []float64
	// machineCPU128 is every process's CPU per charged query with 128
	// clients (proxyMachineCPU is the 32 clients').
	machineCPU128 []float64
	// othersCPUPgb and machineCPUPgb are othersCPU128 and machineCPU128
	// with pgbench's 256 clients instead of loadgen's.
	othersCPUPgb, machineCPUPgb []float64
	// clientCPU128 and clientCPUPgb are the load generator's own CPU per
	// charged query: loadgen's 128 clients (Go, pgx) and pgbench's 256.
	clientCPU128, clientCPUPgb []float64
	// ledgerTxUS and chargesPerTx are the ledger's transactions in
	// workload 5: their mean wall time (dpproxy's counters) and the
	// charges each carried.
	ledgerTxUS, chargesPerTx []float64
	cores                    int
	// passCPU is dpproxy's CPU per passthrough query (workload 4, simple
	// protocol): a repeated text, so no parse, no plan, no noise, no
	// ledger; only the messages a charged query relays too.
	passCPU []float64
	// hitCPU is dpproxy's CPU per cache hit with 16, 64 and 256 clients
	// (workload 10): the client's query read, its plan and answer found,
	// the answer written; a charged query does all that too, and plans,
	// reaches the backend (batched), adds noise and is charged.
	hitCPU []float64
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
	// judged is the rate the target is judged on: in each run the most
	// of the rates with loadgen's 32 and 128 clients and pgbench's 256
	// (those of them the run has).
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
// were measured to take, directly or through dpproxy (with any client
// count or load generator); 0 when neither was measured.
func (c chargedCeiling) leastOthersCPU() float64 {
	return leastOf(slices.Concat(c.directCPU, c.othersCPU32, c.othersCPU128, c.othersCPUPgb))
}

// relayFloor is the least CPU per query dpproxy was measured to spend on
// what every charged query does too: a cache hit, or a passthrough's
// relaying (whose backend round trip is whole where a charged query's is
// batched); 0 when neither was measured.
func (c chargedCeiling) relayFloor() float64 {
	return leastOf(slices.Concat(c.passCPU, c.hitCPU))
}

// measuredCeiling is cores / the least CPU per charged query every
// process together took in a run through dpproxy (32 or 128 clients,
// loadgen's or pgbench's):
// the rate if the cores were kept busy at the cost one run measured. 0
// when not measured.
func (c chargedCeiling) measuredCeiling() float64 {
	least := leastOf(slices.Concat(c.proxyMachineCPU, c.machineCPU128, c.machineCPUPgb))
	if c.cores == 0 || least == 0 {
		return 0
	}
	return float64(c.cores) * 1e6 / least
}

// chargedRows are workload 5's own rows: with 32 clients (w5) and, in the
// same runs, 128 (w5.c128) and pgbench's 256 (w5.pgbench.c256); judged is
// the rate the target is judged on (chargedCeiling.judged).
func chargedRows(series map[string][]loadResult, c chargedCeiling) []Row {
	judged := c.judged
	p50 := func(r loadResult) float64 { return r.P50US }
	var rows []Row
	// A rate target is judged where the rate peaks: more clients give the
	// group commit and the backend's batches more to gather, and a lighter
	// client leaves the system under test more of the two cores.
	charged, txPer := chargedRates(series["w5"])
	charged128, txPer128 := chargedRates(series["w5.c128"])
	chargedPgb, txPerPgb := chargedRates(series["w5.pgbench.c256"])
	rows = append(rows,
		mk(w5Name, w5Charged32, "q/s", charged, "", nil),
		mk(w5Name, w5Charged, "q/s", judged, "≥ 20,000/s", ge(20000)),
		mk(w5Name, "ledger transactions (WAL fsyncs) per charged query", "", txPer, "< 1 (group commit)", lt(1)),
		mk(w5Name, "p50 latency", "ms", scale(runValues(series, "w5", p50), 1e-3), "", nil),
	)
	if len(charged128) == 0 && len(chargedPgb) == 0 {
		rows[len(rows)-3].Note = "no 128-client runs in this run: the 32-client rate"
	}
	procCPU := func(r loadResult) float64 { return r.ProcCPUUS }
	clientCPU := func(r loadResult) float64 { return r.ClientCPUUS }
	if len(charged128) > 0 {
		rows = append(rows,
			mk(w5Name128, w5Charged32, "q/s", charged128, "", nil),
			mk(w5Name128, "dpproxy CPU time per charged query (user + system)", "µs", runValues(series, "w5.c128", procCPU), "", nil),
			mk(w5Name128, "ledger transactions (WAL fsyncs) per charged query", "", txPer128, "< 1 (group commit)", lt(1)),
			mk(w5Name128, "p50 latency", "ms", scale(runValues(series, "w5.c128", p50), 1e-3), "", nil),
		)
		if c := positive(runValues(series, "w5.c128", clientCPU)); len(c) > 0 {
			rows = append(rows, mk(w5Name128, w5ClientCPU+" (loadgen: Go, pgx, a goroutine per client)", "µs", c, "", nil))
		}
	}
	if len(chargedPgb) > 0 {
		rows = append(rows,
			mk(w5NamePgb, w5Charged32, "q/s", chargedPgb, "", nil),
			mk(w5NamePgb, "dpproxy CPU time per charged query (user + system)", "µs", runValues(series, "w5.pgbench.c256", procCPU), "", nil),
			mk(w5NamePgb, "ledger transactions (WAL fsyncs) per charged query", "", txPerPgb, "< 1 (group commit)", lt(1)),
			mk(w5NamePgb, "mean latency (pgbench's progress reports)", "ms", scale(runValues(series, "w5.pgbench.c256", func(r loadResult) float64 { return r.MeanUS }), 1e-3), "", nil),
		)
		if c := positive(runValues(series, "w5.pgbench.c256", clientCPU)); len(c) > 0 {
			rows = append(rows, mk(w5NamePgb, w5ClientCPU+" (pgbench: C, libpq, two threads)", "µs", c, "", nil))
		}
		rows = append(rows, mk(w5NamePgb, "charged queries/s, pgbench's 256 clients ÷ loadgen's 128 (the runs next to each other)", "×", chargedRatioByRun(series["w5.pgbench.c256"], series["w5.c128"]), "", nil))
	}
	return rows
}

// chargedRatioByRun is, for each run both a and b measured, a's charged
// rate ÷ b's, in the order of the runs.
func chargedRatioByRun(a, b []loadResult) []float64 {
	rate := func(r loadResult) float64 { return float64(r.LedgerChg) / r.Seconds }
	byRun := map[int]loadResult{}
	for _, r := range b {
		byRun[r.Run] = r
	}
	var out []float64
	for _, r := range a {
		if o, ok := byRun[r.Run]; ok && r.Seconds > 0 && o.Seconds > 0 && r.LedgerChg > 0 && o.LedgerChg > 0 {
			out = append(out, rate(r)/rate(o))
		}
	}
	return out
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
	if o := positive(c.othersCPU32); len(o) > 0 {
		rows = append(rows, mk(w, "CPU time per charged query of every other process and the kernel, through dpproxy, 32 clients (every process's less dpproxy's)", "µs", o, "", nil))
	}
	if o := positive(c.othersCPU128); len(o) > 0 {
		rows = append(rows, mk(w, "CPU time per charged query of every other process and the kernel, through dpproxy, 128 clients (every process's less dpproxy's)", "µs", o, "", nil))
	}
	if o := positive(c.othersCPUPgb); len(o) > 0 {
		rows = append(rows, mk(w, "CPU time per charged query of every other process and the kernel, through dpproxy, 256 pgbench clients (every process's less dpproxy's)", "µs", o, "", nil))
	}
	if h := positive(c.hitCPU); len(h) > 0 {
		rows = append(rows, mk(w, "dpproxy CPU time per cache hit, 16, 64 and 256 clients (workload 10: what a charged query does too)", "µs", h, "", nil))
	}
	if ceil := c.cpuCeiling(c.relayFloor()); ceil > 0 {
		r := mk(w, "ceiling: the machine's CPU if a charged query cost dpproxy no more than a cache hit or a passthrough (cores ÷ (everything but dpproxy's CPU, directly or through it, + the least of workload 10's cache hit and workload 4's), the least of each)", "q/s", []float64{ceil}, "", nil)
		r.Note = fmt.Sprintf("%d cores", c.cores)
		rows = append(rows, r)
	}
	if pass, ledger := c.relayFloor(), leastOf(c.ledgerCPU); pass > 0 && ledger > 0 {
		rows = append(rows, mk(w, "CPU time per charge of the embedded ledger alone (BenchmarkCommitParallel, the whole process)", "µs", positive(c.ledgerCPU), "", nil))
		r := mk(w, "ceiling: the machine's CPU if a charged query cost dpproxy no more than a cache hit or a passthrough, and a durable charge (cores ÷ (everything but dpproxy's CPU, directly or through it, + the least of workload 10's cache hit and workload 4's + the ledger's per charge), the least of each)", "q/s", []float64{c.cpuCeiling(pass + ledger)}, "", nil)
		r.Note = fmt.Sprintf("%d cores", c.cores)
		rows = append(rows, r)
	}
	if ceil := c.measuredCeiling(); ceil > 0 {
		r := mk(w, "estimate: the machine's CPU at the measured cost of a charged query (cores ÷ the least CPU per charged query of every process in a run, loadgen's 32 or 128 clients or pgbench's 256)", "q/s", []float64{ceil}, "", nil)
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
		if o32, o128, oPgb := positive(c.othersCPU32), positive(c.othersCPU128), positive(c.othersCPUPgb); len(o32) > 0 || len(o128) > 0 || len(oPgb) > 0 {
			var parts []string
			for _, o := range []struct {
				clients string
				v       []float64
			}{{"32 clients", o32}, {"128 clients", o128}, {"pgbench's 256 clients", oPgb}} {
				if len(o.v) > 0 {
					st := statOf(o.v)
					parts = append(parts, fmt.Sprintf("%s µs per charged query with %s (%s)", fmt1(st.med), o.clients, rangeUS(st)))
				}
			}
			s += " Through dpproxy every other process and the kernel took " + joinAnd(parts) + " (every process's CPU less dpproxy's)"
			if through := leastOf(slices.Concat(o32, o128, oPgb)); through < slices.Min(d) {
				s += fmt.Sprintf(": %s µs at the least, below the direct figure, since dpproxy sends PostgreSQL several clients' queries in one batch", fmt1(through))
			}
			s += "."
		}
		s += clientCPUText(c)
		s += fmt.Sprintf(" At %s a second, %d cores give %s µs per query: %s µs at most for dpproxy, at the least of these figures.",
			fmtQPS(t), c.cores, fmt1(budget), fmt1(max(0, budget-least)))
		if pass := c.relayFloor(); pass > 0 {
			ceil := c.cpuCeiling(pass)
			var floors []string
			if h := positive(c.hitCPU); len(h) > 0 {
				floors = append(floors, fmt.Sprintf("a cache hit costs dpproxy %s µs at the least (workload 10, 16 to 256 clients: the client's query read, "+
					"its plan and answer found, the answer written)", fmt1(slices.Min(h))))
			}
			if p := positive(c.passCPU); len(p) > 0 {
				floors = append(floors, fmt.Sprintf("relaying a repeated public-table query %s µs (workload 4: the client's and the backend's messages, "+
					"each backend round trip whole where a charged query's are batched)", fmt1(slices.Min(p))))
			}
			s += fmt.Sprintf(" A charged query does all a cache hit does, and relays the client's messages and a statement to the backend as a passthrough does: %s. "+
				"So even if a charged query cost dpproxy no more than the lesser, %s µs, the cores would carry at most %s queries/s",
				strings.Join(floors, "; "), fmt1(pass), fmtQPS(ceil))
			if ceil < t {
				s += fmt.Sprintf(", below %s: the target is out of reach on this machine whatever dpproxy does beyond that.", fmtQPS(t))
				why = append(why, fmt.Sprintf("the machine's CPU allows at most %s q/s even at the cost of a cache hit or a passthrough (PostgreSQL and the clients %s µs, dpproxy %s µs per query on %d cores)",
					fmtQPS(ceil), fmt1(least), fmt1(pass), c.cores))
			} else if ledger := leastOf(c.ledgerCPU); ledger > 0 {
				both := c.cpuCeiling(pass + ledger)
				s += fmt.Sprintf(". A charged query is also charged: the embedded ledger spends %s µs of CPU per charge at the least "+
					"(BenchmarkCommitParallel, 32 committers: the reservation, the group commit and its share of the fsync, the whole process counted), "+
					"so even if a charged query cost dpproxy no more than that and a charge, the cores would carry at most %s queries/s",
					fmt1(ledger), fmtQPS(both))
				if both < t {
					s += fmt.Sprintf(", below %s: the target is out of reach on this machine with the embedded ledger, whatever dpproxy does beyond that and charging.", fmtQPS(t))
					why = append(why, fmt.Sprintf("the machine's CPU allows at most %s q/s even at the cost of a cache hit or a passthrough and a durable charge (PostgreSQL and the clients %s µs, dpproxy %s µs, the ledger %s µs per query on %d cores)",
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
				"counted here).", fmt1(ps.med), rangeUS(ps))
			if ceil := c.measuredCeiling(); ceil > 0 {
				s += fmt.Sprintf(" At the least CPU per charged query that every process together took in a run, the cores kept busy would carry about %s queries/s.", fmtQPS(ceil))
			}
		}
		if m := positive(c.proxyMachineCPU); len(m) > 0 {
			s += fmt.Sprintf(" Through dpproxy, with 32 clients, every process together spent %s µs per charged query with the machine %.0f %% busy: "+
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
		s += fmt.Sprintf(" Neither ceiling rules the target out in this run: dpproxy misses it by a factor of %s (at %s q/s, the most of loadgen's 32 and 128 clients and pgbench's 256 in each run).",
			strconv.FormatFloat(t/judged.med, 'f', 1, 64), fmtQPS(judged.med))
	}
	return s, strings.Join(why, "; ")
}

// joinAnd joins parts as a list in prose: "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// clientCPUText says what the load generators themselves took per
// charged query with 128 clients, where both were measured: CPU of the
// two cores the system under test did not have.
func clientCPUText(c chargedCeiling) string {
	lg, pgb := positive(c.clientCPU128), positive(c.clientCPUPgb)
	if len(lg) == 0 || len(pgb) == 0 {
		return ""
	}
	return fmt.Sprintf(" Of that, the load generator itself took %s µs per charged query with loadgen's 128 clients (Go, pgx, a goroutine each; %s) "+
		"and %s µs with pgbench's 256 (C, libpq, two threads; %s): the clients share the two cores with dpproxy and PostgreSQL, "+
		"so the lighter client leaves them more.", fmt1(median(lg)), rangeUS(statOf(lg)), fmt1(median(pgb)), rangeUS(statOf(pgb)))
}

const charged5MD = ` The rate depends on the machine's day more than
on anything measured next to it: the same code (bf5de08 and later, which
changed only the bench) judged 12,952 charged q/s in a full run on a day
PostgreSQL alone ran this SQL at 37,271 q/s and PostgreSQL with the
clients took 53 µs of CPU per query directly, and 14,089 in a default
run on a fresh machine; the run before those (44f4cef), 15,489 with
PostgreSQL alone at 63,020 q/s and 31.3 µs. On those days the machine's
system side (its system calls, wake-ups and fsyncs) was two to three
times slower than on a fast one, and a charged query makes more of them
than anything else here. Where its CPU went on such a day (a CPU profile
of dpproxy at 7fcaab6 on the AMD EPYC host, 128 clients, two runs of
10 s: 15,690–16,198 charged q/s, 36 charges per ledger transaction,
62–64 µs of dpproxy's CPU and 108–111 µs of every process's per charged
query, the machine 89 % busy): system calls 34 %; the client's messages
26 % (reading 13 %, writing 13 %: each answer's write wakes the client's
process); the bounded query's round trip to PostgreSQL 13 %; the
ledger's writer 19 % (the WAL's frames 8 %, of which its fsync 5 %; the
inserts 6 %); the charge's reservation and the goroutine that commits it
while the database works 7 %; the plan from the shape's template 7 %;
release and noise 5 %; Go's allocator 11 %, scheduler 5 % and collector
3 % (spread over the rest). Relaying the client's messages and the
bounded query, which a passthrough does too, took about 23 µs of a
charged query and its durable charge about 11 (the writer's share); the
other processes (PostgreSQL, the clients, their kernel time) took
46–48 µs. At 20,000 q/s two processors give every process 100 µs per
query, 89 µs at that day's 89 % busy: about 8 µs would be left for
everything else dpproxy does (the plan, the reservation, noise, the
session, Go's runtime), where that took 28–30 µs. The report's CPU
ceilings count that work as free, so they need not rule the target out;
on such a day it needs dpproxy's own work beyond relaying and charging
cut to under a third, or the relaying cheaper, which no change measured
so far has come near. Each process's share of the machine, read from
/proc over 6 s of two later runs, slower ones (10,952–11,633 charged
q/s, 84–87 µs of dpproxy's CPU per charged query): dpproxy 49–50 %, the
load generator's 128 pgx clients 21 %, PostgreSQL 11–12 % (the combined
batches make its share of a query small), the kernel's network softirqs
8 %, idle 9–10 %. On a fast day the same ceilings leave room: in a
default run at abeedd3 on 2 December 2026, PostgreSQL alone ran this SQL
at 81,188–84,259 q/s, and 128 clients reached 24,345–26,214 charged q/s
at 41–45 µs of dpproxy's CPU per charged query (32 clients:
15,061–16,257), and the full run at 6ba580e judged 22,210. The full run
at 34c2d84 the same day, on a host with another processor (AMD EPYC,
where the runs before had Intel Xeon) and no change to the code that
serves this workload, had a slow day's system side: PostgreSQL alone
20,772–28,843 q/s, PostgreSQL and the clients 67–94 µs of CPU per
query, and 10,409–13,192 charged q/s; a default run at f97968c right
after it (1,124 s), PostgreSQL alone 23,961–33,490 q/s and 10,341–14,189
charged q/s. On the same host on 2 December, a default run at cb4c58f
(1,185 s) judged 10,466 (PostgreSQL alone 26,520–34,292 q/s) and the
run with 100 M visits at ea3f702 (1,828 s) 11,090, every
other issue 18 target met in both; the CPU ceiling at a cache hit's and
a durable charge's cost was 20,387 and 22,474 q/s.
The load generator is one of the other processes, and it need not cost
what loadgen's clients do (Go, pgx, a goroutine per connection):
pgbench's are C (libpq, two threads, each polling its connections). On
the rig on 2 December at 0c400e1, next to each other against one
dpproxy, 128 pgbench clients charged 15,692 q/s and took 21.4 µs of CPU
per query themselves, 128 loadgen clients 13,922 q/s and 34.8 µs; with
pgbench, 256 clients charged 16,695–18,289 q/s, 128 clients
15,797–16,095 and 512 clients 11,372–16,218, in turns. So the report
judges the target on pgbench's 256 clients too. Even then the machine
was not saturated: over one 8 s run of pgbench's 256 clients (its
connections included) it spent 55 % in user code, 26 % in the kernel
and 8 % in network softirqs, and was idle 6 % and waiting on I/O (the
ledger's fsync) 5 % of the time. The first default run with pgbench (at
0c400e1, its 128 clients, 1,130 s, the window's edges then counting
the whole ledger while the load ran) judged 15,246 (pgbench
12,748–17,823 q/s, loadgen's 128 clients 11,877–15,682); the second (at
606b3b6, pgbench's 256 clients, 1,135 s) 11,897, the host slowing as it
ran: PostgreSQL alone's CPU per query rose from 53.9 to 73.1–79.9 µs and
pgbench's rate fell from 16,304 to 7,931–8,619 q/s. The run with 100 M
visits right after it (at 606b3b6, 1,720 s: these figures) judged 13,602,
pgbench's 256 clients 9,605–19,394 q/s.
How it got here, each step measured in turns on the development machine
(from 6,165 charged q/s when issue 18 was filed): the ledger's group
commit gathers until as many charges as its previous transaction carried
are queued, yielding the processor instead of a 250 µs sleep that took
1.1 ms, and inserts 16 charges per statement (the ledger alone: 16,000
→ 28,000–43,000 charges/s); a table whose privacy unit is its primary
key is sent without the per-person step (PostgreSQL alone on this SQL
10,600–16,700 → 24,700 q/s); the query's constants go to PostgreSQL as
parameters, one statement prepared per connection (4,000–4,700 →
4,600–5,900 charged q/s); short bounded statements seen before go to
PostgreSQL in combined batches, one write per batch
(` + "`backend/pgcombine.go`" + `; 5,200–6,900 → 6,400–7,700); a query differing from
an earlier one only in the integers its WHERE compares gets its plan
from its shape's template, checked to give exactly the plan a full
analysis gives (` + "`rewrite/template.go`" + `; 2 µs against 16–19 µs per plan;
7,700–10,800 → 12,500–14,400); the ledger's writer gives each charge its
ID itself, without reading ` + "`RETURNING`" + ` rows back (the ledger alone per
charge, 32 committers: 17–20 → 10–13 µs of CPU); metric series kept per
label set, mechanisms memoized per analyst and parameters, and the
budget's renewal charges kept as spans of at most a second (5,084–6,872
→ 7,111–7,645 on a slower day); a combined text stays admitted once a
run of it alone was short, and a lane counts as stalled after four times
the recent batches' duration, opening a spare one (` + "`backend/combine.go`" + `;
128 clients 8,168–8,762 → 10,585–13,224); and a text that ran
successfully before is charged as soon as its bounded statement is sent
(` + "`backend.WithSent`" + `, ` + "`engine/charge.go`" + `), so the group commit overlaps the
database's work (0.10 → 0.084 ledger transactions per charge; the
median pair 1.06× with 32 clients, 1.04× with 128).
Measured on 2 December on the rig (loadgen's 128 clients, in turns):
the ledger with ` + "`synchronous=OFF`" + `, never synced and not durable, a
measurement only, charged 12,564–14,721 q/s against 10,063–10,716 as
committed: the durable commit costs something, but without it the rate
is still far from 20,000; and the writer's own fdatasync of the WAL
after each commit with ` + "`synchronous=NORMAL`" + ` 11,119–13,875 against
12,825–15,798, within the noise.
Tried and dropped, each no gain in turns: the ledger written with
` + "`synchronous=NORMAL`" + ` and never synced (6,557–8,082 against 7,949–9,271 as
committed: the machine stays 83–87 % busy without a sync, so the fsync's
wait is not what holds this workload back); a writer committing without
syncing while another goroutine fdatasyncs in parallel (transactions of
3 charges instead of 10; 6,142–8,271); fdatasync instead of SQLite's
fsync (no less CPU per charge); a group-commit window of 1 ms
waiting for twice the previous transaction's charges (9,554–11,019
against 12,224–12,338 charged q/s in two rounds: the writer's yielding
loop spends the processor the committers need); a combining lane per processor instead
of one (within the noise); and charging every text when its statement
is sent (no gain, and it would charge the queries the database refuses
before reading a row, which are refunded now).
`
