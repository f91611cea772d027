package mysqlwire_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/proxy"
	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
)

// testPolicy has the demo's tables and three analysts (password = name):
// analyst with both MySQL verifiers, nat with mysql_native_password only,
// sha with caching_sha2_password only; poor has almost no budget.
func testPolicy(dbPath string) string {
	v := func(pw string, native, sha2 bool) string {
		s := "{"
		if native {
			s += fmt.Sprintf("mysql_native_password: %q", auth.MySQLNativeVerifier(pw))
		}
		if sha2 {
			if native {
				s += ", "
			}
			s += fmt.Sprintf("caching_sha2_password: %q", auth.CachingSHA2Verifier(pw))
		}
		return s + "}"
	}
	return fmt.Sprintf(`
backend: {kind: sqlite, path: %q}
defaults: {epsilon: 0.5, delta: 1e-6, max_epsilon_per_query: 2}
analysts:
  - {name: analyst, password: %s, budget: {epsilon: 50, delta: 1e-4}}
  - {name: nat, password: %s, budget: {epsilon: 50, delta: 1e-4}}
  - {name: sha, password: %s, budget: {epsilon: 50, delta: 1e-4}}
  - {name: poor, password: %s, budget: {epsilon: 0.6, delta: 1e-4}}
protected_tables:
  - name: patients
    privacy_unit: patient_id
    columns:
      - {name: patient_id, type: int}
      - {name: age, type: int, bounds: [0, 100]}
      - {name: sex, type: text, group_by: true, keys: [F, M]}
      - {name: region, type: text, group_by: true}
      - {name: income, type: int, bounds: [0, 200000]}
  - name: visits
    privacy_unit: patient_id
    max_groups_per_unit: 4
    max_rows_per_unit: 3
    columns:
      - {name: patient_id, type: int}
      - {name: clinic_id, type: int, group_by: true}
      - {name: visit_date, type: date}
      - {name: diagnosis, type: text, group_by: true}
      - {name: cost, type: numeric, bounds: [0, 1000]}
public_tables: [clinics]
`, dbPath, v("analyst", true, true), v("nat", true, false), v("sha", false, true), v("poor", true, true))
}

var (
	dataOnce sync.Once
	dataDir  string
	dataErr  error
)

// demoDB generates the demo data once per test binary.
func demoDB(t testing.TB) string {
	dataOnce.Do(func() {
		dataDir, dataErr = os.MkdirTemp("", "mysqlwire-demo")
		if dataErr == nil {
			dataErr = demo.GenerateSQLite(context.Background(), filepath.Join(dataDir, "demo.db"))
		}
	})
	if dataErr != nil {
		t.Fatal(dataErr)
	}
	return filepath.Join(dataDir, "demo.db")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dataDir != "" {
		os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

// startServer runs a mysqlwire.Server over the real engine and a SQLite
// backend with the demo data; it returns the address.
func startServer(t testing.TB, opts mysqlwire.Options) string {
	t.Helper()
	ctx := context.Background()
	dbPath := demoDB(t)
	pol, err := config.Parse([]byte(testPolicy(dbPath)), "mysqlwire_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.OpenSQLite(ctx, dbPath, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	store, err := budget.OpenSQLite(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	limits := map[string]budget.Cost{}
	for _, a := range pol.Analysts {
		limits[a.Name] = budget.Cost{Epsilon: a.Budget.Epsilon, Delta: a.Budget.Delta}
	}
	acct, err := budget.NewAccountant(ctx, store, limits)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sessions, err := session.NewServer(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sessions.Close() })
	srv := mysqlwire.NewServer(proxy.MySQLSessions{Server: sessions}, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { srv.Serve(sctx, ln); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		shctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		if err := srv.Shutdown(shctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return ln.Addr().String()
}

func openDB(t testing.TB, addr, user, password, database, params string) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=10s", user, password, addr, database)
	if params != "" {
		dsn += "&" + params
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// analystConn starts a server with opts and returns one connection of
// the analyst to it, closed when the test ends.
func analystConn(t *testing.T, opts mysqlwire.Options) *sql.Conn {
	t.Helper()
	db := openDB(t, startServer(t, opts), "analyst", "analyst", "demo", "")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func TestGoSQLDriver(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{})
	for _, interpolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpolateParams=%v", interpolate), func(t *testing.T) {
			db := openDB(t, addr, "analyst", "analyst", "demo", fmt.Sprintf("interpolateParams=%v&parseTime=true", interpolate))
			ctx := context.Background()
			var n int64
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM patients").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n < 9000 || n > 11000 {
				t.Errorf("COUNT(*) = %d, want about 10000", n)
			}
			// Parameters: bound on the server (binary protocol) or
			// interpolated by the driver (text protocol).
			var c int64
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM patients WHERE age > ? AND sex = ?", 50, "F").Scan(&c); err != nil {
				t.Fatal(err)
			}
			if c <= 0 || c >= n {
				t.Errorf("COUNT with parameters = %d", c)
			}
			rows, err := db.QueryContext(ctx, "SELECT sex, COUNT(*), AVG(income) FROM patients GROUP BY sex")
			if err != nil {
				t.Fatal(err)
			}
			var groups []string
			for rows.Next() {
				var sex string
				var cnt int64
				var avg float64
				if err := rows.Scan(&sex, &cnt, &avg); err != nil {
					t.Fatal(err)
				}
				groups = append(groups, sex)
				if avg < 0 || avg > 200000 {
					t.Errorf("AVG(income) = %v out of bounds", avg)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(groups, ",") != "F,M" {
				t.Errorf("groups %v", groups)
			}
			// An error, then a good query on the same connection.
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, err = conn.QueryContext(ctx, "SELECT * FROM patients")
			if err == nil || mysqlErrNumber(err) == 0 {
				t.Fatalf("SELECT * FROM patients: %v, want a MySQL error", err)
			}
			if _, err := conn.QueryContext(ctx, "SELEC 1"); mysqlErrNumber(err) != mysqlwire.ErrParse {
				t.Errorf("syntax error: %v, want 1064", err)
			}
			if _, err := conn.QueryContext(ctx, "SELECT COUNT(*) FROM nosuch"); mysqlErrNumber(err) != mysqlwire.ErrNoSuchTable {
				t.Errorf("unknown table: %v, want 1146", err)
			}
			var name string
			if err := conn.QueryRowContext(ctx, "SELECT name FROM clinics WHERE clinic_id = ?", 1).Scan(&name); err != nil || name == "" {
				t.Errorf("public table after errors: %q %v", name, err)
			}
			// Dates and decimals through both protocols.
			var cost float64
			if err := conn.QueryRowContext(ctx, "SELECT SUM(cost) FROM visits WHERE visit_date >= ?", "2020-01-01").Scan(&cost); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSessionQuestions(t *testing.T) {
	conn := analystConn(t, mysqlwire.Options{})
	ctx := context.Background()
	var comment string
	if err := conn.QueryRowContext(ctx, "select @@version_comment limit 1").Scan(&comment); err != nil || !strings.Contains(comment, "dpproxy") {
		t.Errorf("@@version_comment: %q %v", comment, err)
	}
	for _, q := range []string{
		"SET NAMES utf8mb4", "SET character_set_results = NULL", "SET autocommit=1",
		"SET SESSION sql_mode='STRICT_TRANS_TABLES'", "SET SQL_AUTO_IS_NULL = 0", "SET @x = 3",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	var inc int64
	var client string
	var results sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT @@session.auto_increment_increment AS auto_increment_increment, @@character_set_client AS character_set_client, @@character_set_results AS character_set_results").
		Scan(&inc, &client, &results); err != nil {
		t.Fatal(err)
	}
	if inc != 1 || client != "utf8mb4" || results.Valid {
		t.Errorf("variables: %d %q %v", inc, client, results)
	}
	var dbName, user string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE(), USER()").Scan(&dbName, &user); err != nil || dbName != "demo" || !strings.HasPrefix(user, "analyst") {
		t.Errorf("DATABASE(), USER(): %q %q %v", dbName, user, err)
	}
	tables := queryStrings(t, conn, "SHOW TABLES")
	if strings.Join(tables, ",") != "clinics,patients,visits" {
		t.Errorf("SHOW TABLES: %v", tables)
	}
	cols := queryStrings(t, conn, "SHOW COLUMNS FROM patients")
	if strings.Join(cols, ",") != "patient_id,age,sex,region,income" {
		t.Errorf("SHOW COLUMNS: %v", cols)
	}
	if dbs := queryStrings(t, conn, "SHOW DATABASES LIKE '%'"); strings.Join(dbs, ",") != "information_schema,demo" {
		t.Errorf("SHOW DATABASES: %v", dbs)
	}
	if v := queryStrings(t, conn, "SHOW VARIABLES LIKE 'version_comment'"); len(v) != 1 {
		t.Errorf("SHOW VARIABLES: %v", v)
	}
	if c := queryStrings(t, conn, "SHOW COLLATION"); len(c) == 0 {
		t.Error("SHOW COLLATION: no rows")
	}
	if _, err := conn.ExecContext(ctx, "USE nosuch"); mysqlErrNumber(err) != mysqlwire.ErrUnknownDB {
		t.Errorf("USE nosuch: %v, want 1049", err)
	}
	// Nothing above was charged.
	var remaining float64
	if err := conn.QueryRowContext(ctx, "SELECT epsilon_remaining FROM dpproxy.budget").Scan(&remaining); err != nil {
		t.Fatal(err)
	}
	if remaining != 50 {
		t.Errorf("remaining ε %v, want 50", remaining)
	}
}

func queryStrings(t *testing.T, conn *sql.Conn, q string) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(string(vals[0].([]byte))))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAuthentication(t *testing.T) {
	for _, plugin := range []string{"caching_sha2_password", "mysql_native_password"} {
		t.Run(plugin, func(t *testing.T) {
			addr := startServer(t, mysqlwire.Options{AuthPlugin: plugin})
			for _, user := range []string{"analyst", "nat", "sha"} {
				db := openDB(t, addr, user, user, "", "")
				if err := db.Ping(); err != nil {
					t.Errorf("%s: %v", user, err)
				}
			}
			wrong := openDB(t, addr, "analyst", "wrong", "", "").Ping()
			unknown := openDB(t, addr, "nobody", "wrong", "", "").Ping()
			for _, err := range []error{wrong, unknown} {
				if mysqlErrNumber(err) != mysqlwire.ErrAccessDenied {
					t.Errorf("bad login: %v, want 1045", err)
				}
			}
			if w, u := strings.Replace(wrong.Error(), "analyst", "X", 1), strings.Replace(unknown.Error(), "nobody", "X", 1); w != u {
				t.Errorf("wrong password and unknown user differ:\n%s\n%s", w, u)
			}
			if err := openDB(t, addr, "analyst", "analyst", "nosuch", "").Ping(); mysqlErrNumber(err) != mysqlwire.ErrUnknownDB {
				t.Errorf("unknown database: %v, want 1049", err)
			}
		})
	}
}

func TestBudgetExhausted(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{})
	db := openDB(t, addr, "poor", "poor", "demo", "")
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("SELECT COUNT(*) FROM patients"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("SELECT COUNT(*) FROM patients WHERE age > 30")
	if mysqlErrNumber(err) != mysqlwire.ErrUserLimitReached {
		t.Fatalf("over budget: %v, want 1226", err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}

func TestMariaDBClient(t *testing.T) {
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		if cli, err = exec.LookPath("mysql"); err != nil {
			t.Skip("no mariadb or mysql client installed")
		}
	}
	addr := startServer(t, mysqlwire.Options{})
	host, port, _ := net.SplitHostPort(addr)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append([]string{"--no-defaults", "-h", host, "-P", port, "-u", "analyst", "-panalyst"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", cli, args, err, out)
		}
		return string(out)
	}
	if out := run("demo", "-N", "-e", "SELECT COUNT(*) FROM patients"); len(strings.TrimSpace(out)) < 4 {
		t.Errorf("COUNT: %s", out)
	}
	out := run("-e", "USE demo; status; SHOW TABLES; SELECT region, COUNT(*) FROM patients GROUP BY region")
	for _, want := range []string{"Current database:\tdemo", "patients", "clinics"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
