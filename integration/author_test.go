package integration

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// dpproxyCmd runs the dpproxy binary and returns its output and exit code.
func dpproxyCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// authorCase is one backend for the policy author's tools: its DSN as an
// administrator (who may write) and as a reader (SELECT only), the
// income that 60 % of patients have at most, and the share above it.
type authorCase struct {
	kind, adminDSN, readerDSN string
	p60                       int64
	above                     float64
}

// authorCheck runs `dpproxy init` as the reader, then `dpproxy check` on
// deliberately wrong policies: the administrator's role (writable), a
// missing column, a wrong type, a bound clipping 40 % of incomes.
func authorCheck(t *testing.T, c authorCase) {
	dir := t.TempDir()
	// init drafts a policy that loads and checks without errors.
	draftPath := filepath.Join(dir, "draft.yaml")
	_, stderr, code := dpproxyCmd(t, "init", "--dsn", c.readerDSN, "--public", "clinics", "--out", draftPath)
	if code != 0 || !strings.Contains(stderr, "password (shown once") {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	draft, err := os.ReadFile(draftPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: " + c.kind, `- name: "visits"`, `privacy_unit: "patient_id"`, "public_tables:\n  - \"clinics\""} {
		if !strings.Contains(string(draft), want) {
			t.Errorf("the draft lacks %q:\n%s", want, draft)
		}
	}
	out, _, code := dpproxyCmd(t, "check", "--config", draftPath)
	if code != 0 || !strings.Contains(out, "backend role: can only read") || !strings.Contains(out, "0 error(s)") {
		t.Errorf("check of the draft: exit %d\n%s", code, out)
	}
	if _, _, code := dpproxyCmd(t, "init", "--dsn", c.readerDSN, "--out", draftPath); code == 0 {
		t.Error("init overwrote an existing policy file")
	}

	// A policy right for the database, then wrong in four ways.
	write := func(dsn, tables string) string {
		path := filepath.Join(dir, fmt.Sprintf("policy%d.yaml", len(tables)))
		policy := "backend:\n  kind: " + c.kind + "\n  dsn: " + strconv.Quote(dsn) + "\nledger:\n  path: ledger.db\n" + fmt.Sprintf(analystYAML, 10.0) + tables
		if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	out, _, code = dpproxyCmd(t, "check", "--config", write(c.readerDSN, tablesYAML))
	if code != 0 || !strings.Contains(out, "0 error(s)") {
		t.Errorf("check of the test policy as the reader: exit %d\n%s", code, out)
	}
	out, _, code = dpproxyCmd(t, "check", "--config", write(c.adminDSN, tablesYAML))
	if code != 1 || !strings.Contains(out, "error   backend role: ") {
		t.Errorf("check as a role that can write: exit %d\n%s", code, out)
	}
	wrong := strings.NewReplacer(
		"      - {name: visit_date, type: date}\n", "      - {name: visit_date, type: date}\n      - {name: colour, type: text}\n",
		"{name: sex, type: text,", "{name: sex, type: int,",
	).Replace(tablesYAML)
	out, _, code = dpproxyCmd(t, "check", "--config", write(c.readerDSN, wrong))
	if code != 1 || !strings.Contains(out, "error   visits.colour: no such column in visits") || !strings.Contains(out, "error   patients.sex: the policy says int, the database has") {
		t.Errorf("check of a missing column and a wrong type: exit %d\n%s", code, out)
	}
	// The example policy of this backend checks clean once its dsn is
	// this database's reader.
	example, err := os.ReadFile(filepath.Join("..", "examples", map[string]string{"postgres": "postgres", "mysql": "mariadb"}[c.kind], "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(example), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  dsn: ") {
			lines[i] = "  dsn: " + strconv.Quote(c.readerDSN)
		}
	}
	examplePath := filepath.Join(dir, "example.yaml")
	if err := os.WriteFile(examplePath, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = dpproxyCmd(t, "check", "--config", examplePath)
	if code != 0 || !strings.Contains(out, "0 error(s)") {
		t.Errorf("check of examples/ for %s: exit %d\n%s", c.kind, code, out)
	}
	serveExample(t, examplePath)
	// Spelled in another case than the database's (found in review: the
	// data queries used the policy's spelling and failed on PostgreSQL).
	clipping := strings.Replace(tablesYAML, "{name: income, type: int, bounds: [0, 200000]}", fmt.Sprintf("{name: Income, type: int, bounds: [0, %d]}", c.p60), 1)
	out, _, code = dpproxyCmd(t, "check", "--config", write(c.readerDSN, clipping))
	want := fmt.Sprintf("warning patients.Income: bounds [0, %d] clip %.1f%% of its 10000 values", c.p60, 100*c.above)
	if code != 0 || !strings.Contains(out, want) || c.above < 0.38 || c.above > 0.42 {
		t.Errorf("check of a bound clipping %.1f%%: exit %d, want %q in\n%s", 100*c.above, code, want, out)
	}
}

func TestPolicyAuthorPostgres(t *testing.T) {
	admin := pgDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role := fmt.Sprintf("dp_reader_%d", os.Getpid())
	for _, s := range []string{
		"DROP ROLE IF EXISTS " + role,
		"CREATE ROLE " + role + " LOGIN PASSWORD 'reader'",
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			c.Exec(context.Background(), "DROP OWNED BY "+role)
			c.Exec(context.Background(), "DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	cfg, _ := pgx.ParseConfig(admin)
	c := authorCase{kind: "postgres", adminDSN: admin,
		readerDSN: fmt.Sprintf("postgres://%s:reader@%s:%d/%s?sslmode=disable", role, cfg.Host, cfg.Port, cfg.Database)}
	if err := conn.QueryRow(ctx, "SELECT percentile_disc(0.6) WITHIN GROUP (ORDER BY income) FROM patients").Scan(&c.p60); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT AVG(CASE WHEN income > $1 THEN 1.0 ELSE 0 END)::float8 FROM patients", c.p60).Scan(&c.above); err != nil {
		t.Fatal(err)
	}
	authorCheck(t, c)
	// Speed: an index for each GROUP BY column of visits is suggested
	// until there is one.
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	os.WriteFile(path, []byte("backend:\n  kind: postgres\n  dsn: "+strconv.Quote(c.readerDSN)+"\nledger:\n  path: ledger.db\n"+fmt.Sprintf(analystYAML, 10.0)+tablesYAML), 0o600)
	suggestion := `info    visits.diagnosis: queries grouped by diagnosis read each person's rows per diagnosis: an index makes them faster (about 25% at 2 M rows, after VACUUM): CREATE INDEX ON "visits" ("patient_id", "diagnosis") INCLUDE ("cost")`
	if out, _, code := dpproxyCmd(t, "check", "--config", path); code != 0 || !strings.Contains(out, suggestion) || !strings.Contains(out, "visits.clinic_id: queries grouped by clinic_id") {
		t.Errorf("check without the indexes: exit %d, want %q in\n%s", code, suggestion, out)
	}
	if _, err := conn.Exec(ctx, `CREATE INDEX ON visits (patient_id, diagnosis) INCLUDE (cost)`); err != nil {
		t.Fatal(err)
	}
	if out, _, code := dpproxyCmd(t, "check", "--config", path); code != 0 || strings.Contains(out, "visits.diagnosis: queries grouped") || !strings.Contains(out, "visits.clinic_id: queries grouped by clinic_id") {
		t.Errorf("check with an index on (patient_id, diagnosis): exit %d\n%s", code, out)
	}
	// With a total bound no larger than the per-group one, a person
	// column that may hold NULLs gets a suggestion to declare it NOT NULL.
	totalPath := filepath.Join(dir, "total.yaml")
	os.WriteFile(totalPath, []byte("backend:\n  kind: postgres\n  dsn: "+strconv.Quote(c.readerDSN)+"\nledger:\n  path: ledger.db\n"+fmt.Sprintf(analystYAML, 10.0)+
		strings.Replace(tablesYAML, "    max_rows_per_unit: 5\n", "    max_rows_per_unit: 5\n    max_total_rows_per_unit: 5\n", 1)), 0o600)
	notNull := `info    visits.patient_id: grouped queries bound only the people beyond max_total_rows_per_unit and sum the others from the rows when patient_id is declared NOT NULL`
	// And what the people beyond the bound cost.
	slower := "PostgreSQL's bounding query sums the other people from the rows and reads these people's rows a second time"
	if out, _, code := dpproxyCmd(t, "check", "--config", totalPath); code != 0 || strings.Contains(out, notNull) || !strings.Contains(out, slower) {
		t.Errorf("check with patient_id NOT NULL: exit %d, want no %q and %q in\n%s", code, notNull, slower, out)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE visits ALTER COLUMN patient_id DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if out, _, code := dpproxyCmd(t, "check", "--config", totalPath); code != 0 || !strings.Contains(out, notNull+` (about 40% faster at 2 M rows when few people are beyond it): ALTER TABLE "visits" ALTER COLUMN "patient_id" SET NOT NULL`) {
		t.Errorf("check with a nullable patient_id: exit %d, want %q in\n%s", code, notNull, out)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE visits ALTER COLUMN patient_id SET NOT NULL`); err != nil {
		t.Fatal(err)
	}
	// A reader granted one write is a writable role.
	if _, err := conn.Exec(ctx, "GRANT INSERT ON visits TO "+role); err != nil {
		t.Fatal(err)
	}
	out, _, code := dpproxyCmd(t, "check", "--config", path)
	if code != 1 || !strings.Contains(out, "error   backend role: can write to visits (INSERT)") {
		t.Errorf("check with INSERT on visits: exit %d\n%s", code, out)
	}
}

func TestPolicyAuthorMariaDB(t *testing.T) {
	admin := mysqlDatabase(t)
	cfg, err := mysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	user := fmt.Sprintf("dp_reader_%d", os.Getpid())
	for _, s := range []string{
		"DROP USER IF EXISTS '" + user + "'@'%'",
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'reader'",
		"GRANT SELECT ON `" + cfg.DBName + "`.* TO '" + user + "'@'%'",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() { db.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	reader := *cfg
	reader.User, reader.Passwd = user, "reader"
	c := authorCase{kind: "mysql", adminDSN: admin, readerDSN: reader.FormatDSN()}
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM patients").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT income FROM patients ORDER BY income LIMIT 1 OFFSET ?", n*6/10-1).Scan(&c.p60); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT AVG(CASE WHEN income > ? THEN 1.0 ELSE 0 END) FROM patients", c.p60).Scan(&c.above); err != nil {
		t.Fatal(err)
	}
	authorCheck(t, c)
	// Speed: a warning when the server's in-memory temporary tables are
	// smaller than the bounding queries' grouping needs.
	var tmp, heap int64
	if err := db.QueryRow("SELECT @@tmp_table_size, @@max_heap_table_size").Scan(&tmp, &heap); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(path, []byte("backend:\n  kind: mysql\n  dsn: "+strconv.Quote(c.readerDSN)+"\nledger:\n  path: ledger.db\n"+fmt.Sprintf(analystYAML, 10.0)+tablesYAML), 0o600)
	out, _, code := dpproxyCmd(t, "check", "--config", path)
	warned := strings.Contains(out, fmt.Sprintf("warning backend settings: tmp_table_size and max_heap_table_size allow %d MB", min(tmp, heap)>>20))
	if code != 0 || warned != (min(tmp, heap) < 256<<20) {
		t.Errorf("check with tmp_table_size %d, max_heap_table_size %d: exit %d\n%s", tmp, heap, code, out)
	}
	// With a total bound, an index on the person is suggested where the
	// table has none that starts with it.
	total := strings.Replace(tablesYAML, "max_rows_per_unit: 5", "max_rows_per_unit: 5\n    max_total_rows_per_unit: 8", 1)
	if total == tablesYAML {
		t.Fatal("the policy has no visits bound to extend")
	}
	os.WriteFile(path, []byte("backend:\n  kind: mysql\n  dsn: "+strconv.Quote(c.readerDSN)+"\nledger:\n  path: ledger.db\n"+fmt.Sprintf(analystYAML, 10.0)+total), 0o600)
	suggestion := "info    visits.patient_id: grouped queries with max_total_rows_per_unit count each person's rows"
	for _, indexed := range []bool{true, false} {
		if !indexed {
			if _, err := db.Exec("ALTER TABLE visits DROP INDEX visits_patient_id"); err != nil {
				t.Fatal(err)
			}
		}
		out, _, code := dpproxyCmd(t, "check", "--config", path)
		// The demo's patients have 13 visits on average: many above 8,
		// whose rows the bounding query reads twice on MariaDB.
		slower := strings.Contains(out, "max_total_rows_per_unit 8: ") && strings.Contains(out, "MariaDB's bounding query reads these people's rows a second time")
		if code != 0 || !slower || strings.Contains(out, suggestion) == indexed || !indexed && !strings.Contains(out, "ALTER TABLE `visits` ADD INDEX (`patient_id`)") {
			t.Errorf("check with a total bound, index on patient_id %v: exit %d\n%s", indexed, code, out)
		}
	}
}

// serveExample runs the walk-through's last steps on an example policy:
// serve it (free ports), then a first query as alice (password
// "change-me") with psql, and the admin listener's budget page as ops.
func serveExample(t *testing.T, path string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(text), "listen: 127.0.0.1:9187", "listen: 127.0.0.1:0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, "serve", "--config", path, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	r := psql(t, p, "alice", "change-me", "SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY 2 DESC LIMIT 3;\nSELECT epsilon_spent FROM dpproxy.budget;\n")
	out := lines(r.stdout)
	if r.err != nil || len(out) != 4 || out[3] != "0.25" {
		t.Errorf("the example's first query: %v %q\n%s", r.err, out, r.stderr)
	}
	if status, body := get(t, "http://"+p.adminAddress(t)+"/", "change-me"); status != 200 || !strings.Contains(body, `data-name="alice"`) {
		t.Errorf("the example's budget page: %d", status)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "audit", "dpproxy-audit.jsonl")); err != nil {
		t.Errorf("the example's audit log: %v", err)
	}
}
