package integration

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dpproxy/dpproxy/demo"
)

// TestPassthroughPipelinedMariaDB: sixteen go-sql-driver clients at once
// through dpproxy's MySQL front end in front of MariaDB, half in the text
// protocol (parameters interpolated by the driver) and half in the binary
// protocol (prepare, execute, close), asking for clinics by id (three
// ways), for the clinic after an id and by name: every answer is the one
// asked for (the statements, sent back to back on shared backend
// connections with their parameters as literals, are not crossed), and
// the metrics show they were combined several to a batch, lookups by id
// answered together by one statement listing their ids in either
// protocol, and most of the other statements by UNION ALLs.
func TestPassthroughPipelinedMariaDB(t *testing.T) {
	dsn := mysqlDatabase(t)
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	want := map[int]string{}
	rows, err := direct.QueryContext(ctx, "SELECT clinic_id, CONCAT(name, '/', city) FROM clinics")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		want[id] = s
	}
	if err := rows.Err(); err != nil || len(want) != demo.NumClinics {
		t.Fatalf("%d clinics (%v), want %d", len(want), err, demo.NumClinics)
	}

	policy := writeMySQLPolicy(t, "backend:\n  kind: mysql\n  dsn: "+strconv.Quote(dsn)+"\n  max_conns: 8\n  pipeline_lanes: 2\n"+adminYAML(t), 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	addr, admin := p.mysqlAddress(t), p.adminAddress(t)

	// The text protocol's clients first, then the binary protocol's:
	// lookups by key are answered together in both (their key a literal,
	// then a parameter).
	const clients, each = 16, 75
	lookups := 0.0
	for _, protocol := range []string{"text", "binary"} {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				db, err := sql.Open("mysql", "analyst:analyst@tcp("+addr+")/"+cfg.DBName+"?interpolateParams="+strconv.FormatBool(protocol == "text"))
				if err != nil {
					t.Error(err)
					return
				}
				defer db.Close()
				db.SetMaxOpenConns(1)
				for i := range each {
					id := 1 + rand.IntN(demo.NumClinics)
					var name, city string
					var other int
					var err error
					// The lookup in the forms the analysis answers
					// together (its columns, all of them, a table's
					// with an alias and an index hint).
					switch i % 3 {
					case 0:
						err = db.QueryRowContext(ctx, "SELECT name, city FROM clinics WHERE clinic_id = ?", id).Scan(&name, &city)
					case 1:
						err = db.QueryRowContext(ctx, "SELECT * FROM clinics WHERE clinic_id = ?", id).Scan(&other, &name, &city)
					default:
						err = db.QueryRowContext(ctx, "SELECT c.* FROM clinics AS c USE INDEX (PRIMARY) WHERE ? = c.clinic_id", id).Scan(&other, &name, &city)
					}
					if err != nil {
						t.Errorf("%s: clinic %d: %v", protocol, id, err)
						return
					}
					if got := name + "/" + city; got != want[id] || i%3 != 0 && other != id {
						t.Errorf("%s: clinic %d: got %d %q, want %q", protocol, id, other, got, want[id])
						return
					}
					// A statement of one shape that is no lookup (a
					// LIMIT): answered by UNION ALLs.
					var next int
					if err := db.QueryRowContext(ctx, "SELECT clinic_id FROM clinics WHERE clinic_id > ? LIMIT 1", id-1).Scan(&next); err != nil || next != id {
						t.Errorf("%s: the clinic after %d: %d, %v", protocol, id-1, next, err)
						return
					}
					if i%10 == 0 {
						// A string argument, quotes and all.
						var n int
						if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM clinics WHERE name = ? AND city <> ?", name, `it's "x" \`).Scan(&n); err != nil || n < 1 {
							t.Errorf("%s: clinics named %q: %d, %v", protocol, name, n, err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		total := metricValue(scrape(t, "http://"+admin), "dpproxy_backend_key_lookups_total", nil)
		t.Logf("%s protocol: %v lookups by key answered together", protocol, total-lookups)
		if total-lookups < clients*each/3 {
			t.Errorf("%s protocol: %v of %d lookups by key answered together, want a third or more", protocol, total-lookups, clients*each)
		}
		lookups = total
	}

	checkPipelined(t, admin, 2*clients*each*21/10) // pipeline_test.go
	unioned := metricValue(scrape(t, "http://"+admin), "dpproxy_backend_unioned_statements_total", nil)
	t.Logf("%v statements answered by a UNION ALL", unioned)
	if unioned < clients*each/2 {
		t.Errorf("%v of %d statements that are no lookup answered by a UNION ALL, want most of them", unioned, 2*clients*each)
	}
}
