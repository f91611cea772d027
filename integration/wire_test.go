package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Public-table rows of wire-safe types reach PostgreSQL clients as the
// backend's own DataRow bytes; other types are decoded and re-encoded. Both
// must give every client exactly what the database gives it directly: the
// simple protocol, the extended protocol with text and with binary
// results, a cursor, NULLs, and a result cap.
func TestPublicRowsForwardedAsTheDatabaseSendsThem(t *testing.T) {
	dsn := pgDatabase(t)
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	if _, err := direct.Exec(ctx, `CREATE TABLE wire_types (id int, flag bool, small smallint, big bigint, label varchar(10), note text, code char(3), price numeric, ratio float8, day date);
INSERT INTO wire_types VALUES
 (1, true, -3, 9007199254740993, 'a', 'two words', 'x', 12.50, 0.1, '2024-02-29'),
 (2, false, 32767, -9223372036854775808, '', E'tab\there', 'yz', -0.001, 1e300, '1999-12-31'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "listen:\n  max_result_rows: 3\nbackend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	addPublicTable(t, policy, "wire_types")
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")

	queries := []string{
		"SELECT id, flag, small, big, label, note, code FROM wire_types ORDER BY id", // wire-safe: forwarded
		"SELECT * FROM wire_types ORDER BY id",                                       // numeric, float, date: decoded
		"SELECT clinic_id, name FROM clinics WHERE clinic_id = 3",
	}
	read := func(conn *pgx.Conn, sql string, args ...any) [][]any {
		t.Helper()
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}
	for _, mode := range []string{"simple_protocol", "exec", "cache_describe"} {
		proxied, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := pgx.Connect(ctx, dsn+"&default_query_exec_mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			for run := 0; run < 2; run++ { // the second run is memoized and prepared on the backend
				got, want := read(proxied, q), read(plain, q)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s (run %d):\n got %v\nwant %v", mode, q, run, got, want)
				}
			}
		}
		// Text results of every column (pgx asks for text with QueryResultFormats).
		textQ := queries[0]
		got := read(proxied, textQ, pgx.QueryResultFormats{pgx.TextFormatCode})
		want := read(plain, textQ, pgx.QueryResultFormats{pgx.TextFormatCode})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s, text results:\n got %v\nwant %v", mode, got, want)
		}
		// A parameter, in both protocols.
		if got, want := read(proxied, "SELECT id, label FROM wire_types WHERE id = $1", 2), read(plain, "SELECT id, label FROM wire_types WHERE id = $1", 2); !reflect.DeepEqual(got, want) {
			t.Errorf("%s, with a parameter:\n got %v\nwant %v", mode, got, want)
		}
		// Over the result cap (3 rows): refused, and the connection goes on.
		rows, err := proxied.Query(ctx, "SELECT a.id FROM wire_types AS a, wire_types AS b")
		if err == nil {
			for rows.Next() {
			}
			rows.Close()
			err = rows.Err()
		}
		if err == nil || !strings.Contains(err.Error(), "max_result_rows") {
			t.Errorf("%s: 9 rows at a cap of 3: %v", mode, err)
		}
		if got := read(proxied, queries[2]); len(got) != 1 {
			t.Errorf("%s: after the refusal: %v", mode, got)
		}
		proxied.Close(ctx)
		plain.Close(ctx)
	}

	// psql (simple protocol, text) and a cursor, compared with psql directly.
	script := "SELECT id, flag, small, big, label, note, code FROM wire_types ORDER BY id;\nBEGIN;\nDECLARE c CURSOR FOR SELECT id, label FROM wire_types ORDER BY id;\nFETCH 2 FROM c;\nFETCH 2 FROM c;\nCOMMIT;\n"
	r := psql(t, p, "analyst", "analyst", script)
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "s.sql")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	wantOut := runPsqlDirect(t, dsn, scriptPath)
	if r.stdout != wantOut {
		t.Errorf("psql through dpproxy:\n%s\ndirectly:\n%s\nstderr %s", r.stdout, wantOut, r.stderr)
	}
}

// addPublicTable adds table to the public tables of the policy file
// written by writePolicy or writeMySQLPolicy.
func addPublicTable(t *testing.T, policy, table string) {
	t.Helper()
	data, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	const list = "public_tables:\n  - clinics\n"
	if !strings.Contains(string(data), list) {
		t.Fatalf("policy %s has no public_tables list to add %s to", policy, table)
	}
	if err := os.WriteFile(policy, []byte(strings.Replace(string(data), list, list+"  - "+table+"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runPsqlDirect runs a psql script against dsn with the flags psql() uses.
func runPsqlDirect(t *testing.T, dsn, path string) string {
	t.Helper()
	out, err := exec.Command("psql", "-X", "-A", "-t", "-v", "VERBOSITY=verbose", "-f", path, dsn).Output()
	if err != nil {
		t.Fatalf("psql directly: %v", err)
	}
	return string(out)
}
