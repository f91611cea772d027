package integration

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The demo serves MySQL clients too: go-sql-driver (both protocols) and
// the mariadb/mysql CLI get DP answers, session answers and ERR packets.
func TestDemoMySQLFrontEnd(t *testing.T) {
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	addr := p.mysqlAddress(t)
	if !p.waitStdout("mysql -h 127.0.0.1 -P ") {
		t.Errorf("the demo does not print the mysql command:\n%s", p.stdout.String())
	}
	ctx := context.Background()
	for _, params := range []string{"interpolateParams=false", "interpolateParams=true"} {
		db, err := sql.Open("mysql", "analyst:analyst@tcp("+addr+")/demo?timeout=10s&"+params)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM patients WHERE age >= ?", 18).Scan(&n); err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		if n < 5000 || n > 11000 {
			t.Errorf("%s: COUNT = %d", params, n)
		}
		_, err = db.ExecContext(ctx, "SELECT * FROM patients")
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			t.Errorf("%s: SELECT * FROM patients: %v, want an ERR packet", params, err)
		}
	}
	bad, _ := sql.Open("mysql", "analyst:wrong@tcp("+addr+")/demo?timeout=10s")
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("wrong password: %v, want 1045", err)
	}

	cli, err := exec.LookPath("mariadb")
	if err != nil {
		if cli, err = exec.LookPath("mysql"); err != nil {
			t.Skip("no mariadb or mysql client installed")
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, cli, "--no-defaults", "-h", host, "-P", port, "-u", "analyst", "-panalyst", "demo")
	cmd.Stdin = strings.NewReader("status\nUSE demo\nSHOW TABLES;\nSELECT COUNT(*) FROM patients;\nSELECT sex, COUNT(*) FROM patients GROUP BY sex;\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cli, err, out.String())
	}
	for _, want := range []string{"dpproxy", "clinics", "patients", "visits", "F\t", "M\t"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", cli, want, out.String())
		}
	}
}
