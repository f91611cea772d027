// Command loadgen is the load generator and helper of bench/run.sh.
//
//	loadgen load   --dsn DSN --patients N [--visit-rate R] [--timeout D]
//	    load the demo dataset, scaled, into PostgreSQL (demo.LoadPostgresWith)
//	loadgen load-mysql --dsn USER@tcp(HOST:PORT)/DB --patients N [--visit-rate R]
//	    create database DB if missing and load the same dataset into it
//	    (MySQL or MariaDB, demo.LoadMySQLWith)
//	loadgen run    --dsn DSN [--dsn DSN ...] --query SQL [--query SQL ...] [--clients C]
//	               [--duration D] [--count N] [--mode simple|extended|prepared]
//	               [--param-max K] [--ledger FILE] [--metrics URL] [--driver pgx|mysql] [--pid PID]
//	    run a query mix with C clients (one connection each, spread over
//	    the DSNs: several proxies sharing a ledger) for D or until
//	    each client has run N queries; print one JSON object: queries/s and
//	    latency percentiles. In a query, {i} is replaced by a number unique
//	    to each execution (distinct query text) and the parameter ($1 with
//	    pgx, ? with mysql) by a random integer in [1, K] (K = 0: a number
//	    unique to each execution, as {i}). With pgx: a parameter in extended
//	    mode (unnamed statement) and in prepared mode (each text prepared
//	    once per connection, like pgbench -M prepared), a literal in simple
//	    mode. With --driver mysql (go-sql-driver, DSN in its form): simple
//	    is the text protocol (COM_QUERY, the value interpolated by the
//	    driver), extended the binary protocol (COM_STMT_PREPARE, EXECUTE and
//	    CLOSE for each query). With --ledger, the dpproxy ledger is read
//	    before and after: charges and transactions (group commits) of the
//	    run; with --metrics (dpproxy's admin /metrics, the login in the
//	    URL), its ledger transactions' mean wall time in the run. With
//	    --pid, the CPU time that process spent per query.
//	loadgen pgbench --dsn DSN --query SQL [--clients C] [--threads T] [--duration D]
//	               [--ledger FILE] [--metrics URL] [--pid PID] [--pgbench PATH]
//	    the same measurement as run, the clients being pgbench's (C, libpq,
//	    T threads, the simple protocol; {i} a random integer drawn at each
//	    execution): the window from its first progress report to the one
//	    D later; with --ledger the queries are the charges (pgbench.go).
//	loadgen alternate --count N [--warmup W] [--driver pgx|mysql]
//	               --target NAME --dsn DSN --query SQL [--target NAME --dsn DSN --query SQL ...]
//	    run the targets one query each in turns, N rounds after W warm-up
//	    queries of each, and print one JSON object per target (run's, with
//	    "target"): targets compared by a ratio run on the same machine
//	    speed, which drifts here (alternate.go).
//	loadgen turns  --query SQL [--clients C] [--mode M] [--driver D] [--slice S] [--duration D]
//	               --target NAME --dsn DSN [--pid PID] [--target ...]
//	    run the query with C clients on each target in turns, slices of S
//	    until each has run for D, and print one JSON object per target
//	    (run's, with "target", and each slice's queries/s and CPU per
//	    query): throughput ratios paired slice by slice (turns.go).
//	loadgen idle   --dsn DSN --conns N --hold D --pid PID [--concurrency K] [--client raw|pgx]
//	    open N connections (K at a time; each logs in and runs SELECT 1),
//	    keep them idle for D and report PID's VmRSS before and while they
//	    are open, how long opening them took and PID's CPU time per
//	    connection opened. The raw client (default, PostgreSQL protocol,
//	    plaintext) derives the SCRAM keys from the password once instead
//	    of once per connection as pgx does (see rawpg.go).
//	loadgen relay  --listen ADDR --target ADDR [--for D]
//	    copy bytes between each client and a new connection to the target
//	    and nothing else: the floor of a proxy written in Go (relay.go).
//
// Every connection of `run` is opened before the clock starts (SCRAM is
// not measured). Only loopback servers are expected; everything stops by
// itself after --duration (plus a bounded grace period).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen load|load-mysql|run|pgbench|alternate|turns|idle|relay|answer [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = cmdLoad(os.Args[2:])
	case "load-mysql":
		err = cmdLoadMySQL(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "alternate":
		err = cmdAlternate(os.Args[2:])
	case "turns":
		err = cmdTurns(os.Args[2:])
	case "idle":
		err = cmdIdle(os.Args[2:])
	case "relay":
		err = cmdRelay(os.Args[2:])
	case "answer":
		err = cmdAnswer(os.Args[2:])
	case "pgbench":
		err = cmdPgbench(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func cmdLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	dsn := fs.String("dsn", "", "PostgreSQL DSN")
	patients := fs.Int("patients", 100000, "number of patients")
	visitRate := fs.Float64("visit-rate", 1, "multiplier of each patient's mean number of visits (1: about 13 per patient)")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return demo.LoadPostgresWith(ctx, *dsn, "public", demo.GenerateOptions{Patients: *patients, VisitRate: *visitRate})
}

func cmdLoadMySQL(args []string) error {
	fs := flag.NewFlagSet("load-mysql", flag.ExitOnError)
	dsn := fs.String("dsn", "", "MySQL DSN (go-sql-driver form) naming the database")
	patients := fs.Int("patients", 100000, "number of patients")
	visitRate := fs.Float64("visit-rate", 1, "multiplier of each patient's mean number of visits (1: about 13 per patient)")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg, err := mysql.ParseDSN(*dsn)
	if err != nil {
		return err
	}
	if cfg.DBName == "" {
		return errors.New("load-mysql: the DSN names no database")
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+strings.ReplaceAll(cfg.DBName, "`", "``")+"`")
	db.Close()
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return demo.LoadMySQLWith(ctx, *dsn, demo.GenerateOptions{Patients: *patients, VisitRate: *visitRate})
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, "; ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// Result is what `run` prints.
type Result struct {
	// Target is the target's name in `alternate`'s output.
	Target   string  `json:"target,omitempty"`
	Clients  int     `json:"clients"`
	Driver   string  `json:"driver"`
	Mode     string  `json:"mode"`
	Queries  int64   `json:"queries"`
	Errors   int64   `json:"errors"`
	FirstErr string  `json:"first_error,omitempty"`
	Seconds  float64 `json:"seconds"`
	QPS      float64 `json:"qps"`
	MeanUS   float64 `json:"mean_us"`
	P50US    float64 `json:"p50_us"`
	P90US    float64 `json:"p90_us"`
	P99US    float64 `json:"p99_us"`
	MaxUS    float64 `json:"max_us"`
	// RoundsUS are `alternate`'s latencies in the order of its rounds:
	// the k-th of two targets ran in the same round, next to each other,
	// so a report can pair them.
	RoundsUS []float64 `json:"rounds_us,omitempty"`
	// SlicesQPS and SlicesCPUUS are `turns`' queries/s and CPU time of
	// --pid per query in each of the target's slices, in order: the k-th
	// slices of two targets ran within the same seconds.
	SlicesQPS   []float64 `json:"slices_qps,omitempty"`
	SlicesCPUUS []float64 `json:"slices_cpu_us,omitempty"`
	Rows        int64     `json:"rows"`
	LedgerTx    int64     `json:"ledger_transactions,omitempty"`
	LedgerChg   int64     `json:"ledger_charges,omitempty"`
	// LedgerTxUS is the mean wall time of the ledger's transactions in
	// the run (--metrics: dpproxy's own counters), the durable commit
	// included.
	LedgerTxUS float64 `json:"ledger_transaction_us,omitempty"`
	// ProcCPUUS is the CPU time (user + system) the --pid process spent
	// per measured query.
	ProcCPUUS float64 `json:"proc_cpu_us_per_query,omitempty"`
	// MachineCPUUS is the CPU time every process of the machine spent per
	// measured query (/proc/stat: all but idle, iowait and steal, the
	// time a hypervisor gave to others), MachineBusy the share of the
	// machine's CPU time that was (1: every core busy throughout), and
	// MachineCores the cores /proc/stat counts.
	MachineCPUUS float64 `json:"machine_cpu_us_per_query,omitempty"`
	MachineBusy  float64 `json:"machine_busy,omitempty"`
	MachineCores int     `json:"machine_cores,omitempty"`
	// ClientCPUUS is the CPU time the load generator itself (loadgen's
	// clients, or pgbench) spent per measured query: on a machine the
	// clients share with the system under test, CPU it lacked.
	ClientCPUUS float64 `json:"client_cpu_us_per_query,omitempty"`
}

// client is one connection of the load generator.
type client interface {
	// query runs q (with param bound when it is not nil) and reads every
	// row; it returns the number of rows.
	query(ctx context.Context, q string, param any) (int64, error)
	close()
}

type pgClient struct{ c *pgx.Conn }

func (p pgClient) query(ctx context.Context, q string, param any) (int64, error) {
	var rows pgx.Rows
	var err error
	if param != nil {
		rows, err = p.c.Query(ctx, q, param)
	} else {
		rows, err = p.c.Query(ctx, q)
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

func (p pgClient) close() { p.c.Close(context.Background()) }

// myClient is one go-sql-driver connection (its own sql.DB of one
// connection, held by c).
type myClient struct {
	db *sql.DB
	c  *sql.Conn
}

// query runs q without the run's context: go-sql-driver hands a context
// that can end to a watcher goroutine for each query, and database/sql
// starts a goroutine per result to watch it, two wake-ups per query that
// doubled a one-client round trip on two cores (MariaDB's own SELECT 1:
// 61-79 µs p50 against 37-43 µs without). The run's end closes the
// socket instead (connectMySQL), as dpproxy's own MySQL backend does.
func (m myClient) query(_ context.Context, q string, param any) (int64, error) {
	ctx := context.Background()
	var rows *sql.Rows
	var err error
	if param != nil {
		rows, err = m.c.QueryContext(ctx, q, param)
	} else {
		rows, err = m.c.QueryContext(ctx, q)
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

func (m myClient) close() { m.c.Close(); m.db.Close() }

func connectMySQL(ctx context.Context, dsn, mode string) (client, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	switch mode {
	case "simple":
		// Text protocol: the driver interpolates the parameter and sends
		// one COM_QUERY.
		cfg.InterpolateParams = true
	case "extended":
		// Binary protocol: COM_STMT_PREPARE, COM_STMT_EXECUTE and
		// COM_STMT_CLOSE for each query with a parameter.
		cfg.InterpolateParams = false
	default:
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	cfg.Timeout = 30 * time.Second
	// The run's end (ctx) closes the socket, which ends a query in
	// progress: the queries themselves carry no context that can end.
	cfg.DialFunc = func(dctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { nc.Close() })
		return nc, nil
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	c, err := db.Conn(ctx)
	if err == nil {
		err = c.PingContext(ctx)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return myClient{db, c}, nil
}

// connectClients opens n clients, eight at a time, client i to dsn(i).
// On an error the clients opened are returned too, for closeClients.
func connectClients(ctx context.Context, driver, mode string, n int, dsn func(i int) string) ([]client, error) {
	conns := make([]client, n)
	var wg sync.WaitGroup
	var connErr atomic.Value
	sem := make(chan struct{}, 8)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := connectClient(ctx, driver, dsn(i), mode)
			if err != nil {
				connErr.Store(err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	err, _ := connErr.Load().(error)
	return conns, err
}

// closeClients closes the clients opened (nil ones are skipped).
func closeClients(conns []client) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

func connectClient(ctx context.Context, driver, dsn, mode string) (client, error) {
	switch driver {
	case "pgx":
		c, err := connect(ctx, dsn, mode)
		if err != nil {
			return nil, err
		}
		return pgClient{c}, nil
	case "mysql":
		return connectMySQL(ctx, dsn, mode)
	}
	return nil, fmt.Errorf("unknown driver %q (pgx or mysql)", driver)
}

func connect(ctx context.Context, dsn, mode string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	switch mode {
	case "simple":
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	case "extended":
		// Unnamed statements, Parse/Bind/Describe/Execute per query: what
		// pgbench -M extended sends, and what works through PgBouncer's
		// transaction pooling.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	case "prepared":
		// Each text prepared once per connection, then Bind/Execute.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	default:
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	cfg.ConnectTimeout = 30 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var dsns, queries multiFlag
	fs.Var(&dsns, "dsn", "DSN (repeatable: clients are spread over the servers)")
	fs.Var(&queries, "query", "query (repeatable: a mix, chosen at random)")
	clients := fs.Int("clients", 1, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	count := fs.Int64("count", 0, "queries per client (0: until --duration)")
	warmup := fs.Int("warmup", 3, "unmeasured queries per client first")
	mode := fs.String("mode", "simple", "simple, extended or prepared (pgx only) protocol")
	paramMax := fs.Int("param-max", 25, "$1 is a random integer in [1, param-max]; 0: a number unique to each execution")
	ledger := fs.String("ledger", "", "dpproxy ledger file to read before and after")
	metricsURL := fs.String("metrics", "", "dpproxy's admin /metrics URL (login in the URL) whose ledger counters to read before and after")
	driver := fs.String("driver", "pgx", "pgx (PostgreSQL protocol) or mysql (go-sql-driver, MySQL protocol)")
	pid := fs.Int("pid", 0, "process (the proxy under test) whose CPU time per query to report")
	fs.Parse(args)
	if len(queries) == 0 || len(dsns) == 0 || *clients < 1 {
		return errors.New("run: --dsn, --query and --clients ≥ 1 are required")
	}
	placeholder := "$1"
	switch *driver {
	case "pgx":
	case "mysql":
		placeholder = "?"
	default:
		return fmt.Errorf("run: unknown --driver %q (pgx or mysql)", *driver)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration+2*time.Minute)
	defer cancel()

	conns, err := connectClients(ctx, *driver, *mode, *clients, func(i int) string { return dsns[i%len(dsns)] })
	defer closeClients(conns)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	var wg sync.WaitGroup

	var seq atomic.Int64
	seq.Store(time.Now().UnixNano() % 1e12) // distinct across runs too
	exec := func(c client, r *rand.Rand) (int64, error) {
		q := queries[r.IntN(len(queries))]
		if strings.Contains(q, "{i}") {
			q = strings.ReplaceAll(q, "{i}", strconv.FormatInt(seq.Add(1), 10))
		}
		var param any
		switch {
		case !strings.Contains(q, placeholder):
		case *paramMax == 0:
			param = seq.Add(1)
		default:
			param = int32(1 + r.IntN(*paramMax))
		}
		return c.query(ctx, q, param)
	}

	var warm sync.WaitGroup
	warm.Add(len(conns))
	var (
		total, nerr, nrows atomic.Int64
		firstErr           atomic.Value
		lat                = make([][]time.Duration, *clients)
		start              = make(chan struct{})
		deadline           time.Time
	)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for range *warmup {
				exec(c, r)
			}
			warm.Done()
			<-start
			l := make([]time.Duration, 0, 4096)
			for n := int64(0); *count == 0 || n < *count; n++ {
				if time.Now().After(deadline) {
					break
				}
				t0 := time.Now()
				k, err := exec(c, r)
				d := time.Since(t0)
				if err != nil {
					if nerr.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					if ctx.Err() != nil {
						break
					}
					continue
				}
				nrows.Add(k)
				l = append(l, d)
			}
			total.Add(int64(len(l)))
			lat[i] = l
		}()
	}
	// Warm-up runs before the clock starts (and before the ledger is
	// read); the deadline is set just before the start signal.
	warm.Wait()
	before := ledgerCounts(*ledger)
	metrics0 := scrapeLedger(*metricsURL)
	cpu0, self0 := procCPU(*pid), procCPU(os.Getpid())
	busy0, all0, cores := machineCPU()
	t0 := time.Now()
	deadline = t0.Add(*duration)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1, self1 := procCPU(*pid), procCPU(os.Getpid())
	busy1, all1, _ := machineCPU()
	after := ledgerCounts(*ledger)
	metrics1 := scrapeLedger(*metricsURL)

	all := slices.Concat(lat...)
	slices.Sort(all)
	res := Result{Clients: *clients, Driver: *driver, Mode: *mode, Queries: total.Load(), Errors: nerr.Load(),
		Seconds: elapsed.Seconds(), Rows: nrows.Load()}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstErr = s
	}
	res.QPS = float64(res.Queries) / elapsed.Seconds()
	if *pid > 0 && cpu0 >= 0 && cpu1 >= 0 && res.Queries > 0 {
		res.ProcCPUUS = us(cpu1-cpu0) / float64(res.Queries)
	}
	if self0 >= 0 && self1 >= 0 && res.Queries > 0 {
		res.ClientCPUUS = us(self1-self0) / float64(res.Queries)
	}
	if all1 > all0 && res.Queries > 0 {
		res.MachineCPUUS = us(busy1-busy0) / float64(res.Queries)
		res.MachineBusy = float64(busy1-busy0) / float64(all1-all0)
		res.MachineCores = cores
	}
	res.setLatencies(all)
	if *ledger != "" && before != nil && after != nil {
		res.LedgerChg = after[0] - before[0]
		res.LedgerTx = after[1] - before[1]
	}
	res.LedgerTxUS = meanTransactionUS(metrics0, metrics1)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// setLatencies fills the mean, percentiles and maximum from the sorted
// latencies (nothing when there are none) and returns their sum.
func (r *Result) setLatencies(sorted []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	if len(sorted) > 0 {
		r.MeanUS = us(sum / time.Duration(len(sorted)))
		r.P50US, r.P90US, r.P99US = us(pct(sorted, 0.50)), us(pct(sorted, 0.90)), us(pct(sorted, 0.99))
		r.MaxUS = us(sorted[len(sorted)-1])
	}
	return sum
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// ledgerCounts returns the ledger's number of charges and of distinct
// commit timestamps. The ledger writes each group commit as one
// transaction with one timestamp for all its charges, so distinct at_ns
// values are transactions (each one WAL sync with synchronous=FULL).
func ledgerCounts(path string) []int64 {
	if path == "" {
		return nil
	}
	db, err := openLedger(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: ledger:", err)
		return nil
	}
	defer db.Close()
	var n, tx int64
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT at_ns) FROM charges`).Scan(&n, &tx); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: ledger:", err)
		return nil
	}
	return []int64{n, tx}
}

// openLedger opens a dpproxy ledger file read-only.
func openLedger(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&_pragma=busy_timeout(10000)"}
	return sql.Open("sqlite", u.String())
}

func cmdIdle(args []string) error {
	fs := flag.NewFlagSet("idle", flag.ExitOnError)
	dsn := fs.String("dsn", "", "DSN")
	n := fs.Int("conns", 1000, "connections to open")
	hold := fs.Duration("hold", 5*time.Second, "how long to keep them open")
	pid := fs.Int("pid", 0, "process whose VmRSS to report")
	concurrency := fs.Int("concurrency", 16, "connections being opened at once")
	clientKind := fs.String("client", "raw", "raw (pgproto3, SCRAM keys derived once) or pgx (a pgx.Conn each, PBKDF2 per connection)")
	fs.Parse(args)
	if *n < 1 || *concurrency < 1 {
		return errors.New("idle: --conns and --concurrency must be ≥ 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *hold+5*time.Minute)
	defer cancel()
	var open func(context.Context) (func(), error)
	switch *clientKind {
	case "raw":
		t, err := newRawTarget(*dsn)
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		open = func(ctx context.Context) (func(), error) {
			nc, err := t.open(ctx)
			if err != nil {
				return nil, err
			}
			return func() { nc.Close() }, nil
		}
	case "pgx":
		open = func(ctx context.Context) (func(), error) {
			c, err := connect(ctx, *dsn, "simple")
			if err == nil {
				// One round trip: the session is fully set up.
				_, err = c.Exec(ctx, "SELECT 1")
			}
			if err != nil {
				if c != nil {
					c.Close(ctx)
				}
				return nil, err
			}
			return func() { c.Close(context.Background()) }, nil
		}
	default:
		return fmt.Errorf("idle: unknown --client %q (raw or pgx)", *clientKind)
	}
	base := vmRSS(*pid)
	cpu0 := procCPU(*pid)
	closers := make([]func(), *n)
	var wg sync.WaitGroup
	var opened, failed atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, *concurrency)
	t0 := time.Now()
	for i := range closers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cl, err := open(ctx)
			if err != nil {
				if failed.Add(1) == 1 {
					firstErr.Store(err.Error())
				}
				return
			}
			closers[i] = cl
			opened.Add(1)
		}()
	}
	wg.Wait()
	connectSecs := time.Since(t0).Seconds()
	cpu1 := procCPU(*pid)
	time.Sleep(*hold / 2)
	mid := vmRSS(*pid)
	time.Sleep(*hold / 2)
	peak := vmRSS(*pid)
	for _, cl := range closers {
		if cl != nil {
			cl()
		}
	}
	out := map[string]any{"client": *clientKind, "concurrency": *concurrency, "conns": opened.Load(), "failed": failed.Load(),
		"connect_seconds": connectSecs, "rss_base_kb": base, "rss_idle_kb": max(mid, peak)}
	if *pid > 0 && cpu0 >= 0 && cpu1 >= 0 && opened.Load() > 0 {
		// The process's CPU time per connection opened (login and
		// SELECT 1), failed attempts included.
		out["proc_cpu_us_per_conn"] = us(cpu1-cpu0) / float64(opened.Load())
	}
	if s, ok := firstErr.Load().(string); ok {
		out["first_error"] = s
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// procCPU reads a process's CPU time (utime + stime) from /proc/PID/stat;
// -1 when it cannot.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces: fields after its ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	// USER_HZ is 100 on Linux for every architecture Go supports.
	return time.Duration(utime+stime) * (time.Second / 100)
}

// machineCPU reads, from /proc/stat, the CPU time all cores spent busy
// (all but idle, iowait and steal) and in all, and how many cores there
// are; zeros when it cannot.
func machineCPU() (busy, all time.Duration, cores int) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[1:] {
		if name, _, _ := strings.Cut(l, " "); strings.HasPrefix(name, "cpu") {
			cores++
		}
	}
	f := strings.Fields(lines[0])
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user and nice).
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[1+i], 10, 64); err != nil {
			return 0, 0, 0
		}
	}
	var total int64
	for _, t := range ticks {
		total += t
	}
	notWorking := ticks[3] + ticks[4] + ticks[7]
	// USER_HZ is 100 on Linux for every architecture Go supports.
	return time.Duration(total-notWorking) * (time.Second / 100), time.Duration(total) * (time.Second / 100), cores
}

// vmRSS reads VmRSS (kB) from /proc/PID/status.
func vmRSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}
