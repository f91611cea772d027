package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/internal/testcert"
)

// writeMySQLPolicy is writePolicy with the analyst "analyst" (password
// "analyst") given MySQL verifiers too (mysql_native_password and
// caching_sha2_password), so that MySQL clients can log in.
func writeMySQLPolicy(t *testing.T, backend string, budgetEpsilon float64) string {
	t.Helper()
	v, err := config.NewVerifiers("analyst")
	if err != nil {
		t.Fatal(err)
	}
	analysts := fmt.Sprintf(`
analysts:
  - name: analyst
    password:
      scram_sha_256: %q
      mysql_native_password: %q
      caching_sha2_password: %q
    budget:
      epsilon: %g
      delta: 1e-4
`, v.SCRAMSHA256, v.MySQLNativePassword, v.CachingSHA2Password, budgetEpsilon)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := backend + "\nledger:\n  path: ledger.db\ndefaults:\n  epsilon: 0.1\n" + analysts + tablesYAML
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mysqlCLI runs the mariadb (or mysql) command-line client with a script
// on standard input, in batch mode without column names; it skips the
// test when neither client is installed.
func mysqlCLI(t *testing.T, addr, database, script string, extra ...string) string {
	t.Helper()
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		if cli, err = exec.LookPath("mysql"); err != nil {
			t.Skip("no mariadb or mysql client installed")
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--no-defaults", "-h", host, "-P", port, "-u", "analyst", "-panalyst", "--batch", "--skip-column-names"}, extra...)
	cmd := exec.CommandContext(ctx, cli, append(args, database)...)
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cli, extra, err, out.String())
	}
	return out.String()
}

// mysqlSpent reads the analyst's spent ε through a client's dpproxy.budget.
func mysqlSpent(t *testing.T, db *sql.DB) float64 {
	t.Helper()
	var spent float64
	if err := db.QueryRow("SELECT epsilon_spent FROM dpproxy.budget").Scan(&spent); err != nil {
		t.Fatalf("dpproxy.budget over MySQL: %v", err)
	}
	return spent
}

// ledgerSpent is what `dpproxy budget` reports the analyst spent.
func ledgerSpent(t *testing.T, policy string) float64 {
	t.Helper()
	out, err := exec.Command(binary, "budget", "--config", policy).CombinedOutput()
	if err != nil {
		t.Fatalf("dpproxy budget: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "analyst" {
			if spent, err := strconv.ParseFloat(f[1], 64); err == nil { // not the header
				return spent
			}
		}
	}
	t.Fatalf("dpproxy budget: no analyst line\n%s", out)
	return 0
}

// checkMySQLClients runs go-sql-driver (server-side prepared statements
// and interpolateParams) and the mariadb CLI against a MySQL front end
// serving the integration policy (tablesYAML) over database db: DP
// answers near the truth, discovery through information_schema and SHOW
// with only the exposed columns of protected tables, public rows in full,
// raw reads refused with the connection kept.
func checkMySQLClients(t *testing.T, addr, db string) {
	t.Helper()
	ctx := context.Background()
	clinics := demo.NewDataset(demo.GenerateOptions{}).Clinics()
	for _, params := range []string{"interpolateParams=false", "interpolateParams=true"} {
		conn, err := sql.Open("mysql", "analyst:analyst@tcp("+addr+")/"+db+"?timeout=10s&"+params)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetMaxOpenConns(1) // one connection: errors must leave it usable

		var n int64
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM patients WHERE age >= ? AND sex = ?", 18, "F").Scan(&n); err != nil {
			t.Fatalf("%s: COUNT: %v", params, err)
		}
		if want := countPatients(func(p demo.Patient) bool { return p.Age >= 18 && p.Sex == "F" }); math.Abs(float64(n-want)) > 200 {
			t.Errorf("%s: adult women %d, truth %d", params, n, want)
		}
		var sum, avg float64
		if err := conn.QueryRowContext(ctx, "SELECT SUM(cost), AVG(cost) FROM visits WHERE diagnosis = ?", "J06").Scan(&sum, &avg); err != nil {
			t.Fatalf("%s: SUM/AVG: %v", params, err)
		}
		if sum <= 0 || avg < 0 || avg > 2000 {
			t.Errorf("%s: SUM %v AVG %v", params, sum, avg)
		}
		// A DP median of 10,000 ages lands within a few years.
		var median float64
		if err := conn.QueryRowContext(ctx, "SELECT MEDIAN(age) FROM patients WHERE age >= ?", 0).Scan(&median); err != nil {
			t.Fatalf("%s: MEDIAN: %v", params, err)
		}
		if want := demo.DefaultFacts().MedianAge; math.Abs(median-float64(want)) > 3 {
			t.Errorf("%s: MEDIAN(age) %v, truth %d", params, median, want)
		}
		rows, err := conn.QueryContext(ctx, "SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY diagnosis")
		if err != nil {
			t.Fatalf("%s: GROUP BY: %v", params, err)
		}
		groups := 0
		for rows.Next() {
			groups++
		}
		rows.Close()
		if groups != 12 {
			t.Errorf("%s: %d diagnosis groups, want the policy's 12 keys", params, groups)
		}

		var me *mysql.MySQLError
		if _, err := conn.ExecContext(ctx, "SELECT * FROM visits WHERE cost > ?", 10); !errors.As(err, &me) || me.Number != 1142 {
			t.Errorf("%s: raw read: %v, want 1142", params, err)
		}
		var name string
		if err := conn.QueryRowContext(ctx, "SELECT name FROM clinics WHERE clinic_id = ?", clinics[2].ID).Scan(&name); err != nil || name != clinics[2].Name {
			t.Errorf("%s: after the refusal: %q %v, want %q", params, name, err, clinics[2].Name)
		}

		// Discovery: information_schema as DBeaver, Grafana and SQLAlchemy
		// ask it, answered from the policy.
		var tables []string
		rows, err = conn.QueryContext(ctx, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", db)
		if err != nil {
			t.Fatalf("%s: information_schema.TABLES: %v", params, err)
		}
		for rows.Next() {
			var tn, tt string
			rows.Scan(&tn, &tt)
			tables = append(tables, tn+"/"+tt)
		}
		rows.Close()
		if want := []string{"clinics/BASE TABLE", "patients/BASE TABLE", "visits/BASE TABLE"}; !slices.Equal(tables, want) {
			t.Errorf("%s: tables %v, want %v", params, tables, want)
		}
		for table, want := range map[string][]string{
			// The policy exposes four of visits' six columns, typed as
			// the backend declares them (diagnosis: text on PostgreSQL,
			// varchar on MariaDB, reported as varchar below).
			"visits":  {"patient_id int", "clinic_id int", "visit_date date", "diagnosis varchar", "cost decimal"},
			"clinics": {"clinic_id", "name", "city"},
		} {
			rows, err = conn.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", db, table)
			if err != nil {
				t.Fatalf("%s: information_schema.COLUMNS: %v", params, err)
			}
			var got []string
			for rows.Next() {
				var cn, dt, null string
				rows.Scan(&cn, &dt, &null)
				if dt == "text" {
					dt = "varchar"
				}
				if table == "clinics" {
					got = append(got, cn) // types as the backend reports them
				} else {
					got = append(got, cn+" "+dt)
				}
			}
			rows.Close()
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s columns %v, want %v", params, table, got, want)
			}
		}
		// Every view of MariaDB's information_schema exists (ROUTINES is
		// empty: the policy names no routine); one that does not is 1235.
		var routines int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.ROUTINES").Scan(&routines); err != nil || routines != 0 {
			t.Errorf("%s: information_schema.ROUTINES: %d %v", params, routines, err)
		}
		if _, err := conn.ExecContext(ctx, "SELECT * FROM information_schema.NO_SUCH_VIEW"); !errors.As(err, &me) || me.Number != 1235 {
			t.Errorf("%s: information_schema.NO_SUCH_VIEW: %v, want 1235", params, err)
		}
	}

	out := mysqlCLI(t, addr, db, `SHOW TABLES;
SELECT COUNT(*) FROM patients;
SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'v%';
SELECT sex, COUNT(*) FROM patients GROUP BY sex ORDER BY sex;
`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3+1+1+2 || lines[0] != "clinics" || lines[4] != "visits" || !strings.HasPrefix(lines[5], "F\t") || !strings.HasPrefix(lines[6], "M\t") {
		t.Fatalf("mariadb CLI output:\n%s", out)
	}
	facts := demo.DefaultFacts()
	if n, err := strconv.Atoi(lines[3]); err != nil || math.Abs(float64(n-facts.Patients)) > 500 {
		t.Errorf("CLI COUNT(*) = %q, want near %d", lines[3], facts.Patients)
	}
}

// checkSharedBudget asks one DP query over each front end and checks that
// both charge the same ledger: dpproxy.budget over MySQL, over PostgreSQL
// and `dpproxy budget` agree, and grow by ε = 0.1 per fresh query whatever
// the protocol.
func checkSharedBudget(t *testing.T, p *proxyProcess, policy, db string) {
	t.Helper()
	ctx := context.Background()
	my, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/"+db+"?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	pg, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	pgSpent := func() float64 {
		var spent float64
		if err := pg.QueryRow(ctx, "SELECT epsilon_spent FROM dpproxy.budget").Scan(&spent); err != nil {
			t.Fatalf("dpproxy.budget over PostgreSQL: %v", err)
		}
		return spent
	}
	before := mysqlSpent(t, my)
	if pgSpent() != before || math.Abs(ledgerSpent(t, policy)-before) > 1e-9 {
		t.Fatalf("front ends disagree before: MySQL %v, PostgreSQL %v, ledger %v", before, pgSpent(), ledgerSpent(t, policy))
	}
	var n int64
	if err := my.QueryRow("SELECT COUNT(*) FROM patients WHERE age BETWEEN ? AND ?", 21, 34).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := pgSpent(); math.Abs(got-(before+0.1)) > 1e-9 {
		t.Errorf("after a MySQL query, PostgreSQL sees ε spent %v, want %v", got, before+0.1)
	}
	if err := pg.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age BETWEEN $1 AND $2", 35, 49).Scan(&n); err != nil {
		t.Fatal(err)
	}
	want := before + 0.2
	if got := mysqlSpent(t, my); math.Abs(got-want) > 1e-9 {
		t.Errorf("after a PostgreSQL query, MySQL sees ε spent %v, want %v", got, want)
	}
	if got := ledgerSpent(t, policy); math.Abs(got-want) > 1e-9 {
		t.Errorf("dpproxy budget: ε spent %v, want %v", got, want)
	}
	// The result cache is shared too: the MySQL question asked again over
	// PostgreSQL gets the same answer, for free.
	if err := pg.QueryRow(ctx, "SELECT COUNT(*) FROM patients WHERE age BETWEEN $1 AND $2", 21, 34).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := pgSpent(); math.Abs(got-want) > 1e-9 {
		t.Errorf("the MySQL question asked again over PostgreSQL was charged: ε spent %v, want %v", got, want)
	}
}

// MySQL clients against dpproxy serve with a PostgreSQL backend (and a
// catalog role, which MySQL clients' information_schema must not reach):
// DP answers, discovery, refusals, and one budget for both front ends.
func TestMySQLClientsPostgresBackend(t *testing.T) {
	dsn := pgDatabase(t)
	policy := writeMySQLPolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	checkMySQLClients(t, p.mysqlAddress(t), cfg.Database)
	checkSharedBudget(t, p, policy, cfg.Database)
}

// The same through the MySQL front end with a MariaDB backend.
func TestMySQLClientsMariaDBBackend(t *testing.T) {
	dsn := mysqlDatabase(t)
	policy := writeMySQLPolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	checkMySQLClients(t, p.mysqlAddress(t), cfg.DBName)
	checkSharedBudget(t, p, policy, cfg.DBName)
}

// TLS for the MySQL front end, from the policy's certificate: go-sql-driver
// with tls=skip-verify and with a registered tls.Config that trusts the
// certificate (and fails with one that does not: the session really is
// TLS), caching_sha2_password over TLS (an analyst with only that
// verifier) and mysql_native_password through an auth switch, and the
// mariadb CLI with --ssl.
func TestMySQLTLS(t *testing.T) {
	certFile, keyFile := testcert.Write(t, t.TempDir())
	dbPath := filepath.Join(t.TempDir(), "demo.db")
	if err := demo.GenerateSQLite(context.Background(), dbPath); err != nil {
		t.Fatal(err)
	}
	sha2, err := config.NewVerifiers("analyst")
	if err != nil {
		t.Fatal(err)
	}
	native, err := config.NewVerifiers("native pass")
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	yaml := fmt.Sprintf(`listen:
  tls_cert: %q
  tls_key: %q
backend:
  kind: sqlite
  path: %q
ledger:
  path: ledger.db
defaults:
  epsilon: 0.1
analysts:
  - name: analyst
    password:
      caching_sha2_password: %q
    budget: {epsilon: 10, delta: 1e-4}
  - name: native
    password:
      mysql_native_password: %q
    budget: {epsilon: 10, delta: 1e-4}
`, certFile, keyFile, dbPath, sha2.CachingSHA2Password, native.MySQLNativePassword) + tablesYAML
	if err := os.WriteFile(policy, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	addr := p.mysqlAddress(t)

	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509CertPool(t, pem)
	if err := mysql.RegisterTLSConfig("dpproxy-test", &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err != nil {
		t.Fatal(err)
	}
	if err := mysql.RegisterTLSConfig("dpproxy-untrusted", &tls.Config{RootCAs: x509CertPool(t, nil), ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ user, password, params string }{
		{"analyst", "analyst", "tls=skip-verify"},
		{"analyst", "analyst", "tls=dpproxy-test"},
		{"analyst", "analyst", "tls=dpproxy-test&interpolateParams=true"},
		{"native", "native pass", "tls=dpproxy-test"},
	} {
		db, err := sql.Open("mysql", c.user+":"+c.password+"@tcp("+addr+")/demo?timeout=10s&"+c.params)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int64
		if err := db.QueryRow("SELECT COUNT(*) FROM patients WHERE age >= ?", 18).Scan(&n); err != nil {
			t.Fatalf("%s %s: %v", c.user, c.params, err)
		}
		if want := countPatients(func(p demo.Patient) bool { return p.Age >= 18 }); math.Abs(float64(n-want)) > 200 {
			t.Errorf("%s %s: adults %d, truth %d", c.user, c.params, n, want)
		}
		var me *mysql.MySQLError
		if _, err := db.Exec("SELECT * FROM patients"); !errors.As(err, &me) || me.Number != 1142 {
			t.Errorf("%s %s: raw read over TLS: %v, want 1142", c.user, c.params, err)
		}
	}
	// A wrong password over TLS is still 1045.
	bad, _ := sql.Open("mysql", "analyst:wrong@tcp("+addr+")/demo?timeout=10s&tls=skip-verify")
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("wrong password over TLS: %v, want 1045", err)
	}
	// A client that does not trust the certificate fails the handshake.
	untrusted, _ := sql.Open("mysql", "analyst:analyst@tcp("+addr+")/demo?timeout=10s&tls=dpproxy-untrusted")
	defer untrusted.Close()
	if err := untrusted.Ping(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v, want a certificate error", err)
	}
	// Without TLS the front end still serves (TLS is offered, not forced).
	plain, _ := sql.Open("mysql", "native:native pass@tcp("+addr+")/demo?timeout=10s")
	defer plain.Close()
	if err := plain.Ping(); err != nil {
		t.Errorf("without TLS: %v", err)
	}

	// The mariadb CLI over TLS: status reports the cipher.
	out := mysqlCLI(t, addr, "demo", "status\nSELECT COUNT(*) FROM clinics;\n", "--ssl")
	if !strings.Contains(out, "Cipher in use") || !strings.Contains(out, "\n25\n") {
		t.Errorf("mariadb --ssl:\n%s", out)
	}
}

// x509CertPool is a pool holding the PEM certificates given (empty for nil).
func x509CertPool(t *testing.T, pemCerts []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if pemCerts != nil && !pool.AppendCertsFromPEM(pemCerts) {
		t.Fatal("no certificate in PEM")
	}
	return pool
}
