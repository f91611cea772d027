package integration

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpproxy/dpproxy/demo"
)

// TestPassthroughPipelinedPostgres: sixteen clients at once, in the simple
// and the extended protocol, each asking for clinics by id through dpproxy
// in front of PostgreSQL: every answer is the clinic asked for (the
// statements, pipelined together on shared backend connections, are not
// crossed), and the metrics show they were combined several to a batch.
func TestPassthroughPipelinedPostgres(t *testing.T) {
	dsn := pgDatabase(t)
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	rows, err := direct.Query(ctx, "SELECT clinic_id, name || '/' || city FROM clinics")
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
	direct.Close(ctx)
	if len(want) != demo.NumClinics {
		t.Fatalf("%d clinics, want %d", len(want), demo.NumClinics)
	}

	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n  max_conns: 8\n  pipeline_lanes: 2\n"+adminYAML(t), 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")

	const clients, each = 16, 150
	var wg sync.WaitGroup
	for c := range clients {
		mode := "simple_protocol"
		if c%2 == 1 {
			mode = "cache_statement"
		}
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			for range each {
				id := 1 + rand.IntN(demo.NumClinics)
				var name, city string
				if err := conn.QueryRow(ctx, "SELECT name, city FROM clinics WHERE clinic_id = $1", id).Scan(&name, &city); err != nil {
					t.Errorf("%s: clinic %d: %v", mode, id, err)
					return
				}
				if got := name + "/" + city; got != want[id] {
					t.Errorf("%s: clinic %d: got %q, want %q", mode, id, got, want[id])
					return
				}
			}
		})
	}
	wg.Wait()

	checkPipelined(t, p.adminAddress(t), clients*each)
}

// checkPipelined reads the pipeline metrics from the admin listener at
// addr (user ops, password opspw) and checks that most of the sent
// statements were pipelined, several to a batch.
func checkPipelined(t *testing.T, addr string, sent int) {
	t.Helper()
	families := scrape(t, "http://"+addr) // operate_test.go
	pipelined := metricValue(families, "dpproxy_backend_pipelined_statements_total", nil)
	batches := metricValue(families, "dpproxy_backend_pipeline_batches_total", nil)
	t.Logf("%v of %d statements pipelined in %v batches", pipelined, sent, batches)
	if pipelined < float64(sent)/2 || pipelined > float64(sent) || batches <= 0 || pipelined/batches <= 1 {
		t.Errorf("%v statements pipelined in %v batches (%d sent): want most of them, several to a batch", pipelined, batches, sent)
	}
}
