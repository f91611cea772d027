package integration

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpproxy/dpproxy/auth"
)

// TestPlanTemplatesPostgres: eight pgx clients, half in the simple protocol
// and half in the extended one (texts without parameters), each asking
// through dpproxy in front of PostgreSQL how many patients have an id
// below a bound, a new text each time. After the first, the queries are
// planned from their shape's template (the metric says so), each answer
// is its own query's (within 30 noise scales of the true count, where a
// neighbouring bound's count is 200 away), and each query is charged its
// ε.
func TestPlanTemplatesPostgres(t *testing.T) {
	dsn := pgDatabase(t)
	ctx := context.Background()
	v, err := auth.NewSCRAMVerifier("opspw")
	if err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t, "backend:\n  kind: postgres\n  dsn: "+strconv.Quote(dsn)+"\n  max_conns: 4\n"+
		"admin:\n  listen: 127.0.0.1:0\n  user: ops\n  password:\n    scram_sha_256: "+strconv.Quote(v.String())+"\n", 1e6)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	m := adminListening.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no admin listening line:\n%s", p.stderr.String())
	}
	const clients, each = 8, 40
	var seq atomic.Int64
	seq.Store(1_000_000)
	var wg sync.WaitGroup
	for c := range clients {
		mode := "simple_protocol"
		if c%2 == 1 {
			mode = "exec"
		}
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			direct, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer direct.Close(ctx)
			for range each {
				bound := 200 * (1 + rand.IntN(40))
				var got float64
				// Each text new (patient_id <> a number used once): no
				// answer comes from the result cache.
				sql := "SELECT COUNT(*) FROM patients WHERE patient_id < " + strconv.Itoa(bound) + " AND patient_id <> " + strconv.FormatInt(seq.Add(1), 10)
				if err := conn.QueryRow(ctx, sql).Scan(&got); err != nil {
					t.Errorf("%s: %s: %v", mode, sql, err)
					return
				}
				var want float64
				if err := direct.QueryRow(ctx, sql).Scan(&want); err != nil {
					t.Error(err)
					return
				}
				// ε = 0.1, sensitivity 1: the noise's scale is 10.
				if math.Abs(got-want) > 300 {
					t.Errorf("%s: %s: %v, the true count is %v", mode, sql, got, want)
				}
			}
		})
	}
	wg.Wait()

	families := scrape(t, "http://"+m[1])
	hits := metricValue(families, "dpproxy_plan_template_hits_total", nil)
	charged := metricValue(families, "dpproxy_epsilon_charged_total", map[string]string{"analyst": "analyst"})
	t.Logf("%v of %d queries planned from a template", hits, clients*each)
	// The extended protocol's queries use the template twice (to
	// describe and to run).
	if uses := clients * each * 3 / 2; hits < float64(uses)*0.9 {
		t.Errorf("%v of %d plannings from a template, want nearly all", hits, uses)
	}
	if math.Abs(charged-0.1*clients*each) > 1e-9*clients*each {
		t.Errorf("charged ε = %v, want 0.1 × %d queries", charged, clients*each)
	}
}
