package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// The virtual catalog, end to end: what psql, pgx, JDBC's DatabaseMetaData
// and a Python ORM's inspector (over psycopg2 and PyMySQL) learn through
// dpproxy, on the embedded demo, a PostgreSQL backend and a MariaDB
// backend, compared with what the same tools learn from a real server
// holding only the policy's view of the schema.

// catalogBackend is a running dpproxy on one backend.
type catalogBackend struct {
	name    string
	proxy   *proxyProcess
	pgDB    string // database name for PostgreSQL clients
	mysqlDB string // database MySQL clients use
}

// startCatalogBackends starts dpproxy on the demo (SQLite), on PostgreSQL
// and on MariaDB (those skipped without a server), each with both front
// ends and an analyst with PostgreSQL and MySQL verifiers.
func startCatalogBackends(t *testing.T) []catalogBackend {
	t.Helper()
	var out []catalogBackend
	demo := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	out = append(out, catalogBackend{"demo", demo, "demo", "demo"})
	if os.Getenv("DPPROXY_TEST_PG_DSN") != "" {
		dsn := pgDatabase(t)
		policy := writeMySQLPolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
		p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
		cfg, _ := pgx.ParseConfig(dsn)
		out = append(out, catalogBackend{"postgres", p, cfg.Database, cfg.Database})
	}
	if os.Getenv("DPPROXY_TEST_MYSQL_DSN") != "" {
		dsn := mysqlDatabase(t)
		policy := writeMySQLPolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
		p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
		cfg, _ := mysql.ParseDSN(dsn)
		out = append(out, catalogBackend{"mariadb", p, cfg.DBName, cfg.DBName})
	}
	return out
}

// Every startup and catalog query of the client corpus is answered on
// every backend, over the simple and the extended protocol, without error
// and without budget.
func TestClientStartupAndCatalogQueries(t *testing.T) {
	queries := readClientQueries(t)
	if len(queries) < 25 {
		t.Fatalf("corpus has %d queries", len(queries))
	}
	ctx := context.Background()
	for _, b := range startCatalogBackends(t) {
		for _, mode := range []string{"simple_protocol", "cache_statement"} {
			conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+b.proxy.addr+"/"+b.pgDB+"?sslmode=disable&default_query_exec_mode="+mode)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				rows, err := conn.Query(ctx, q.sql)
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
					err = rows.Err()
				}
				if err != nil {
					t.Errorf("%s, %s (%s): %s\n  %v", b.name, q.client, mode, q.sql, err)
				}
			}
			var spent float64
			if err := conn.QueryRow(ctx, "SELECT epsilon_spent FROM dpproxy.budget").Scan(&spent); err != nil || spent != 0 {
				t.Errorf("%s %s: the corpus spent ε=%v (%v)", b.name, mode, spent, err)
			}
			conn.Close(ctx)
		}
	}
}

// psql's meta-commands on the demo: each works and shows the policy.
func TestPsqlMetaCommands(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{`\l`, []string{"demo|analyst|UTF8|C|C"}},
		{`\dn`, []string{"dpproxy|analyst", "public|analyst"}},
		{`\dt`, []string{"public|clinics|table|analyst", "public|patients|table|analyst", "public|prescriptions|table|analyst", "public|visits|table|analyst"}},
		{`\d`, []string{"public|visits|table|analyst"}},
		{`\d visits`, []string{"patient_id|", "diagnosis|", "cost|"}},
		{`\d clinics`, []string{"clinic_id|", `"clinics_pkey" PRIMARY KEY, btree (clinic_id)`}},
		{`\df`, nil},
		{`\du`, []string{"analyst|"}},
		{`\dv dpproxy.*`, []string{"dpproxy|budget|view|analyst", "dpproxy|queries|view|analyst", "dpproxy|rr_counts|view|analyst"}},
		{`\conninfo`, []string{`You are connected to database "demo" as user "analyst"`}},
	} {
		r := psql(t, p, "analyst", "analyst", "\\pset tuples_only off\n"+c.cmd+"\n")
		if r.err != nil || strings.Contains(r.stderr, "ERROR") {
			t.Errorf("%s: %v\nstdout %s\nstderr %s", c.cmd, r.err, r.stdout, r.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s lacks %q:\n%s", c.cmd, w, r.stdout)
			}
		}
		// The demo's unexposed columns and tables are never named.
		for _, hidden := range []string{"prescription_id", "demo_meta", "visits_patient_id"} {
			if strings.Contains(r.stdout, hidden) {
				t.Errorf("%s names %q:\n%s", c.cmd, hidden, r.stdout)
			}
		}
	}
}

// debianPython is Debian's interpreter, which sees python3-sqlalchemy,
// python3-psycopg2 and python3-pymysql (another python3 on PATH may not).
func debianPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3"} {
		if out, err := exec.Command(p, "-c", "import sqlalchemy, psycopg2, pymysql").CombinedOutput(); err == nil {
			return p
		} else {
			t.Logf("%s: %s", p, out)
		}
	}
	t.Skip("python3-sqlalchemy, python3-psycopg2 and python3-pymysql are not installed (scripts/test.sh installs them)")
	return ""
}

// inspectSchema runs testdata/python/inspect_schema.py on url and decodes
// its JSON.
func inspectSchema(t *testing.T, python, url string, extra ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, append([]string{filepath.Join("testdata", "python", "inspect_schema.py"), url}, extra...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("inspect_schema.py %s: %v\n%s", url, err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &got); err != nil {
		t.Fatalf("inspect_schema.py output: %v\n%s", err, out)
	}
	return got
}

// policyViewPostgres creates a PostgreSQL database holding only what the
// integration policy shows (the demo schema without its unexposed columns,
// keys, indexes and tables) and returns its DSN.
func policyViewPostgres(t *testing.T) string {
	t.Helper()
	dsn := pgDatabase(t)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range []string{
		`DROP TABLE demo_meta, prescriptions`,
		`ALTER TABLE patients DROP CONSTRAINT patients_pkey, DROP COLUMN region`,
		`ALTER TABLE visits DROP COLUMN visit_id`,
		`DROP INDEX IF EXISTS visits_patient_id_idx`,
	} {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return dsn
}

// policyViewMariaDB is policyViewPostgres on MariaDB.
func policyViewMariaDB(t *testing.T) string {
	t.Helper()
	dsn := mysqlDatabase(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`DROP TABLE demo_meta, prescriptions`,
		`ALTER TABLE patients DROP PRIMARY KEY, DROP COLUMN region`,
		`ALTER TABLE visits DROP INDEX visits_patient_id, DROP COLUMN visit_id`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return dsn
}

// withoutDpproxySchema drops what only dpproxy shows (its own schema of
// views) from an inspector's answer.
func withoutDpproxySchema(got map[string]any) map[string]any {
	if schemas, ok := got["schemas"].([]any); ok {
		var kept []any
		for _, s := range schemas {
			if s != "dpproxy" {
				kept = append(kept, s)
			}
		}
		got["schemas"] = kept
	}
	return got
}

// A Python ORM's inspector over psycopg2 and over PyMySQL learns through
// dpproxy exactly what it learns from a real server holding the policy's
// view; a server-side cursor streams results; a parameterized DP
// aggregate runs.
func TestORMInspectorSeesThePolicyView(t *testing.T) {
	python := debianPython(t)
	stream := []string{"--stream", "SELECT clinic_id FROM clinics ORDER BY clinic_id LIMIT 5",
		"--aggregate", "SELECT sex, COUNT(*) FROM patients WHERE age >= :lo GROUP BY sex"}
	for _, b := range startCatalogBackends(t) {
		pg := inspectSchema(t, python, fmt.Sprintf("postgresql+psycopg2://analyst:analyst@%s/%s", b.proxy.addr, b.pgDB), stream...)
		my := inspectSchema(t, python, fmt.Sprintf("mysql+pymysql://analyst:analyst@%s/%s", b.proxy.mysqlAddress(t), b.mysqlDB), stream...)
		for name, got := range map[string]map[string]any{"psycopg2": pg, "pymysql": my} {
			tables, keys := "[clinics patients visits]", "map[clinics:[clinic_id] patients:[] visits:[]]"
			if b.name == "demo" {
				tables, keys = "[clinics patients prescriptions visits]", "map[clinics:[clinic_id] patients:[] prescriptions:[] visits:[]]"
			}
			if fmt.Sprint(got["tables"]) != tables {
				t.Errorf("%s %s: tables %v", b.name, name, got["tables"])
			}
			if fmt.Sprint(got["primary_keys"]) != keys {
				t.Errorf("%s %s: primary keys %v", b.name, name, got["primary_keys"])
			}
			if fmt.Sprint(got["stream_batches"]) != "[[[1] [2]] [[3] [4]] [[5]]]" {
				t.Errorf("%s %s: streamed %v", b.name, name, got["stream_batches"])
			}
			if fmt.Sprint(got["aggregate_rows"]) != "2" {
				t.Errorf("%s %s: aggregate rows %v", b.name, name, got["aggregate_rows"])
			}
			if fmt.Sprint(got["has_table"]) != "[true false]" {
				t.Errorf("%s %s: has_table %v", b.name, name, got["has_table"])
			}
		}
		delete(pg, "aggregate_rows")
		delete(my, "aggregate_rows")
		switch b.name {
		case "postgres":
			t.Run("real postgres", func(t *testing.T) {
				want := inspectSchema(t, python, "postgresql+psycopg2://"+strings.TrimPrefix(strings.Split(policyViewPostgres(t), "?")[0], "postgres://"), stream[:2]...)
				if g := withoutDpproxySchema(pg); !reflect.DeepEqual(g, want) {
					t.Errorf("psycopg2 through dpproxy:\n%v\nreal PostgreSQL with the policy's view:\n%v", g, want)
				}
			})
		case "mariadb":
			t.Run("real mariadb", func(t *testing.T) {
				cfg, _ := mysql.ParseDSN(policyViewMariaDB(t))
				want := inspectSchema(t, python, fmt.Sprintf("mysql+pymysql://%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName), stream[:2]...)
				want["schemas"] = []any{b.mysqlDB, "information_schema"}
				sort.Slice(want["schemas"], func(i, j int) bool {
					return fmt.Sprint(want["schemas"].([]any)[i]) < fmt.Sprint(want["schemas"].([]any)[j])
				})
				if g := withoutDpproxySchema(my); !reflect.DeepEqual(g, want) {
					t.Errorf("PyMySQL through dpproxy:\n%v\nreal MariaDB with the policy's view:\n%v", g, want)
				}
			})
		}
	}
}

// catalogJDBC runs testdata/java/CatalogJdbc.java with the driver jar.
func catalogJDBC(t *testing.T, jar, url, user, password, schema string) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("javac not installed")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("no JDBC driver at %s", jar)
	}
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-d", classes, filepath.Join("testdata", "java", "CatalogJdbc.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", jar+string(os.PathListSeparator)+classes, "CatalogJdbc", url, user, password, schema).CombinedOutput()
	if err != nil {
		t.Fatalf("CatalogJdbc %s: %v\n%s", url, err, out)
	}
	return string(out)
}

// JDBC DatabaseMetaData (PostgreSQL's and MariaDB's drivers) learns through
// dpproxy what it learns from a real server holding the policy's view.
func TestJDBCMetadataSeesThePolicyView(t *testing.T) {
	pgJar := "/usr/share/java/postgresql.jar"
	myJar := jdbcJar()
	for _, b := range startCatalogBackends(t) {
		gotPG := catalogJDBC(t, pgJar, "jdbc:postgresql://"+b.proxy.addr+"/"+b.pgDB, "analyst", "analyst", "public")
		gotMy := catalogJDBC(t, myJar, "jdbc:mariadb://"+b.proxy.mysqlAddress(t)+"/"+b.mysqlDB, "analyst", "analyst", b.mysqlDB)
		for name, got := range map[string]string{"pgjdbc": gotPG, "mariadb": gotMy} {
			for _, want := range []string{"table clinics TABLE", "table visits TABLE", "pk clinics.clinic_id seq=1"} {
				if !strings.Contains(got, want) {
					t.Errorf("%s %s lacks %q:\n%s", b.name, name, want, got)
				}
			}
			// The demo's policy exposes patients.region and visits.visit_id
			// (prescriptions join on it), the integration policy neither.
			hidden := []string{"prescription_id", "demo_meta"}
			if b.name != "demo" {
				hidden = append(hidden, "region", "visit_id")
			}
			for _, h := range hidden {
				if strings.Contains(got, h) {
					t.Errorf("%s %s names %s, which the policy does not expose:\n%s", b.name, name, h, got)
				}
			}
		}
		switch b.name {
		case "postgres":
			t.Run("real postgres", func(t *testing.T) {
				cfg, _ := pgx.ParseConfig(policyViewPostgres(t))
				want := catalogJDBC(t, pgJar, fmt.Sprintf("jdbc:postgresql://%s:%d/%s", cfg.Host, cfg.Port, cfg.Database), cfg.User, "x", "public")
				if gotPG != want {
					t.Errorf("pgjdbc through dpproxy:\n%s\nreal PostgreSQL with the policy's view:\n%s", gotPG, want)
				}
			})
		case "mariadb":
			t.Run("real mariadb", func(t *testing.T) {
				cfg, _ := mysql.ParseDSN(policyViewMariaDB(t))
				want := catalogJDBC(t, myJar, "jdbc:mariadb://"+cfg.Addr+"/"+cfg.DBName, cfg.User, "", cfg.DBName)
				want = strings.ReplaceAll(want, cfg.DBName, b.mysqlDB)
				if gotMy != want {
					t.Errorf("MariaDB Connector/J through dpproxy:\n%s\nreal MariaDB with the policy's view:\n%s", gotMy, want)
				}
			})
		}
	}
}

// A psycopg2 named cursor (DECLARE ... CURSOR / FETCH / CLOSE) over a DP
// aggregate: the answer is released and charged once, however it is
// fetched.
func TestPsycopg2NamedCursor(t *testing.T) {
	python := debianPython(t)
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	script := `
import sys, psycopg2
conn = psycopg2.connect(sys.argv[1])
cur = conn.cursor(name="dp_stream")
cur.itersize = 1
cur.execute("SELECT sex, COUNT(*) FROM patients GROUP BY sex ORDER BY sex")
first = cur.fetchmany(1)
rest = cur.fetchall()
cur.close()
conn.commit()
plain = conn.cursor()
plain.execute("SELECT epsilon_spent FROM dpproxy.budget")
print(len(first), len(rest), [r[0] for r in first + rest], plain.fetchone()[0])
`
	out, err := exec.Command(python, "-c", script, "postgresql://analyst:analyst@"+p.addr+"/demo").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s\nproxy log:\n%s", err, out, p.stderr.String())
	}
	fields := strings.Fields(strings.TrimSpace(string(out)))
	if len(fields) < 4 || fields[0] != "1" || fields[1] != "1" || !strings.Contains(string(out), "['F', 'M']") {
		t.Fatalf("named cursor: %s", out)
	}
	spent, err := strconv.ParseFloat(fields[len(fields)-1], 64)
	if err != nil || spent <= 0 || spent > 1.0001 {
		t.Errorf("spent %q: one DP query, charged once, expected", fields[len(fields)-1])
	}
	// The same statement again costs nothing more (the result cache).
	out2, err := exec.Command(python, "-c", script, "postgresql://analyst:analyst@"+p.addr+"/demo").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out2)
	}
	if f := strings.Fields(strings.TrimSpace(string(out2))); f[len(f)-1] != fields[len(fields)-1] {
		t.Errorf("the repeated cursor was charged again: %s then %s", out, out2)
	}
}

// What the virtual catalog does not support is refused with 0A000 (MySQL
// 1235) naming it, and the connection stays usable.
func TestCatalogUnsupportedKeepsConnection(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/demo?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for q, name := range map[string]string{
		`SELECT pg_catalog.pg_frobnicate(1)`:                    "pg_frobnicate",
		`SELECT * FROM pg_catalog.pg_nosuch`:                    "pg_nosuch",
		`SELECT relname FROM pg_class WHERE relname ~* relname`: "case-insensitive match",
	} {
		var n int
		err := conn.QueryRow(ctx, q).Scan(&n)
		if err == nil || !strings.Contains(err.Error(), "0A000") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", q, err)
		}
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'visits'").Scan(&n); err != nil || n != 1 {
			t.Errorf("after %s: %d %v", q, n, err)
		}
	}
	db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/demo?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var me *mysql.MySQLError
	if _, err := db.Exec("SELECT * FROM information_schema.NOSUCH"); !errors.As(err, &me) || me.Number != 1235 || !strings.Contains(me.Message, "NOSUCH") {
		t.Errorf("unknown information_schema view: %v", err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'demo'").Scan(&n); err != nil || n != 4 {
		t.Errorf("after the error: %d %v", n, err)
	}
}
