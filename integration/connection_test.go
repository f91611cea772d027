package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/internal/testcert"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TLS from the policy: psql and pgx with sslmode=require get an encrypted
// session and DP answers.
func TestTLSFromPolicy(t *testing.T) {
	ctx := context.Background()
	certFile, keyFile := testcert.Write(t, t.TempDir())
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "listen:\n  tls_cert: "+strconv.Quote(certFile)+"\n  tls_key: "+strconv.Quote(keyFile)+"\nbackend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")

	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("pgx connection is %T, not TLS", conn.PgConn().Conn())
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients").Scan(&n); err != nil || n < 9000 {
		t.Errorf("count over TLS: %d %v", n, err)
	}
	r := psqlWithEnv(t, p, "analyst", "analyst", "\\conninfo\nSELECT COUNT(*) FROM clinics;\n", "PGSSLMODE=require")
	if !strings.Contains(r.stdout, "SSL connection") || !strings.Contains(r.stdout, "25") {
		t.Errorf("psql over TLS: %v\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
	}
}

// CancelRequest cancels the statement running on the backend: a heavy
// public query is stopped within moments, and the connection is reusable.
func TestCancelLongBackendQuery(t *testing.T) {
	dsn := pgDatabase(t)
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	qctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	var n int64
	// 25^6 ≈ 244 million rows: many seconds of work on the backend.
	err = conn.QueryRow(qctx, "SELECT COUNT(*) FROM clinics a, clinics b, clinics c, clinics d, clinics e, clinics f").Scan(&n)
	elapsed := time.Since(start)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("heavy query: %v (%d rows) after %v; want it cancelled (57014)", err, n, elapsed)
		}
	}
	if elapsed > 8*time.Second {
		t.Errorf("cancel took %v", elapsed)
	}
	// The backend is not still busy with it: a new connection answers at once.
	conn2, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	qctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if err := conn2.QueryRow(qctx2, "SELECT COUNT(*) FROM clinics").Scan(&n); err != nil || n != 25 {
		t.Errorf("after cancel: %d %v", n, err)
	}
	// Verify on PostgreSQL itself that the heavy statement is gone.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var active int
		admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%clinics a, clinics b%' AND state = 'active' AND pid <> pg_backend_pid()").Scan(&active)
		if active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the heavy statement still runs on the backend %v after the cancel", 5*time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listen.tls: required refuses plaintext on both protocols with a clear
// error, and serves the same clients over TLS: psql with sslmode=disable
// and the mariadb client with --skip-ssl are refused, psql with
// sslmode=require and the mariadb client with --ssl are answered.
func TestTLSRequired(t *testing.T) {
	ctx := context.Background()
	certFile, keyFile := testcert.Write(t, t.TempDir())
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(ctx, dbPath); err != nil {
		t.Fatal(err)
	}
	policy := writeMySQLPolicy(t, "listen:\n  tls: required\n  tls_cert: "+strconv.Quote(certFile)+"\n  tls_key: "+strconv.Quote(keyFile)+
		"\nbackend:\n  kind: sqlite\n  path: "+strconv.Quote(dbPath)+"\n", 10)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")

	r := psqlWithEnv(t, p, "analyst", "analyst", "SELECT COUNT(*) FROM clinics;\n", "PGSSLMODE=disable")
	if r.err == nil || !strings.Contains(r.stderr, "requires TLS") {
		t.Errorf("psql sslmode=disable: %v\nstdout %s\nstderr %s; want a refusal saying TLS is required", r.err, r.stdout, r.stderr)
	}
	r = psqlWithEnv(t, p, "analyst", "analyst", "SELECT COUNT(*) FROM clinics;\n", "PGSSLMODE=require")
	if r.err != nil || !strings.Contains(r.stdout, "25") {
		t.Errorf("psql sslmode=require: %v\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
	}

	cli, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("no mariadb client installed")
	}
	host, port, _ := net.SplitHostPort(p.mysqlAddress(t))
	mariadb := func(tlsFlag string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, cli, "--no-defaults", tlsFlag, "-h", host, "-P", port, "-u", "analyst", "-panalyst", "demo", "-e", "SELECT COUNT(*) FROM clinics")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := mariadb("--skip-ssl"); err == nil || !strings.Contains(out, "3159") {
		t.Errorf("mariadb --skip-ssl: %v\n%s; want ERROR 3159", err, out)
	}
	if out, err := mariadb("--ssl"); err != nil || !strings.Contains(out, "25") {
		t.Errorf("mariadb --ssl: %v\n%s", err, out)
	}
}

// listen.direct_io: false: sockets keep the Go runtime's ordinary calls,
// and the proxy answers as with them on (every other test).
func TestDirectIOOff(t *testing.T) {
	dsn := pgDatabase(t)
	policy := writePolicy(t, "listen:\n  direct_io: false\nbackend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 10)
	conn := connectAs(t, startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0"), "analyst")
	ctx := context.Background()
	var clinics int64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM clinics").Scan(&clinics); err != nil || clinics != 25 {
		t.Errorf("public count: %d %v, want 25", clinics, err)
	}
	var patients float64
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM patients").Scan(&patients); err != nil || patients < 9000 {
		t.Errorf("DP count: %v %v", patients, err)
	}
}
