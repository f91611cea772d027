package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lib/pq"
)

// servePostgres starts dpproxy serve on a fresh PostgreSQL database
// holding the demo data.
func servePostgres(t *testing.T) *proxyProcess {
	t.Helper()
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(pgDatabase(t))+"\n", 100)
	return startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
}

// countPatients counts the demo patients matching keep: the truth noisy
// answers are compared with.
func countPatients(keep func(demo.Patient) bool) int64 {
	var n int64
	for p := range demo.NewDataset(demo.GenerateOptions{}).Patients() {
		if keep(p) {
			n++
		}
	}
	return n
}

// lib/pq through database/sql: prepared, parameterized DP aggregates,
// catalog discovery, an error and a good query on the same connection.
func TestLibPQ(t *testing.T) {
	p := servePostgres(t)
	db, err := sql.Open("postgres", "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the error must leave it usable
	ctx := context.Background()

	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", "public").Scan(&tables); err != nil || tables != 3 {
		t.Errorf("catalog discovery: %d tables, %v", tables, err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM patients WHERE age >= $1 AND sex = $2", 18, "F").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// ε = 0.1, sensitivity 1: Laplace scale 10.
	if want := countPatients(func(p demo.Patient) bool { return p.Age >= 18 && p.Sex == "F" }); math.Abs(float64(n-want)) > 200 {
		t.Errorf("adult women: %d, truth %d", n, want)
	}
	_, err = db.ExecContext(ctx, "SELECT * FROM patients WHERE age > $1", 40)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "42501" {
		t.Errorf("raw read: %v", err)
	}
	var avg float64
	if err := db.QueryRowContext(ctx, "SELECT AVG(cost) FROM visits WHERE diagnosis = $1", "J06").Scan(&avg); err != nil || avg < 0 || avg > 2000 {
		t.Errorf("after the error: AVG %v, %v", avg, err)
	}
}

// node-postgres (npm package pg) runs a script of its own against dpproxy.
func TestNodePostgres(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir, _ := filepath.Abs("testdata/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg")); err != nil {
		t.Skip("npm package pg not installed: run npm install --prefix integration/testdata/node (scripts/test.sh does)")
	}
	p := servePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join(dir, "client.js"), "postgres://analyst:analyst@"+p.addr+"/clinic").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node client: %v\n%s\nproxy log:\n%s", err, ee.Stderr, p.stderr.String())
		}
		t.Fatal(err)
	}
	var report struct {
		Tables       []string  `json:"tables"`
		VisitColumns []string  `json:"visitColumns"`
		ClinicsKey   []string  `json:"clinicsKey"`
		Adults       int64     `json:"adults"`
		CountType    uint32    `json:"countType"`
		Groups       []string  `json:"groups"`
		AvgIncome    []float64 `json:"avgIncome"`
		RawRead      string    `json:"rawRead"`
		AfterError   int64     `json:"afterError"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if len(report.Tables) != 3 || report.CountType != 20 || report.RawRead != "42501" || report.AfterError != 5 {
		t.Errorf("report %+v", report)
	}
	if got := strings.Join(report.VisitColumns, " "); got != "patient_id:integer clinic_id:integer visit_date:date diagnosis:text cost:numeric" {
		t.Errorf("visits' columns through information_schema: %s", got)
	}
	if got := strings.Join(report.ClinicsKey, " "); got != "clinic_id" {
		t.Errorf("clinics' primary key through pg_index: %q", got)
	}
	want := countPatients(func(p demo.Patient) bool { return p.Age >= 18 })
	if math.Abs(float64(report.Adults-want)) > 200 || len(report.Groups) != 2 {
		t.Errorf("DP answers %+v", report)
	}
}

// pgx in its default mode (cached prepared statements, binary formats)
// and in batch mode, against dpproxy serve on PostgreSQL: parameterized DP
// aggregates, catalog discovery, an error mid-pipeline then a good query.
func TestPgxDefaultModeAndBatch(t *testing.T) {
	p := servePostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	var avg float64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*), AVG(income) FROM patients WHERE age BETWEEN $1 AND $2", 30, 50).Scan(&n, &avg); err != nil {
		t.Fatal(err)
	}
	want := countPatients(func(p demo.Patient) bool { return p.Age >= 30 && p.Age <= 50 })
	if math.Abs(float64(n-want)) > 200 || avg < 0 || avg > 200000 {
		t.Errorf("COUNT %d (truth %d), AVG %v", n, want, avg)
	}
	var tables int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", "public").Scan(&tables); err != nil || tables != 3 {
		t.Errorf("catalog: %d %v", tables, err)
	}

	// A batch is one pipeline (one Sync). In the default mode pgx prepares
	// every statement first, so a refused one fails the whole batch at
	// prepare; in exec mode each runs in turn and the refusal comes mid-way.
	b := &pgx.Batch{}
	b.Queue("SELECT COUNT(*) FROM visits WHERE diagnosis = $1", "J06")
	b.Queue("SELECT * FROM visits WHERE cost > $1", 10)
	if err := conn.SendBatch(ctx, b).Close(); err == nil {
		t.Error("a batch with a raw read was accepted")
	}
	execConn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	defer execConn.Close(ctx)
	b = &pgx.Batch{}
	b.Queue("SELECT COUNT(*) FROM visits WHERE diagnosis = $1", "J06")
	b.Queue("SELECT * FROM visits WHERE cost > $1", 10)
	b.Queue("SELECT name FROM clinics WHERE clinic_id = $1", 3)
	br := execConn.SendBatch(ctx, b)
	if err := br.QueryRow().Scan(&n); err != nil || n <= 0 {
		t.Errorf("batch query 1: %d %v", n, err)
	}
	_, err = br.Exec()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("batch query 2: %v, want 42501", err)
	}
	br.Close()
	var name string
	for _, c := range []*pgx.Conn{conn, execConn} {
		if err := c.QueryRow(ctx, "SELECT name FROM clinics WHERE clinic_id = $1", 3).Scan(&name); err != nil || name == "" {
			t.Errorf("after the failed batch: %q %v", name, err)
		}
	}
}
