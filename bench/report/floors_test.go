package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The statements claim a target out of reach only when every run's floor
// (or ceiling) supports it, and otherwise say by how much it was missed.

func TestCPUFloorText(t *testing.T) {
	for _, tc := range []struct {
		name      string
		p         passFloor
		out       bool
		wantParts []string
	}{
		{
			name:      "relay above 1.2× PgBouncer in every run",
			p:         passFloor{proxyCPU: []float64{58, 60, 62}, relayCPU: []float64{41, 42, 43}, pgbCPU: []float64{28.5, 29, 28}},
			out:       true,
			wantParts: []string{"above 1.2× in every run", "dpproxy cannot meet it"},
		},
		{
			name:      "relay within 1.2× in one run",
			p:         passFloor{proxyCPU: []float64{58, 60, 62}, relayCPU: []float64{41, 33, 43}, pgbCPU: []float64{28.5, 29, 28}},
			wantParts: []string{"within 1.2× in at least one run", "does not show the target out of reach", "misses it by"},
		},
		{
			name:      "dpproxy cheaper than the relay: no floor",
			p:         passFloor{proxyCPU: []float64{38, 39, 40}, relayCPU: []float64{41, 42, 43}, pgbCPU: []float64{28.5, 29, 28}},
			wantParts: []string{"no floor for it"},
		},
		{
			name:      "dpproxy meets the target",
			p:         passFloor{proxyCPU: []float64{30, 31, 32}, relayCPU: []float64{41, 42, 43}, pgbCPU: []float64{28.5, 29, 28}},
			wantParts: []string{"dpproxy meets the target"},
		},
		{
			name:      "relay not measured",
			p:         passFloor{proxyCPU: []float64{58}, pgbCPU: []float64{28}},
			wantParts: []string{"not measured"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, reason := cpuFloorText("simple", tc.p)
			checkStatement(t, text, reason, tc.out, tc.wantParts)
		})
	}
}

func TestMySQLFloorText(t *testing.T) {
	direct := []float64{20970, 21000, 20500}
	for _, tc := range []struct {
		name      string
		binary    bool
		m         myPassFloor
		out       bool
		wantParts []string
	}{
		{
			name:      "relay below 0.8× in every run",
			m:         myPassFloor{proxyTPS: []float64{7958, 8000, 7900}, relayTPS: []float64{11541, 11600, 11000}, directTPS: direct},
			out:       true,
			wantParts: []string{"0.55× direct MariaDB's TPS", "out of reach for any proxy"},
		},
		{
			name:      "relay reaches 0.8× in one run",
			m:         myPassFloor{proxyTPS: []float64{7958, 8000, 7900}, relayTPS: []float64{11541, 17000, 11000}, directTPS: direct},
			wantParts: []string{"reaches 0.8× in at least one run", "misses it by"},
		},
		{
			name:      "dpproxy outruns the relay (binary protocol)",
			binary:    true,
			m:         myPassFloor{proxyTPS: []float64{5934, 6000, 5900}, relayTPS: []float64{4000, 4100, 3900}, directTPS: direct},
			wantParts: []string{"outruns the relay", "prepare, execute and close", "no ceiling"},
		},
		{
			name:      "dpproxy level with the relay (text protocol): still its floor",
			m:         myPassFloor{proxyTPS: []float64{12600, 12700, 12200}, relayTPS: []float64{12541, 12400, 12000}, directTPS: direct},
			out:       true,
			wantParts: []string{"out of reach for any proxy", "within this machine's run-to-run noise"},
		},
		{
			name:      "dpproxy clearly ahead of the relay (text protocol): no floor",
			m:         myPassFloor{proxyTPS: []float64{14000, 14100, 13900}, relayTPS: []float64{11541, 11600, 11000}, directTPS: direct},
			wantParts: []string{"outruns the relay", "no ceiling"},
		},
		{
			// Both relays miss in every run, but dpproxy outruns them:
			// neither is a ceiling for it, so nothing is ruled out.
			name: "dpproxy ahead of both relays, each below 0.8× in every run (text protocol): no ceiling",
			m: myPassFloor{proxyTPS: []float64{14000, 14100, 13900}, relayTPS: []float64{11541, 11600, 11000},
				haproxyTPS: []float64{11100, 11300, 10900}, directTPS: direct},
			wantParts: []string{"HAProxy in TCP mode", "reaches 0.53×", "HAProxy, the one in C, stays below 0.8× in every run too",
				"outruns it as well", "several in one write", "no ceiling", "does not show the target out of reach", "misses it by 1.19×"},
		},
		{
			name: "HAProxy reaches 0.8× in one run: not out of reach",
			m: myPassFloor{proxyTPS: []float64{14000, 14100, 13900}, relayTPS: []float64{11541, 11600, 11000},
				haproxyTPS: []float64{11100, 17000, 10900}, directTPS: direct},
			wantParts: []string{"HAProxy in TCP mode", "HAProxy reaches 0.8× in at least one run", "does not show the target out of reach"},
		},
		{
			name: "dpproxy level with the Go relay but HAProxy reaches 0.8× once: not out of reach",
			m: myPassFloor{proxyTPS: []float64{12600, 12700, 12200}, relayTPS: []float64{12541, 12400, 12000},
				haproxyTPS: []float64{11100, 17000, 10900}, directTPS: direct},
			wantParts: []string{"HAProxy reaches 0.8× in at least one run"},
		},
		{
			name: "dpproxy level with the Go relay, HAProxy below in every run: out of reach",
			m: myPassFloor{proxyTPS: []float64{12600, 12700, 12200}, relayTPS: []float64{12541, 12400, 12000},
				haproxyTPS: []float64{11100, 11300, 10900}, directTPS: direct},
			out:       true,
			wantParts: []string{"HAProxy in TCP mode", "out of reach for any proxy"},
		},
		{
			name:   "dpproxy ahead of both relays in the binary protocol: no floor",
			binary: true,
			m: myPassFloor{proxyTPS: []float64{14000, 14100, 13900}, relayTPS: []float64{11541, 11600, 11000},
				haproxyTPS: []float64{11100, 11300, 10900}, directTPS: direct},
			wantParts: []string{"outruns the relay", "no ceiling"},
		},
		{
			name:      "dpproxy meets the target",
			m:         myPassFloor{proxyTPS: []float64{17000, 17500, 17200}, relayTPS: []float64{11541, 11600, 11000}, directTPS: direct},
			wantParts: []string{"dpproxy meets the target"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, reason := mysqlFloorText("text protocol", tc.binary, tc.m)
			checkStatement(t, text, reason, tc.out, tc.wantParts)
		})
	}
}

func TestCacheFloorText(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c         cacheFloor
		out       bool
		wantParts []string
	}{
		{
			name:      "no round trip within 50 µs in any run",
			c:         cacheFloor{hit: []float64{62, 70, 73}, local: []float64{74, 80, 77}, server: []float64{71, 77, 75}},
			out:       true,
			wantParts: []string{"PostgreSQL's own `SELECT 1`", "takes 75.0 µs", "out of reach on this machine", "7.0 µs faster than dpproxy's own"},
		},
		{
			name:      "the database answers within 50 µs once: dpproxy's round trip is in the way",
			c:         cacheFloor{hit: []float64{62, 70, 73}, local: []float64{74, 80, 77}, server: []float64{48, 77, 75}},
			wantParts: []string{"Missed by 20.0 µs", "dpproxy's round trip (its front end, Go's scheduler) costs more"},
		},
		{
			name:      "dpproxy answers SELECT 1 within 50 µs once",
			c:         cacheFloor{hit: []float64{62, 70, 73}, local: []float64{45, 80, 77}, server: []float64{71, 77, 75}},
			wantParts: []string{"Missed by 20.0 µs", "does not show the target out of reach"},
		},
		{
			name:      "a hit within 50 µs once",
			c:         cacheFloor{hit: []float64{49, 70, 73}, local: []float64{74, 80, 77}, server: []float64{71, 77, 75}},
			wantParts: []string{"Missed by 20.0 µs", "does not show the target out of reach"},
		},
		{
			name:      "the cache path costs more than the round trip",
			c:         cacheFloor{hit: []float64{90, 92, 95}, local: []float64{74, 80, 77}, server: []float64{48, 77, 75}},
			wantParts: []string{"Missed by 42.0 µs", "15.0 µs more than dpproxy's own `SELECT 1`: that much is the cache path"},
		},
		{
			name:      "met",
			c:         cacheFloor{hit: []float64{42, 45, 44}, local: []float64{74, 80, 77}, server: []float64{71, 77, 75}},
			wantParts: []string{"The target is met"},
		},
		{
			name:      "floors not measured",
			c:         cacheFloor{hit: []float64{62, 70, 73}},
			wantParts: []string{"floors were not measured"},
		},
		{
			name:      "the answer from memory above 50 µs in every run",
			c:         cacheFloor{hit: []float64{88, 90, 95}, local: []float64{94, 107, 110}, server: []float64{91, 97, 97}, answer: []float64{64, 72, 69}},
			out:       true,
			wantParts: []string{"answering the same query from memory", "takes 69.0 µs", "out of reach on this machine for any server", "21.0 µs more than the answer from memory"},
		},
		{
			name:      "the answer from memory within 50 µs once: not out of reach, though the databases are",
			c:         cacheFloor{hit: []float64{62, 70, 73}, local: []float64{74, 80, 77}, server: []float64{71, 77, 75}, answer: []float64{45, 52, 60}},
			wantParts: []string{"Missed by 20.0 µs", "does not show the target out of reach", "18.0 µs more than the answer from memory"},
		},
		{
			name:      "met, with the answer from memory",
			c:         cacheFloor{hit: []float64{42, 45, 47}, answer: []float64{36, 38, 41}},
			wantParts: []string{"The target is met", "7.0 µs more than the answer from memory"},
		},
		{
			// Medians of noisy runs: the hit below the answer from memory
			// is said so, not as a negative cost.
			name:      "the hit's median below the answer from memory's",
			c:         cacheFloor{hit: []float64{40, 55, 64}, local: []float64{50, 63, 79}, server: []float64{57, 62, 75}, answer: []float64{53, 58, 63}},
			wantParts: []string{"Missed by 5.0 µs", "3.0 µs below the answer from memory's", "none of the hit's time shows as dpproxy's own"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, reason := cacheFloorText("PostgreSQL", "PostgreSQL", tc.c)
			checkStatement(t, text, reason, tc.out, tc.wantParts)
		})
	}
}

func TestChargedCeilingText(t *testing.T) {
	charged := []float64{3900, 3800, 4000}
	for _, tc := range []struct {
		name      string
		c         chargedCeiling
		out       bool
		wantParts []string
	}{
		{
			name:      "PostgreSQL alone below 20,000 in every run",
			c:         chargedCeiling{charged: charged, direct: []float64{12000, 14000, 13000}},
			out:       true,
			wantParts: []string{"PostgreSQL alone runs", "13,000 q/s", "out of reach end to end"},
		},
		{
			name:      "the ledger alone below 20,000",
			c:         chargedCeiling{charged: charged, direct: []float64{25000, 26000}, ledger: []float64{14311, 15199, 14390}},
			out:       true,
			wantParts: []string{"leaves room", "14,390 charges/s", "a ceiling under the target"},
		},
		{
			name:      "PostgreSQL above 20,000 in one run, ledger above",
			c:         chargedCeiling{charged: charged, direct: []float64{12000, 21000, 13000}, ledger: []float64{25000}},
			wantParts: []string{"leaves room", "not what bounds", "a factor of 5.1"},
		},
		{
			name:      "no ceilings measured",
			c:         chargedCeiling{charged: charged},
			wantParts: []string{"a factor of 5.1"},
		},
		{
			name:      "judged on the more of 32 and 128 clients",
			c:         chargedCeiling{charged: charged, judged: []float64{10000, 12500, 11000}},
			wantParts: []string{"a factor of 1.8 (at 11,000 q/s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, reason := chargedCeilingText(tc.c)
			checkStatement(t, text, reason, tc.out, tc.wantParts)
		})
	}
}

func checkStatement(t *testing.T, text, reason string, out bool, want []string) {
	t.Helper()
	if got := reason != ""; got != out {
		t.Errorf("out of reach = %v (reason %q), want %v\n%s", got, reason, out, text)
	}
	if !out && strings.Contains(text, "out of reach") && !strings.Contains(text, "does not show the target out of reach") {
		t.Errorf("claims the target out of reach without the numbers for it:\n%s", text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
}

// TestReportFloors runs the report on a small results directory: the
// floors' rows appear next to their workloads and BENCHMARKS.md lists the
// targets they rule out.
func TestReportFloors(t *testing.T) {
	dir := t.TempDir()
	var raw strings.Builder
	add := func(series string, run int, data map[string]any) {
		b, err := json.Marshal(map[string]any{"series": series, "run": run, "data": data})
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(append(b, '\n'))
	}
	for r := 1; r <= 3; r++ {
		add("w3.c1", r, map[string]any{"p50_us": 65.0, "qps": 14000.0})
		add("w3.floor.local", r, map[string]any{"p50_us": 77.0})
		add("w3.floor.direct", r, map[string]any{"p50_us": 74.0})
		for _, mode := range []string{"simple", "extended"} {
			add("w4."+mode+".proxy", r, map[string]any{"qps": 12126.0, "proc_cpu_us_per_query": 58.0})
			add("w4."+mode+".relay", r, map[string]any{"qps": 12606.0, "proc_cpu_us_per_query": 41.0})
			add("w4."+mode+".proxy1p", r, map[string]any{"qps": 12826.0 * (0.95 + 0.01*float64(r)), "proc_cpu_us_per_query": 45.6})
			add("w4."+mode+".pgbouncer", r, map[string]any{"qps": 12826.0, "proc_cpu_us_per_query": 28.5})
			add("w4."+mode+".direct", r, map[string]any{"qps": 20000.0})
		}
		add("w5", r, map[string]any{"seconds": 8.0, "ledger_charges": 31200, "ledger_transactions": 3000, "p50_us": 7000.0, "proc_cpu_us_per_query": 200.0 + float64(r)})
		// One text, next to the first three runs: 6,000, 6,400 and 5,600
		// charged q/s against 3,900 each.
		add("w5.sametext", r, map[string]any{"seconds": 8.0, "ledger_charges": 48000 + 3200*((r+1)%3) - 3200, "ledger_transactions": 4000, "proc_cpu_us_per_query": 130.0})
		add("w5.direct", r, map[string]any{"qps": 13000.0, "machine_cpu_us_per_query": 80.0 + float64(r), "machine_busy": 0.98, "machine_cores": 2})
		add("w2k.direct_rewritten", r, map[string]any{"p50_us": 12000.0})
		add("w2k.direct_per_unit", r, map[string]any{"p50_us": 60000.0})
		add("w2k.direct_original", r, map[string]any{"p50_us": 10000.0})
	}
	// Workload 5 has more runs than its one-text series: its ratio pairs
	// each one-text run with the run next to it (the first three), not
	// with the last.
	for r := 4; r <= 5; r++ {
		add("w5", r, map[string]any{"seconds": 8.0, "ledger_charges": 16000, "ledger_transactions": 1538, "p50_us": 7000.0, "proc_cpu_us_per_query": []float64{201.5, 250}[r-4]})
	}
	got := reportOf(t, dir, map[string]string{
		"raw.jsonl":   raw.String(),
		"run.txt":     "total_seconds=1190\nquick=0\nidle_conns=10000\nmysql_note=--no-mysql\n",
		"gobench.txt": "BenchmarkCommitParallel-2   \t    8841\t     69491 ns/op\t     14390 charges/s\t         0.03167 tx/charge\n",
	})
	for _, w := range []string{
		"| 3 cache hit, 1 client | floor: SELECT 1 directly on PostgreSQL, p50 | 74.0 µs |",
		"| 4 passthrough, public table, 16 clients, simple protocol | CPU per query, bare Go relay ÷ PgBouncer (the floor of dpproxy's ≤ 1.2 target) | 1.439 × |",
		"| 5 small DP queries, distinct text, 32 clients | ceiling: the embedded ledger alone (BenchmarkCommitParallel: 32 committers, no backend) | 14390 charges/s |",
		"Out of reach on this machine, by this run's floors and ceilings:",
		"a bare Go relay alone costs 1.44× PgBouncer's CPU per query",
		"PostgreSQL alone runs the rewritten queries at 13,000 q/s",
		// 2 cores (as the bench recorded them) / (81 + 58) µs, the least
		// direct figure and the least passthrough.
		"At 20,000 a second, 2 cores give 100.0 µs per query: 19.0 µs at most for dpproxy",
		"the cores would carry at most 14,388 queries/s, below 20,000: the target is out of reach",
		"the machine's CPU allows at most 14,388 q/s even at the cost of a cache hit or a passthrough",
		"A charged query costs dpproxy 202.0 µs",
		"| 5 small DP queries, distinct text, 32 clients | dpproxy CPU time per charged query (user + system) | 202.0 µs |",
		// One text: 48,000 charges in 8 s against 31,200.
		"| 5 small DP queries, distinct text, 32 clients | charged queries/s with one text for every query (cache off: each still charged, its parse and analysis from the plan memo) | 6000 q/s | 5600 – 6400 (n=3) |",
		"| 5 small DP queries, distinct text, 32 clients | charged queries/s, one text ÷ distinct texts (the runs next to each other) | 1.538 × | 1.436 – 1.641 (n=3) |",
		"| 5 small DP queries, distinct text, 32 clients | dpproxy CPU time per charged query, one text (user + system) | 130.0 µs |",
		"dpproxy charged 6,000 queries/s (5,600 to 6,400 over 3 runs), 1.54× the distinct texts' rate in the runs next to them, at 130.0 µs of dpproxy's CPU per charged query: the most the plan templates could gain (a text's plan from the memo costs next to nothing), below 20,000 in every run",
		"| 2b bounding on a table keyed by its unit (patients) | rewritten ÷ original SQL, both directly on PostgreSQL (each round's pair, median) | 1.200 × |",
		"| 2b bounding on a table keyed by its unit (patients) | per-person form ÷ original SQL (the bounding step a key makes needless) (each round's pair, median) | 6.000 × |",
		"no round trip measured here is within 50 µs",
		"**The whole run** took 1,190 s",
		// dpproxy on one processor: its rows, and the why text's figures
		// (0.96, 0.97, 0.98 of PgBouncer's TPS; 45.6 ÷ 28.5 µs).
		"| 4 passthrough, public table, 16 clients, extended protocol | dpproxy on one processor (GOMAXPROCS=1) TPS ÷ PgBouncer TPS | 0.970 × | 0.960 – 0.980 (n=3) |",
		"| 4 passthrough, public table, 16 clients, simple protocol | CPU per query, dpproxy on one processor ÷ PgBouncer | 1.600 × |",
		"reached 0.97× PgBouncer's TPS in the simple protocol (0.96× to 0.98× over 3 runs) at 45.6 µs of CPU per query, 1.60× PgBouncer's (on two: 58.0 µs)",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("BENCHMARKS.md lacks %q", w)
		}
	}
	if t.Failed() {
		i := strings.Index(got, "## Where a target")
		t.Log(got[max(i, 0):])
	}
}

// Workload 5's CPU ceiling counts the ledger's CPU per charge when the
// passthrough's alone leaves room: out of reach only when relaying and
// charging together exceed the cores at 20,000 a second.
func TestChargedCeilingCountsTheLedger(t *testing.T) {
	for _, c := range []struct {
		ledgerCPU string
		want      []string
		not       string
	}{
		// 2 cores / (49 + 47) µs = 20,833 q/s: relaying alone leaves room;
		// / (49 + 47 + 49) µs = 13,793 q/s with the ledger: out of reach.
		{"49.0", []string{
			"the cores would carry at most 20,833 queries/s. A charged query is also charged: the embedded ledger spends 49.0 µs of CPU per charge at the least",
			"the cores would carry at most 13,793 queries/s, below 20,000: the target is out of reach on this machine with the embedded ledger",
			"| 5 small DP queries, distinct text, 32 clients | CPU time per charge of the embedded ledger alone (BenchmarkCommitParallel, the whole process) | 49.0 µs |",
		}, "Neither ceiling rules the target out"},
		// / (49 + 47 + 1) µs = 20,619 q/s: room left, the target missed.
		{"1.0", []string{"the cores would carry at most 20,619 queries/s.", "Neither ceiling rules the target out in this run"}, "out of reach on this machine with the embedded ledger"},
	} {
		raw := rawJSONL(t, 3, map[string]map[string]any{
			"w4.simple.proxy":     {"qps": 12126.0, "proc_cpu_us_per_query": 47.0},
			"w4.simple.pgbouncer": {"qps": 12826.0, "proc_cpu_us_per_query": 28.5},
			"w4.simple.direct":    {"qps": 20000.0},
			"w5":                  {"seconds": 8.0, "ledger_charges": 48000, "ledger_transactions": 5000, "p50_us": 5000.0, "proc_cpu_us_per_query": 180.0},
			"w5.direct":           {"qps": 39000.0, "machine_cpu_us_per_query": 49.0, "machine_busy": 0.98, "machine_cores": 2},
		})
		gobench := "BenchmarkCommitParallel-2   \t    8841\t     69491 ns/op\t     20394 charges/s\t  " + c.ledgerCPU + " cpu-us/charge\t         0.05 tx/charge\n"
		got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n", "gobench.txt": gobench})
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("ledger %s µs: BENCHMARKS.md lacks %q", c.ledgerCPU, w)
			}
		}
		if strings.Contains(got, c.not) {
			t.Errorf("ledger %s µs: BENCHMARKS.md says %q", c.ledgerCPU, c.not)
		}
	}
}

// PostgreSQL and the clients can take less CPU per query through dpproxy
// (its batches) than directly: the CPU ceiling starts from the least of
// the direct figure and each client count's through dpproxy, so a direct
// figure that alone would put the target out of reach does not when a run
// measured less through dpproxy. The estimate is cores ÷ the least CPU
// per charged query of every process in one run.
func TestChargedCeilingTakesTheLeastOthersCPU(t *testing.T) {
	for _, c := range []struct {
		name       string
		machine128 float64 // every process's CPU per charged query with 128 clients
		hitCPU     float64 // dpproxy's CPU per cache hit with 64 clients (0: not run)
		want       []string
		not        string
	}{
		// Directly 67 µs, 32 clients 190 − 74 = 116 µs; 128 clients
		// 112 − 60 = 52 µs: 2 cores / (52 + 22 + 21) µs = 21,053 q/s,
		// room left. Estimate: 2 cores / 112 µs = 17,857 q/s.
		{"less through dpproxy", 112, 0, []string{
			"Through dpproxy every other process and the kernel took 116.0 µs per charged query with 32 clients (one run) and 52.0 µs per charged query with 128 clients (one run)",
			"52.0 µs at the least, below the direct figure",
			"the cores would carry at most 21,053 queries/s.",
			"| 5 small DP queries, distinct text, 32 clients | CPU time per charged query of every other process and the kernel, through dpproxy, 128 clients (every process's less dpproxy's) | 52.0 µs |",
			"the cores kept busy would carry about 17,857 queries/s.",
			"| 5 small DP queries, distinct text, 32 clients | estimate: the machine's CPU at the measured cost of a charged query (cores ÷ the least CPU per charged query of every process in a run, loadgen's 32 or 128 clients or pgbench's 256) | 17857 q/s |",
			"Neither ceiling rules the target out in this run",
		}, "out of reach on this machine with the embedded ledger"},
		// A cache hit with 64 clients at 15 µs, below workload 4's 22:
		// 2 cores / (52 + 15 + 21) µs = 22,727 q/s.
		{"a cache hit below the passthrough", 112, 15, []string{
			"a cache hit costs dpproxy 15.0 µs at the least (workload 10, 16 to 256 clients",
			"relaying a repeated public-table query 22.0 µs (workload 4",
			"no more than the lesser, 15.0 µs, the cores would carry at most 29,851 queries/s. A charged query is also charged",
			"the cores would carry at most 22,727 queries/s.",
			"| 5 small DP queries, distinct text, 32 clients | dpproxy CPU time per cache hit, 16, 64 and 256 clients (workload 10: what a charged query does too) | 15.0 µs |",
		}, "the target is out of reach on this machine"},
		// 128 clients 150 − 60 = 90 µs: the direct 67 µs is the least;
		// / (67 + 22 + 21) µs = 18,182 q/s.
		{"more through dpproxy", 150, 0, []string{
			"and 90.0 µs per charged query with 128 clients (one run) (every process's CPU less dpproxy's).",
			"the cores would carry at most 18,182 queries/s, below 20,000: the target is out of reach on this machine with the embedded ledger",
		}, "Neither ceiling rules the target out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := rawJSONL(t, 1, map[string]map[string]any{
				"w4.simple.proxy":     {"qps": 22274.0, "proc_cpu_us_per_query": 22.0},
				"w4.simple.pgbouncer": {"qps": 15000.0, "proc_cpu_us_per_query": 25.0},
				"w4.simple.direct":    {"qps": 30000.0},
				"w5":                  {"seconds": 8.0, "ledger_charges": 64000, "ledger_transactions": 2000, "p50_us": 4000.0, "proc_cpu_us_per_query": 74.0, "machine_cpu_us_per_query": 190.0, "machine_busy": 0.87},
				"w5.c128":             {"seconds": 8.0, "ledger_charges": 96000, "ledger_transactions": 2000, "p50_us": 9000.0, "proc_cpu_us_per_query": 60.0, "machine_cpu_us_per_query": c.machine128, "machine_busy": 0.88},
				"w5.direct":           {"qps": 28843.0, "machine_cpu_us_per_query": 67.0, "machine_busy": 0.97, "machine_cores": 2},
			})
			if c.hitCPU > 0 {
				raw += rawJSONL(t, 1, map[string]map[string]any{"w10.clients.cachehit.c64": {"qps": 25000.0, "proc_cpu_us_per_query": c.hitCPU}})
			}
			gobench := "BenchmarkCommitParallel-2   \t    8841\t     69491 ns/op\t     20394 charges/s\t  21.0 cpu-us/charge\t         0.05 tx/charge\n"
			got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n", "gobench.txt": gobench})
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("BENCHMARKS.md lacks %q", w)
				}
			}
			if strings.Contains(got, c.not) {
				t.Errorf("BENCHMARKS.md says %q", c.not)
			}
		})
	}
}

// reportOf writes the result files into dir and returns the BENCHMARKS.md
// the report makes of them.
func reportOf(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := filepath.Join(dir, "BENCHMARKS.md")
	if err := run(dir, md); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run with --visits-100m takes longer than the default run's 20
// minutes; the report says why, with that size's own figures, and says
// nothing of the kind for a default run.
func TestWholeRunNamesTheOptIn100MVisits(t *testing.T) {
	raw := rawJSONL(t, 1, map[string]map[string]any{
		"w10.visits.100m.load":             {"seconds": 388.1, "visits": 99771359, "patients": 4820000},
		"w10.visits.100m.direct_rewritten": {"p50_us": 118496000.0},
		"w10.visits.100m.proxy":            {"p50_us": 132701000.0},
		"w10.visits.10m.load":              {"seconds": 35.6, "visits": 9978421, "patients": 482000},
		"w10.visits.10m.direct_rewritten":  {"p50_us": 6544000.0},
		"w10.visits.10m.proxy":             {"p50_us": 6626000.0},
	})
	want := "workload 10 at 100M visits included: that size is opt-in (`--visits-100m`) and not part of the default run; " +
		"generating and loading its dataset took 388.1 s, and each of its 4 queries (2 direct, 2 through dpproxy) about 118.5 s"
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=2214\nquick=0\nscale_sizes=1m 10m 100m\n"})
	if !strings.Contains(got, "**The whole run** took 2,214 s") || !strings.Contains(got, want) {
		t.Errorf("BENCHMARKS.md lacks %q", want)
	}
	got = reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1141\nquick=0\nscale_sizes=1m 10m\n"})
	if strings.Contains(got, "100M visits included") {
		t.Error("a run without --visits-100m is said to include it")
	}
}

// The bounded query on MariaDB is compared with the floor as written and
// with the floor MariaDB sorts (SQL_BIG_RESULT): both ratios are in the
// table, and the second in the text, when the run measured it.
func TestMariaDBSortedFloor(t *testing.T) {
	raw := rawJSONL(t, 1, map[string]map[string]any{
		"w9.w1.proxy":                    {"p50_us": 1900000.0},
		"w9.w1.direct_rewritten":         {"p50_us": 1860000.0},
		"w2.mariadb.direct_original":     {"p50_us": 800000.0},
		"w2.mariadb.direct_floor":        {"p50_us": 1270000.0},
		"w2.mariadb.direct_floor_sorted": {"p50_us": 730000.0},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1141\nquick=0\n"})
	wantIn(t, got,
		"| rewritten ÷ floor, on MariaDB (each round's pair, median) | 1.465 ×",
		"| rewritten ÷ floor sorted (SQL_BIG_RESULT), on MariaDB (each round's pair, median) | 2.548 ×",
		"Against the floor MariaDB sorts (`SQL_BIG_RESULT`): 2.55×.",
	)
	withoutSorted := strings.ReplaceAll(raw, "w2.mariadb.direct_floor_sorted", "w2.mariadb.unrelated")
	got = reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": withoutSorted, "run.txt": "total_seconds=1141\nquick=0\n"})
	if strings.Contains(got, "floor sorted") || strings.Contains(got, "Against the floor MariaDB sorts") {
		t.Error("a run without the sorted floor reports it")
	}
}

// A ratio of two targets run in turns divides each round by the same
// round of the other target, so that the rounds' machine speeds cancel;
// the ratio of their separate p50s would not (1.25 and 1.6 here).
func TestPairedRounds(t *testing.T) {
	raw := rawJSONL(t, 1, map[string]map[string]any{
		"w1.proxy":            {"p50_us": 2.0e6, "rounds_us": []float64{4.0e6, 1.0e6, 2.0e6}},
		"w1.direct_rewritten": {"p50_us": 1.6e6, "rounds_us": []float64{0.8e6, 1.6e6, 3.2e6}},
		"w2.direct_original":  {"p50_us": 1.0e6, "rounds_us": []float64{1.0e6, 1.0e6, 1.0e6}},
		"w2.direct_floor":     {"p50_us": 1.0e6, "rounds_us": []float64{1.0e6, 1.0e6, 4.0e6}},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1141\nquick=0\n"})
	wantIn(t, got,
		// 4.0/0.8, 1.0/1.6, 2.0/3.2
		"| 1 DP aggregate, cache off | latency through dpproxy ÷ rewritten SQL directly (each round's pair, median) | 0.625 × | 0.625 – 5.000 (n=3) |",
		// 0.8/1.0, 1.6/1.0, 3.2/4.0
		"| 2 cost of contribution bounding | rewritten ÷ floor, on PostgreSQL (each round's pair, median) | 0.800 × | 0.800 – 1.600 (n=3) |",
	)
	// Rounds that do not match (or results from before rounds) fall back
	// to the ratio of the p50s.
	if r := pairedRatios([]loadResult{{P50US: 3, RoundsUS: []float64{1, 2}}}, []loadResult{{P50US: 2, RoundsUS: []float64{1}}}); len(r) != 1 || r[0] != 1.5 {
		t.Errorf("pairedRatios with unmatched rounds = %v, want [1.5]", r)
	}
}

// rawJSONL is a raw.jsonl (bench/run.sh's record) holding each series'
// data in runs 1 to runs.
func rawJSONL(t *testing.T, runs int, series map[string]map[string]any) string {
	t.Helper()
	var raw strings.Builder
	for r := 1; r <= runs; r++ {
		for name, data := range series {
			b, err := json.Marshal(map[string]any{"series": name, "run": r, "data": data})
			if err != nil {
				t.Fatal(err)
			}
			raw.Write(append(b, '\n'))
		}
	}
	return raw.String()
}

// The run's pinning of the database servers during the sequential
// workloads is stated with the machine, and nothing is said of a run that
// recorded none (an older run.txt).
func TestSequentialPinningStated(t *testing.T) {
	raw := rawJSONL(t, 1, map[string]map[string]any{"w3.c1": {"p50_us": 48.0}})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw,
		"run.txt": "total_seconds=1141\nquick=0\nsequential_pinning=the database servers on CPU 0\n"})
	if want := "The sequential workloads (1, 2, 2b, 9's DP aggregate, 10's visits) ran with the database servers on CPU 0"; !strings.Contains(got, want) {
		t.Errorf("BENCHMARKS.md lacks %q", want)
	}
	got = reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1141\nquick=0\n"})
	if strings.Contains(got, "The sequential workloads") {
		t.Error("a run without pinning is said to be pinned")
	}
}

// The scale table has a row per query and client count; a charged
// query's rate is the ledger's (charges ÷ run time), and a point not
// measured is a dash.
func TestScaleTableChargedRate(t *testing.T) {
	raw := rawJSONL(t, 1, map[string]map[string]any{
		"w10.clients.passthrough.c16": {"p50_us": 700.0, "p99_us": 2250.0, "qps": 20727.0, "proc_cpu_us_per_query": 25.2},
		"w10.clients.charged.c64": {"p50_us": 3035.0, "p99_us": 9100.0, "qps": 19000.0, "seconds": 3.0,
			"ledger_charges": 58500, "ledger_transactions": 2900, "proc_cpu_us_per_query": 51.7},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1141\nquick=0\nscale_client_seconds=3\n"})
	wantIn(t, got,
		"| query | clients | p50 | p99 | q/s | dpproxy CPU/query |",
		"| passthrough | 16 | 700.0 µs | 2250 µs | 20727 | 25.2 µs |",
		"| charged DP query | 64 | 3035 µs | 9100 µs | 19500 | 51.7 µs |",
		"| cache hit | 1 | — | — | — | — |",
	)
}

// Workload 10's charged query with more clients than workload 5's 32 is
// named in workload 5's why, and whether it reached the target; the
// verdict stays workload 5's.
func TestChargedMoreClients(t *testing.T) {
	for _, c := range []struct {
		charges float64
		reached bool
	}{{63000, true}, {45000, false}} {
		raw := rawJSONL(t, 1, map[string]map[string]any{
			"w5":                      {"seconds": 8.0, "ledger_charges": 104000, "ledger_transactions": 9700, "p50_us": 2200.0, "proc_cpu_us_per_query": 75.0},
			"w10.clients.charged.c16": {"seconds": 3.0, "ledger_charges": 30000, "proc_cpu_us_per_query": 90.0},
			"w10.clients.charged.c64": {"seconds": 3.0, "ledger_charges": c.charges, "proc_cpu_us_per_query": 51.7},
		})
		got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n"})
		want := fmt.Sprintf("With more clients than 32 (workload 10, one short run each): 64 clients, %s charged queries/s at 51.7 µs of dpproxy's CPU per charged query.", groupThousands(int64(c.charges/3)))
		if !strings.Contains(got, want) {
			t.Errorf("%v charges: BENCHMARKS.md lacks %q", c.charges, want)
		}
		if strings.Contains(got, "16 clients, 10,000") {
			t.Error("16 clients named among more than 32")
		}
		if said := strings.Contains(got, "The machine carried 20,000 charged queries a second when more clients waited at once"); said != c.reached {
			t.Errorf("%v charges: target reached with more clients said %v, want %v", c.charges, said, c.reached)
		}
		if !strings.Contains(got, "| 5 small DP queries, distinct text, 32 clients | charged queries/s (ledger charges ÷ run time) | 13000 q/s |") {
			t.Error("workload 5's own row changed")
		}
	}
}

// Workload 5's ledger transactions, as dpproxy's counters measured them,
// are a row and a sentence of its why; a run without them says nothing.
func TestChargedLedgerTransactionTime(t *testing.T) {
	raw := rawJSONL(t, 3, map[string]map[string]any{
		"w5":        {"seconds": 8.0, "ledger_charges": 120000, "ledger_transactions": 11200, "ledger_transaction_us": 450.0, "p50_us": 2000.0, "proc_cpu_us_per_query": 64.0, "machine_cpu_us_per_query": 105.0, "machine_busy": 0.84},
		"w5.direct": {"qps": 54000.0, "machine_cpu_us_per_query": 36.0, "machine_busy": 0.99, "machine_cores": 2},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n"})
	wantIn(t, got,
		"| 5 small DP queries, distinct text, 32 clients | wall time of each ledger transaction (dpproxy_ledger_transaction_seconds_total ÷ _transactions_total over the run) | 450.0 µs |",
		"The ledger's transactions took 450.0 µs of wall time each (450.0 to 450.0 µs over 3 runs; dpproxy's own counters",
		"and carried 10.7 charges each: a charge waits for the transaction in progress to end",
	)
	raw = rawJSONL(t, 3, map[string]map[string]any{
		"w5":        {"seconds": 8.0, "ledger_charges": 120000, "ledger_transactions": 11200, "p50_us": 2000.0, "proc_cpu_us_per_query": 64.0, "machine_cpu_us_per_query": 105.0, "machine_busy": 0.84},
		"w5.direct": {"qps": 54000.0, "machine_cpu_us_per_query": 36.0, "machine_busy": 0.99, "machine_cores": 2},
	})
	got = reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n"})
	if strings.Contains(got, "wall time of each ledger transaction") || strings.Contains(got, "The ledger's transactions took") {
		t.Error("a run without the counters reports their figure")
	}
}

// Workload 5's target is judged on the most of its rates in each run
// (loadgen's 32 and 128 clients, pgbench's 256); the 128-client runs get
// rows of their own; a run without them judges the 32-client rate.
func TestChargedTargetTakesMoreClients(t *testing.T) {
	w5 := map[string]any{"seconds": 8.0, "ledger_charges": 104000, "ledger_transactions": 9700, "p50_us": 2200.0, "proc_cpu_us_per_query": 75.0}
	raw := rawJSONL(t, 3, map[string]map[string]any{
		"w5":      w5,
		"w5.c128": {"seconds": 8.0, "ledger_charges": 168000, "ledger_transactions": 6000, "p50_us": 6100.0, "proc_cpu_us_per_query": 52.0},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n"})
	wantIn(t, got,
		"| 5 small DP queries, distinct text, 32 clients | charged queries/s (ledger charges ÷ run time) | 13000 q/s | 13000 – 13000 (n=3) |  |  |",
		"| 5 small DP queries, distinct text, 32 clients | "+w5Charged+" | 21000 q/s | 21000 – 21000 (n=3) | ≥ 20,000/s | pass |",
		"| 5 small DP queries, distinct text, 128 clients | charged queries/s (ledger charges ÷ run time) | 21000 q/s |",
		"| 5 small DP queries, distinct text, 128 clients | dpproxy CPU time per charged query (user + system) | 52.0 µs |",
		"| 5 small DP queries, distinct text, 128 clients | p50 latency | 6.100 ms |",
	)
	if strings.Contains(got, "pgbench clients |") {
		t.Error("rows for pgbench runs that were not made")
	}
	got = reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": rawJSONL(t, 3, map[string]map[string]any{"w5": w5}), "run.txt": "total_seconds=1100\n"})
	if want := "| 5 small DP queries, distinct text, 32 clients | " + w5Charged + " | 13000 q/s | 13000 – 13000 (n=3) no 128-client runs in this run: the 32-client rate | ≥ 20,000/s | **FAIL** |"; !strings.Contains(got, want) {
		t.Errorf("without 128-client runs, BENCHMARKS.md lacks %q", want)
	}
	if strings.Contains(got, "128 clients | charged queries/s") {
		t.Error("rows for 128-client runs that were not made")
	}
}

// pgbench's 256 clients, run next to loadgen's, get rows of their own
// (their rate, dpproxy's CPU, what each load generator itself took) and
// count for the target where their rate is the higher; their machine
// figures count for the CPU ceilings too.
func TestChargedTargetTakesPgbench(t *testing.T) {
	raw := rawJSONL(t, 3, map[string]map[string]any{
		"w5": {"seconds": 8.0, "ledger_charges": 104000, "ledger_transactions": 9700, "p50_us": 2200.0, "proc_cpu_us_per_query": 75.0,
			"machine_cpu_us_per_query": 150.0, "machine_busy": 0.9, "machine_cores": 2},
		"w5.c128": {"seconds": 8.0, "ledger_charges": 120000, "ledger_transactions": 6000, "p50_us": 6100.0, "proc_cpu_us_per_query": 70.0,
			"machine_cpu_us_per_query": 130.0, "machine_busy": 0.9, "client_cpu_us_per_query": 34.0},
		"w5.pgbench.c256": {"seconds": 8.0, "ledger_charges": 136000, "ledger_transactions": 5000, "mean_us": 7000.0, "proc_cpu_us_per_query": 68.0,
			"machine_cpu_us_per_query": 110.0, "machine_busy": 0.9, "client_cpu_us_per_query": 21.0},
		"w5.direct": {"qps": 30000.0, "seconds": 2.0, "machine_cpu_us_per_query": 70.0, "machine_busy": 0.95, "machine_cores": 2},
	})
	got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": raw, "run.txt": "total_seconds=1100\n"})
	wantIn(t, got,
		"| 5 small DP queries, distinct text, 32 clients | "+w5Charged+" | 17000 q/s | 17000 – 17000 (n=3) | ≥ 20,000/s | **FAIL** |",
		"| 5 small DP queries, distinct text, 256 pgbench clients | charged queries/s (ledger charges ÷ run time) | 17000 q/s |",
		"| 5 small DP queries, distinct text, 256 pgbench clients | dpproxy CPU time per charged query (user + system) | 68.0 µs |",
		"| 5 small DP queries, distinct text, 256 pgbench clients | mean latency (pgbench's progress reports) | 7.000 ms |",
		"| 5 small DP queries, distinct text, 256 pgbench clients | "+w5ClientCPU+" (pgbench: C, libpq, two threads) | 21.0 µs |",
		"| 5 small DP queries, distinct text, 128 clients | "+w5ClientCPU+" (loadgen: Go, pgx, a goroutine per client) | 34.0 µs |",
		"| 5 small DP queries, distinct text, 256 pgbench clients | charged queries/s, pgbench's 256 clients ÷ loadgen's 128 (the runs next to each other) | 1.133 × |",
		// every process's 110 less dpproxy's 68
		"through dpproxy, 256 pgbench clients (every process's less dpproxy's) | 42.0 µs |",
		// 2 cores ÷ the least every-process CPU per charged query, pgbench's 110 µs
		"estimate: the machine's CPU at the measured cost of a charged query (cores ÷ the least CPU per charged query of every process in a run, loadgen's 32 or 128 clients or pgbench's 256) | 18182 q/s |",
		"Through dpproxy every other process and the kernel took 75.0 µs per charged query with 32 clients (",
		"), 60.0 µs per charged query with 128 clients (",
		") and 42.0 µs per charged query with pgbench's 256 clients (",
		"the load generator itself took 34.0 µs per charged query with loadgen's 128 clients",
		"and 21.0 µs with pgbench's 256",
	)
}

// pgbench's rate is compared with loadgen's of the same run: a run
// pgbench missed pairs nothing off by one.
func TestChargedRatioByRun(t *testing.T) {
	rate := func(run int, charges int64) loadResult { return loadResult{Run: run, Seconds: 2, LedgerChg: charges} }
	pgb := []loadResult{rate(1, 30), rate(3, 60)}
	lg := []loadResult{rate(1, 20), rate(2, 99), rate(3, 40)}
	if got, want := chargedRatioByRun(pgb, lg), []float64{1.5, 1.5}; !slices.Equal(got, want) {
		t.Fatalf("chargedRatioByRun = %v, want %v", got, want)
	}
}

// The judged rate is each run's most, runs matched by number: a part
// missing from a run (pgbench failed there) takes nothing from the others.
func TestMostChargedOfEachRun(t *testing.T) {
	rate := func(run int, charges int64) loadResult { return loadResult{Run: run, Seconds: 1, LedgerChg: charges} }
	for _, c := range []struct {
		parts [][]loadResult
		want  []float64
	}{
		{[][]loadResult{{rate(1, 1), rate(2, 5), rate(3, 3)}, {rate(1, 2), rate(2, 4), rate(3, 9)}}, []float64{2, 5, 9}},
		{[][]loadResult{{rate(1, 1), rate(2, 5), rate(3, 3)}, {rate(3, 7)}}, []float64{1, 5, 7}},
		{[][]loadResult{{rate(1, 1), rate(2, 5)}, nil, {rate(2, 8)}}, []float64{1, 8}},
		{[][]loadResult{{{Run: 1}}}, nil},
	} {
		if got := mostChargedOfEachRun(c.parts...); !slices.Equal(got, c.want) {
			t.Errorf("mostChargedOfEachRun(%v) = %v, want %v", c.parts, got, c.want)
		}
	}
}

// wantIn fails t for each of wants that the report got lacks.
func wantIn(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
}

// Workload 4's text ends on what would reach the CPU target only when a
// CPU target is missed: with both met it says nothing of the kind.
func TestPassthroughCPUTextFollowsVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		proxyCPU      float64
		relayCPU      float64
		want, wantNot string
	}{
		{"both met", 17.4, 18.1, "", "Reaching its CPU per query"},
		{"missed, the relay within", 19.0, 16.0, "Reaching its CPU per query", "The bare relay shows"},
		{"missed, the relay above too", 19.0, 18.1, "The bare relay shows where that leaves a proxy written in Go", "Reaching its CPU per query"},
	} {
		series := map[string]map[string]any{}
		for _, mode := range []string{"simple", "extended"} {
			series["w4."+mode+".proxy"] = map[string]any{"qps": 30000.0, "proc_cpu_us_per_query": tc.proxyCPU}
			series["w4."+mode+".relay"] = map[string]any{"qps": 20000.0, "proc_cpu_us_per_query": tc.relayCPU}
			series["w4."+mode+".pgbouncer"] = map[string]any{"qps": 21000.0, "proc_cpu_us_per_query": 14.6}
		}
		got := reportOf(t, t.TempDir(), map[string]string{"raw.jsonl": rawJSONL(t, 3, series), "run.txt": "total_seconds=1000\nquick=0\n"})
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: BENCHMARKS.md lacks %q", tc.name, tc.want)
		}
		if strings.Contains(got, tc.wantNot) {
			t.Errorf("%s: BENCHMARKS.md says %q", tc.name, tc.wantNot)
		}
	}
}
