package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

	"github.com/dpproxy/dpproxy/demo"
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
		// The joins issue's queries through the MySQL front end: every
		// city (a public key list) and both sexes, each near the demo's
		// truth (20 cities, 132,112 visits; a mean visit cost of 124 after
		// clamping to [0, 1000]).
		rows, err := db.QueryContext(ctx, "SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY c.city")
		if err != nil {
			t.Fatalf("%s: join with clinics: %v", params, err)
		}
		cities, total := 0, int64(0)
		for rows.Next() {
			var city string
			var n int64
			if err := rows.Scan(&city, &n); err != nil {
				t.Fatal(err)
			}
			cities++
			total += n
		}
		rows.Close()
		if cities != 20 || total < 125000 || total > 139000 {
			t.Errorf("%s: join with clinics: %d cities, %d visits", params, cities, total)
		}
		var avg float64
		if err := db.QueryRowContext(ctx, "WITH vp AS (SELECT v.cost, p.sex FROM visits v JOIN patients p USING (patient_id) WHERE p.sex = ?) SELECT AVG(cost) FROM vp", "F").Scan(&avg); err != nil {
			t.Fatalf("%s: CTE over the join on the unit: %v", params, err)
		}
		if avg < 100 || avg > 150 {
			t.Errorf("%s: mean visit cost of women = %v", params, avg)
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
	// With intervals on request, the answer's warning (its intervals) is
	// counted by the client and listed by SHOW WARNINGS.
	cmd.Stdin = strings.NewReader("status\nUSE demo\nSHOW TABLES;\nSELECT COUNT(*) FROM patients;\nSELECT sex, COUNT(*) FROM patients GROUP BY sex;\n" +
		"SET dpproxy.intervals = notice;\n\\W\nSELECT COUNT(*) FROM patients;\nSHOW WARNINGS;\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cli, err, out.String())
	}
	for _, want := range []string{"dpproxy", "clinics", "patients", "visits", "F\t", "M\t", "Note (Code 1105): dpproxy: 95 % confidence intervals", "Note\t1105\tdpproxy: 95 % confidence intervals"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", cli, want, out.String())
		}
	}
}

// node mysql2 (npm) runs a script of its own against the demo's MySQL
// listener: information_schema and SHOW discovery, DP aggregates as
// server-side prepared statements with parameters, a refused raw read
// (1142) and an unsupported information_schema view (1235) on the same
// connection, then good queries again.
func TestNodeMySQL2(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir, _ := filepath.Abs("testdata/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "mysql2")); err != nil {
		t.Skip("npm package mysql2 not installed: run npm install --prefix integration/testdata/node (scripts/test.sh does)")
	}
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	addr := p.mysqlAddress(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join(dir, "mysql_client.js"), "mysql://analyst:analyst@"+addr+"/demo").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node mysql2 client: %v\n%s\nproxy log:\n%s", err, ee.Stderr, p.stderr.String())
		}
		t.Fatal(err)
	}
	type mysqlErr struct {
		Errno    int    `json:"errno"`
		SQLState string `json:"sqlState"`
	}
	var report struct {
		Tables         []string  `json:"tables"`
		PatientColumns []string  `json:"patientColumns"`
		ShowTables     []string  `json:"showTables"`
		Adults         int64     `json:"adults"`
		CountType      int       `json:"countType"`
		Groups         []string  `json:"groups"`
		AvgIncome      []float64 `json:"avgIncome"`
		RawRead        mysqlErr  `json:"rawRead"`
		Routines       mysqlErr  `json:"routines"`
		AfterError     int64     `json:"afterError"`
		Seniors        int64     `json:"seniors"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	tables := []string{"clinics", "patients", "prescriptions", "visits"}
	if !slices.Equal(report.Tables, tables) || !slices.Equal(report.ShowTables, tables) {
		t.Errorf("tables %v, SHOW TABLES %v", report.Tables, report.ShowTables)
	}
	// The demo policy's columns of patients, in its order.
	// Types as the backend declares them: the demo's SQLite INTEGER is 64-bit.
	if want := []string{"patient_id:bigint", "age:bigint", "sex:text", "region:text", "income:bigint"}; !slices.Equal(report.PatientColumns, want) {
		t.Errorf("patients columns %v, want %v", report.PatientColumns, want)
	}
	// COUNT is a BIGINT (MYSQL_TYPE_LONGLONG = 8).
	if report.CountType != 8 || report.RawRead != (mysqlErr{1142, "42000"}) || report.Routines != (mysqlErr{1235, "42000"}) || report.AfterError != 5 {
		t.Errorf("report %+v", report)
	}
	facts := demo.DefaultFacts()
	if math.Abs(float64(report.Adults)-float64(facts.Patients)*0.8) > 1000 || report.Seniors <= 0 || report.Seniors >= report.Adults {
		t.Errorf("DP counts: adults %d, seniors %d (patients %d)", report.Adults, report.Seniors, facts.Patients)
	}
	if !slices.Equal(report.Groups, []string{"F", "M"}) || len(report.AvgIncome) != 2 || report.AvgIncome[0] < 0 || report.AvgIncome[0] > 200000 {
		t.Errorf("grouped AVG: %v %v", report.Groups, report.AvgIncome)
	}
}

// jdbcJar is the JDBC driver the Java test uses: $DPPROXY_TEST_JDBC_JAR, or
// MariaDB Connector/J from Debian's libmariadb-java.
func jdbcJar() string {
	if jar := os.Getenv("DPPROXY_TEST_JDBC_JAR"); jar != "" {
		return jar
	}
	return "/usr/share/java/mariadb-java-client.jar"
}

// A JDBC client (MariaDB Connector/J) against the demo's MySQL listener,
// with client-side and server-side prepared statements: its own connection
// setup (SET autocommit=1, sql_mode = concat(@@sql_mode, ...)), MySQL
// Connector/J's startup probe, DP aggregates through PreparedStatement, a
// refused raw read, information_schema, and a good query after the error.
func TestJDBC(t *testing.T) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("javac not installed (apt-get install default-jdk-headless)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not installed")
	}
	jar := jdbcJar()
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("no JDBC driver at %s (apt-get install libmariadb-java, or set DPPROXY_TEST_JDBC_JAR)", jar)
	}
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-d", classes, filepath.Join("testdata", "java", "DpproxyJdbc.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	p := startProxy(t, "demo", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0")
	addr := p.mysqlAddress(t)
	want := countPatients(func(p demo.Patient) bool { return p.Age >= 18 && p.Sex == "F" })
	for _, params := range []string{"useServerPrepStmts=false", "useServerPrepStmts=true"} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		out, err := exec.CommandContext(ctx, java, "-cp", jar+string(os.PathListSeparator)+classes, "DpproxyJdbc",
			"jdbc:mariadb://"+addr+"/demo?connectTimeout=10000&"+params, "analyst", "analyst").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: java: %v\n%s\nproxy log:\n%s", params, err, out, p.stderr.String())
		}
		got := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				got[k] = v
			}
		}
		for k, v := range map[string]string{
			"server":                         "8.0.36-dpproxy",
			"probe.auto_increment_increment": "1",
			"probe.max_allowed_packet":       "1048576", // listen.max_message_size
			"probe.columns":                  "19",
			"groups":                         "F:positive M:positive",
			"rawRead":                        "1142/42000",
			"tables":                         "clinics patients prescriptions visits",
			"afterError":                     "5",
		} {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q\n%s", params, k, got[k], v, out)
			}
		}
		n, err := strconv.ParseInt(got["adultWomen"], 10, 64)
		if err != nil || math.Abs(float64(n-want)) > 200 {
			t.Errorf("%s: adult women %q, truth %d", params, got["adultWomen"], want)
		}
	}
}
