package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// cmdPgbench runs a query with pgbench, the PostgreSQL project's load
// generator (C, libpq, a few threads each serving many connections), and
// measures the window between its first progress report and the one D
// seconds later as `run` measures its own clients: the same JSON, with
// the queries the ledger charged (--ledger) or pgbench counted, and the
// CPU time pgbench itself spent per query (client_cpu_us_per_query).
//
// Why a second client: on a machine of two cores the clients share the
// processors with the proxy and the database. Go's pgx clients spend
// more CPU per query than pgbench does, CPU the system under test then
// lacks; a rate measured with both says how much of it is the client's.
func cmdPgbench(args []string) error { return pgbench(args, os.Stdout) }

// pgbench is cmdPgbench writing its JSON to out.
func pgbench(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pgbench", flag.ContinueOnError)
	bin := fs.String("pgbench", "pgbench", "the pgbench binary")
	dsn := fs.String("dsn", "", "DSN (postgres://user:password@host:port/database)")
	query := fs.String("query", "", "query; {i} becomes a random integer in [1, 2^62] at each execution (a distinct text)")
	clients := fs.Int("clients", 1, "concurrent clients (connections)")
	threads := fs.Int("threads", runtime.NumCPU(), "pgbench's threads (at most --clients)")
	duration := fs.Duration("duration", 10*time.Second, "measured time, whole seconds, after a first second of warm-up")
	ledger := fs.String("ledger", "", "dpproxy ledger file to read before and after: the queries are the charges it gained")
	metricsURL := fs.String("metrics", "", "dpproxy's admin /metrics URL (login in the URL) whose ledger counters to read before and after")
	pid := fs.Int("pid", 0, "process (the proxy under test) whose CPU time per query to report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secs := int(duration.Round(time.Second) / time.Second)
	if *dsn == "" || *query == "" || *clients < 1 || secs < 1 {
		return errors.New("pgbench: --dsn, --query, --clients ≥ 1 and --duration ≥ 1s are required")
	}
	cfg, err := pgx.ParseConfig(*dsn)
	if err != nil {
		return fmt.Errorf("pgbench: %w", err)
	}
	dir, err := os.MkdirTemp("", "loadgen-pgbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "query.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript(*query)), 0o600); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), *duration+2*time.Minute)
	defer cancel()
	// Three seconds more than the window: pgbench reports progress at the
	// end of each second and drops the last report when its run ends then;
	// the window's end stops it.
	cmd := exec.CommandContext(ctx, *bin, "-n", "-M", "simple",
		"-c", strconv.Itoa(*clients), "-j", strconv.Itoa(max(1, min(*threads, *clients))),
		"-T", strconv.Itoa(secs+3), "-P", "1", "-f", script,
		"-h", cfg.Host, "-p", strconv.Itoa(int(cfg.Port)), "-U", cfg.User, cfg.Database)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+cfg.Password, "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=30")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	var stdout lastBytes // its summary, for the error when it ends early
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgbench: %w", err)
	}

	// At the window's edges only what is cheap to read: the ledger's
	// last charge ID (its primary key's end), the processes' CPU time,
	// /proc/stat, then dpproxy's metrics; the charges' transactions are
	// counted once pgbench has stopped.
	type edge struct {
		lastID        int64
		at            time.Time
		proxy, client time.Duration
		busy, all     time.Duration
		cores         int
		metrics       *ledgerMetrics
	}
	mark := func() edge {
		e := edge{lastID: lastChargeID(*ledger), at: time.Now()}
		e.proxy, e.client = procCPU(*pid), procCPU(cmd.Process.Pid)
		e.busy, e.all, e.cores = machineCPU()
		e.metrics = scrapeLedger(*metricsURL)
		return e
	}
	res := Result{Clients: *clients, Driver: "pgbench", Mode: "simple"}
	w := pgbenchWindow{seconds: secs}
	var first, last edge
	var tail []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		p, ok := parseProgress(line)
		if !ok {
			// A client that aborts, in the warm-up too, leaves the window
			// with fewer clients than asked: the run reports it.
			if strings.Contains(line, "aborted") || strings.Contains(line, "error") {
				res.Errors++
				if res.FirstErr == "" {
					res.FirstErr = line
				}
			}
			tail = append(tail[max(0, len(tail)-9):], line)
			continue
		}
		switch w.add(p) {
		case windowStarts:
			first = mark()
		case windowEnds:
			last = mark()
		}
		if w.done() {
			break
		}
	}
	scanErr := sc.Err()
	// The window is over, or pgbench is: stop it, read what it still
	// writes, then reap it.
	cmd.Process.Signal(os.Interrupt)
	io.Copy(io.Discard, stderr)
	waitErr := cmd.Wait()
	if !w.done() {
		if scanErr != nil {
			return fmt.Errorf("reading pgbench's progress reports: %w", scanErr)
		}
		out := strings.Join(strings.Fields(string(stdout.b)), " ")
		return fmt.Errorf("pgbench ended before its measured window (%v): %s (its output: %s)", waitErr, strings.Join(tail, " | "), out)
	}

	res.Seconds = last.at.Sub(first.at).Seconds()
	res.Queries = w.queries()
	if *ledger != "" {
		if first.lastID < 0 || last.lastID < 0 {
			return fmt.Errorf("pgbench: reading the ledger %s failed", *ledger)
		}
		charges, txs, err := ledgerSpan(*ledger, first.lastID, last.lastID)
		if err != nil {
			return fmt.Errorf("pgbench: %w", err)
		}
		res.LedgerChg, res.LedgerTx, res.Queries = charges, txs, charges
	} else {
		res.Seconds = w.span() // the queries are pgbench's count, by its clock
	}
	if res.Seconds <= 0 {
		return errors.New("pgbench: an empty window")
	}
	res.QPS = float64(res.Queries) / res.Seconds
	res.MeanUS = w.meanLatencyUS()
	if res.Queries > 0 {
		if first.proxy >= 0 && last.proxy >= 0 {
			res.ProcCPUUS = us(last.proxy-first.proxy) / float64(res.Queries)
		}
		if first.client >= 0 && last.client >= 0 {
			res.ClientCPUUS = us(last.client-first.client) / float64(res.Queries)
		}
		if last.all > first.all {
			res.MachineCPUUS = us(last.busy-first.busy) / float64(res.Queries)
			res.MachineBusy = float64(last.busy-first.busy) / float64(last.all-first.all)
			res.MachineCores = first.cores
		}
	}
	res.LedgerTxUS = meanTransactionUS(first.metrics, last.metrics)
	return json.NewEncoder(out).Encode(res)
}

// lastChargeID is the ID of the ledger's latest charge (0 when it has
// none): its primary key's end, read without scanning the table while
// the load runs; -1 when it cannot be read, 0 when path is empty.
func lastChargeID(path string) int64 {
	if path == "" {
		return 0
	}
	db, err := openLedger(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: ledger:", err)
		return -1
	}
	defer db.Close()
	var id int64
	if err := db.QueryRow(`SELECT coalesce(max(id), 0) FROM charges`).Scan(&id); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: ledger:", err)
		return -1
	}
	return id
}

// ledgerSpan counts the charges with IDs in (after, upTo] and their
// transactions (distinct commit times: the ledger gives every charge of
// a group commit the same).
func ledgerSpan(path string, after, upTo int64) (charges, transactions int64, err error) {
	db, err := openLedger(path)
	if err != nil {
		return 0, 0, fmt.Errorf("ledger: %w", err)
	}
	defer db.Close()
	err = db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT at_ns) FROM charges WHERE id > ? AND id <= ?`, after, upTo).Scan(&charges, &transactions)
	if err != nil {
		return 0, 0, fmt.Errorf("ledger: %w", err)
	}
	return charges, transactions, nil
}

// lastBytes keeps the last 1 KiB written to it.
type lastBytes struct{ b []byte }

func (l *lastBytes) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if over := len(l.b) - 1024; over > 0 {
		l.b = l.b[over:]
	}
	return len(p), nil
}

// pgbenchScript is a pgbench script running query once, its {i} a
// pgbench variable drawn anew at each execution: in the simple protocol
// pgbench writes the value into the text, so each execution's text is
// (almost surely) one never sent before.
func pgbenchScript(query string) string {
	var b strings.Builder
	if strings.Contains(query, "{i}") {
		b.WriteString("\\set i random(1, 4611686018427387904)\n")
		query = strings.ReplaceAll(query, "{i}", ":i")
	}
	b.WriteString(strings.TrimRight(strings.TrimSpace(query), ";"))
	b.WriteString(";\n")
	return b.String()
}

// progress is one of pgbench's progress reports (-P 1): the second it
// ends, the transactions a second and their mean latency in it.
type progress struct {
	at, tps, latencyMS float64
}

// parseProgress reads a line such as
//
//	progress: 2.0 s, 38365.8 tps, lat 0.096 ms stddev 0.146, 0 failed
func parseProgress(line string) (progress, bool) {
	rest, ok := strings.CutPrefix(line, "progress: ")
	if !ok {
		return progress{}, false
	}
	var p progress
	if _, err := fmt.Sscanf(rest, "%f s, %f tps, lat %f ms", &p.at, &p.tps, &p.latencyMS); err != nil {
		return progress{}, false
	}
	return p, true
}

// pgbenchWindow follows the progress reports: the window opens at the
// first (after a second of warm-up: connections made, plans cached) and
// closes at the one seconds later.
type pgbenchWindow struct {
	seconds int
	start   float64
	in      []progress // the reports of the seconds inside the window
	opened  bool
	closed  bool
}

type windowEvent int

const (
	windowNothing windowEvent = iota
	windowStarts
	windowEnds
)

func (w *pgbenchWindow) add(p progress) windowEvent {
	switch {
	case w.closed:
		return windowNothing
	case !w.opened:
		w.opened, w.start = true, p.at
		return windowStarts
	}
	w.in = append(w.in, p)
	if p.at >= w.start+float64(w.seconds)-0.5 {
		w.closed = true
		return windowEnds
	}
	return windowNothing
}

func (w *pgbenchWindow) done() bool { return w.closed }

// span is the window's length by pgbench's clock.
func (w *pgbenchWindow) span() float64 {
	if len(w.in) == 0 {
		return 0
	}
	return w.in[len(w.in)-1].at - w.start
}

// queries is what pgbench counted in the window: each report covers the
// second before it (a late one more; its rate is over that time).
func (w *pgbenchWindow) queries() int64 {
	var n float64
	prev := w.start
	for _, p := range w.in {
		n += p.tps * (p.at - prev)
		prev = p.at
	}
	return int64(n + 0.5)
}

// meanLatencyUS is the window's mean latency, each report's weighted by
// the transactions it covers.
func (w *pgbenchWindow) meanLatencyUS() float64 {
	var sum, n float64
	prev := w.start
	for _, p := range w.in {
		k := p.tps * (p.at - prev)
		sum += p.latencyMS * 1e3 * k
		n += k
		prev = p.at
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
