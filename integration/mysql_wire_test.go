package integration

import (
	"context"
	"database/sql"
	"net"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Public-table rows of wire-safe types (integers, character strings) reach
// MySQL clients as text-protocol rows built from the driver's own text,
// without each value decoded and printed again; other types are decoded.
// Every client must get exactly what MariaDB gives it directly: the text
// protocol (COM_QUERY, with and without interpolated parameters), the
// binary protocol (prepared statements, whose rows are encoded from
// decoded values), NULLs, strings of every length encoding, a result cap,
// and the mariadb CLI.
func TestMySQLPublicRowsAsSent(t *testing.T) {
	dsn := mysqlDatabase(t)
	ctx := context.Background()
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	for _, s := range []string{
		`CREATE TABLE wire_types (id INT, small SMALLINT, big BIGINT, uns INT UNSIGNED, label VARCHAR(10), note TEXT, code CHAR(3), kind ENUM('a','bc'), price DECIMAL(10,2), ratio DOUBLE, day DATE, blob_col VARBINARY(4))`,
		`INSERT INTO wire_types VALUES
		 (1, -3, 9007199254740993, 4294967295, 'a', 'two words', 'x', 'bc', 12.50, 0.1, '2024-02-29', X'00FF'),
		 (2, 32767, -9223372036854775808, 0, '', CONCAT('tab', CHAR(9), 'here ', REPEAT('é', 200)), 'yz', 'a', -0.001, 1e300, '1999-12-31', ''),
		 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	} {
		if _, err := direct.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	policy := writeMySQLPolicy(t, "listen:\n  max_result_rows: 3\nbackend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n", 100)
	addPublicTable(t, policy, "wire_types")
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	addr := p.mysqlAddress(t)

	const safe = "SELECT id, small, big, uns, label, note, code, kind FROM wire_types ORDER BY id"
	read := func(db *sql.DB, q string, args ...any) [][]*string {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]*string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make([]*string, len(cols))
			for i, v := range vals {
				if v.Valid {
					s := v.String
					row[i] = &s
				}
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	show := func(rows [][]*string) string {
		var b strings.Builder
		for _, r := range rows {
			for _, v := range r {
				if v == nil {
					b.WriteString("NULL|")
				} else {
					b.WriteString(strconv.Quote(*v) + "|")
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	for _, params := range []string{"", "interpolateParams=true"} {
		proxied, err := sql.Open("mysql", "analyst:analyst@tcp("+addr+")/"+cfg.DBName+"?"+params)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := sql.Open("mysql", dsn+"&"+params)
		if !strings.Contains(dsn, "?") {
			plain, err = sql.Open("mysql", dsn+"?"+params)
		}
		if err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ { // the second run is memoized
			// No parameter: the text protocol.
			if got, want := read(proxied, safe), read(plain, safe); !reflect.DeepEqual(got, want) {
				t.Errorf("%q, run %d, %s:\n got %s\nwant %s", params, run, safe, show(got), show(want))
			}
			// A parameter: the binary protocol without interpolateParams
			// (decoded rows), the text protocol with it.
			q := "SELECT id, label, note FROM wire_types WHERE id >= ? ORDER BY id"
			if got, want := read(proxied, q, 2), read(plain, q, 2); !reflect.DeepEqual(got, want) {
				t.Errorf("%q, run %d, %s:\n got %s\nwant %s", params, run, q, show(got), show(want))
			}
			// Decoded types: the same rows, as many.
			if got := read(proxied, "SELECT id, price, day, blob_col FROM wire_types ORDER BY id"); len(got) != 3 || got[2][1] != nil || *got[0][1] != "12.50" || *got[0][2] != "2024-02-29" {
				t.Errorf("%q, run %d: decoded columns %s", params, run, show(got))
			}
		}
		// Over the result cap (3 rows): refused, and the connection goes on.
		rows, err := proxied.QueryContext(ctx, "SELECT a.id FROM wire_types AS a, wire_types AS b")
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "max_result_rows") {
			t.Errorf("%q: 9 rows at a cap of 3: %v", params, err)
		}
		if got := read(proxied, "SELECT id FROM wire_types WHERE id = 2"); len(got) != 1 || *got[0][0] != "2" {
			t.Errorf("%q: after the refusal: %s", params, show(got))
		}
		proxied.Close()
		plain.Close()
	}

	// The mariadb CLI, through dpproxy and directly.
	script := safe + ";\n"
	got := mysqlCLI(t, addr, cfg.DBName, script)
	host, port, _ := net.SplitHostPort(cfg.Addr)
	args := []string{"--no-defaults", "-h", host, "-P", port, "-u", cfg.User, "--batch", "--skip-column-names"}
	if cfg.Passwd != "" {
		args = append(args, "-p"+cfg.Passwd)
	}
	cli, err := exec.LookPath("mariadb")
	if err != nil {
		cli = "mysql"
	}
	cmd := exec.Command(cli, append(args, cfg.DBName)...)
	cmd.Stdin = strings.NewReader(script)
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s directly: %v", cli, err)
	}
	if got != string(want) {
		t.Errorf("mariadb through dpproxy:\n%s\ndirectly:\n%s", got, want)
	}
}
