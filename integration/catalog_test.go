package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// catalogRole creates the catalog role that `dpproxy catalog-role` prints
// for policy, in the database of dsn, and returns its DSN.
func catalogRole(t *testing.T, dsn, policy string) string {
	t.Helper()
	ctx := context.Background()
	role := fmt.Sprintf("dpproxy_catalog_%d", os.Getpid())
	out, err := exec.Command(binary, "catalog-role", "--config", policy, "--role", role).Output()
	if err != nil {
		t.Fatalf("dpproxy catalog-role: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	if _, err := conn.Exec(ctx, string(out)); err != nil {
		t.Fatalf("creating the catalog role: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE IF EXISTS "+role)
			c.Close(context.Background())
		}
	})
	cfg, _ := pgx.ParseConfig(dsn)
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, cfg.Database)
}

// psql's meta-commands and the catalog queries of drivers run under the
// catalog role: they work, cost nothing, and cannot read protected rows.
func TestCatalogQueriesWithPsql(t *testing.T) {
	dsn := pgDatabase(t)
	backendYAML := "backend:\n  kind: postgres\n  dsn: " + strconv.Quote(dsn) + "\n"
	policy := writePolicy(t, backendYAML, 100)
	catalogDSN := catalogRole(t, dsn, policy)
	policy = writePolicy(t, backendYAML+"  catalog_dsn: "+strconv.Quote(catalogDSN)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")

	r := psql(t, p, "analyst", "analyst", "\\dt\n")
	for _, table := range []string{"clinics", "patients", "visits"} {
		if !strings.Contains(r.stdout, "|"+table+"|") {
			t.Errorf("\\dt lacks %s:\nstdout %s\nstderr %s", table, r.stdout, r.stderr)
		}
	}
	r = psql(t, p, "analyst", "analyst", "\\d visits\n")
	if !strings.Contains(r.stdout, "diagnosis|text") || r.err != nil {
		t.Errorf("\\d visits: %v\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
	}
	r = psql(t, p, "analyst", "analyst", "\\dn\n\\l\n\\conninfo\n")
	if !strings.Contains(r.stdout, "public|") || !strings.Contains(r.stdout, "You are connected") || r.err != nil {
		t.Errorf("\\dn \\l \\conninfo: %v\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// information_schema shows a protected table with the policy's columns
	// only (visit_id and clinic_id are not in this policy).
	rows, err := conn.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_name = 'visits' ORDER BY column_name")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(cols, ",") != "cost,diagnosis,patient_id,visit_date" {
		t.Errorf("information_schema.columns for visits: %v %v", cols, err)
	}
	// A protected read dpproxy cannot parse falls to the catalog role,
	// which cannot read it.
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM visits WHERE diagnosis ~ 'J'").Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "permission denied") {
		t.Errorf("unparseable protected read: %v", err)
	}
	// The connection is still usable, and nothing was charged.
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_namespace").Scan(&n); err != nil || n == 0 {
		t.Errorf("catalog count: %d %v", n, err)
	}
	var spent float64
	if err := conn.QueryRow(ctx, "SELECT epsilon_spent FROM dpproxy.budget").Scan(&spent); err != nil || spent != 0 {
		t.Errorf("catalog queries spent ε=%v (%v)", spent, err)
	}
}

// A catalog role that could read protected tables is refused at start.
func TestServeRefusesPrivilegedCatalogRole(t *testing.T) {
	dsn := pgDatabase(t)
	// The test database's owner is a superuser.
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n  catalog_dsn: "+strconv.Quote(dsn+"&application_name=catalog")+"\n", 100)
	out, err := exec.Command(binary, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "superuser") {
		t.Errorf("serve with a superuser catalog role: err=%v\n%s", err, out)
	}
}
