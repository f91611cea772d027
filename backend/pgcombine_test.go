package backend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpproxy/dpproxy/config"
)

// openCombinedT opens a Postgres whose short statements go through
// a combiner of the given lanes.
func openCombinedT(t *testing.T, dsn string, maxConns, lanes int) *Postgres {
	t.Helper()
	p := openPostgresT(t, dsn, maxConns)
	p.setPipelineLanes(lanes)
	return p
}

// dataRowTexts reads a DataRow body's values (NULL as "<null>").
func dataRowTexts(t *testing.T, body []byte) []string {
	t.Helper()
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	out := make([]string, n)
	for i := range out {
		size := int32(binary.BigEndian.Uint32(body))
		body = body[4:]
		if size < 0 {
			out[i] = "<null>"
			continue
		}
		out[i] = string(body[:size])
		body = body[size:]
	}
	return out
}

// TestCombinerAnswersEachCaller: many callers at once on two lanes; every
// caller gets its own answer, errors stay with the statement that caused
// them, and statements were sent several to a batch.
func TestCombinerAnswersEachCaller(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 4, 2)
	p.combiner.holdoff = time.Minute // every statement waits for a lane
	p.combiner.shorterThan = time.Minute
	const callers, each = 24, 40
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				n := g*1000 + i
				ctx := context.Background()
				if i%5 == 4 {
					// Division by zero for every fifth: an error of its own.
					_, err := p.QueryPostgresText(ctx, `SELECT 1 / $1::int`, int64(0))
					var pe *pgconn.PgError
					if !errors.As(err, &pe) || pe.Code != "22012" {
						t.Errorf("caller %d: division by zero gave %v", g, err)
						return
					}
					continue
				}
				sql := `SELECT $1::int8 * 2, 'x' || $1::text`
				if i%3 == 0 {
					sql = `SELECT ` + strconv.Itoa(n) + `::int8 * 2, 'x' || ` + strconv.Itoa(n) // a one-off text
				}
				res, err := p.QueryPostgresText(ctx, sql, argsFor(sql, n)...)
				if err != nil {
					t.Errorf("caller %d: %v", g, err)
					return
				}
				if len(res.PostgresText) != 1 {
					t.Errorf("caller %d: %d rows", g, len(res.PostgresText))
					return
				}
				got := dataRowTexts(t, res.PostgresText[0])
				if want := []string{strconv.Itoa(2 * n), "x" + strconv.Itoa(n)}; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("caller %d: got %q, want %q", g, got, want)
				}
			}
		})
	}
	wg.Wait()
	// The one-off texts ran alone, as did each repeated text the first time.
	batches, stmts := p.combiner.batches.Load(), p.combiner.statements.Load()
	if stmts < callers*each/2 || stmts > callers*each {
		t.Errorf("%d of %d statements went through the combiner", stmts, callers*each)
	}
	if batches >= stmts {
		t.Errorf("%d batches for %d statements: nothing was combined", batches, stmts)
	}
	t.Logf("%d statements in %d batches", stmts, batches)
	if n := p.pool.idleCount(); n > 4 {
		t.Errorf("%d idle connections, want at most 4", n)
	}
}

func argsFor(sql string, n int) []any {
	if sql == `SELECT $1::int8 * 2, 'x' || $1::text` {
		return []any{int64(n)}
	}
	return nil
}

// TestCombinerPreparedStatements: a text seen before runs as a statement
// prepared on the connection; a table change under it is answered (the
// statement prepared again), and statements beyond the connection's bound
// are closed on the server.
func TestCombinerPreparedStatements(t *testing.T) {
	dsn := pgDSN(t)
	schema := pgSchema(t, dsn)
	p := openCombinedT(t, dsn, 1, 1)
	p.keepPrepared = 2
	p.combiner.shorterThan = time.Minute // however busy the machine
	ctx := context.Background()
	q := `SELECT * FROM ` + schema + `.t WHERE id = $1`
	for i := range 3 {
		res, err := p.QueryPostgresText(ctx, q, int64(1))
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if len(res.Columns) != 4 {
			t.Fatalf("run %d: columns %#v", i, res.Columns)
		}
	}
	// The third run went with the description the second's preparation
	// gave (no Describe of its own).
	if prep, ok := p.pool.idle[0].pipeline.prepared.Peek(q); !ok || prep.shape == nil ||
		prep.name != "dpproxy_c1" || len(prep.shape.cols) != 4 {
		t.Errorf("the prepared text's description: %+v", prep)
	}
	looks := 0
	preparedNames := func() []string {
		t.Helper()
		// A text of its own each time, so that it runs alone rather than
		// being combined (and prepared) itself.
		looks++
		res, err := p.Query(ctx, `SELECT name FROM pg_prepared_statements WHERE name LIKE 'dpproxy_c%' AND `+strconv.Itoa(looks)+` > 0 ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range res.Values {
			names = append(names, r[0].(string))
		}
		return names
	}
	if got := preparedNames(); fmt.Sprint(got) != "[dpproxy_c1]" {
		t.Errorf("prepared for batches: %q, want [dpproxy_c1]", got)
	}

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `ALTER TABLE `+schema+`.t ADD COLUMN w int DEFAULT 7`); err != nil {
		t.Fatal(err)
	}
	res, err := p.QueryPostgresText(ctx, q, int64(1))
	if err != nil {
		t.Fatalf("after ALTER TABLE: %v", err)
	}
	if len(res.Columns) != 5 {
		t.Errorf("after ALTER TABLE: columns %#v", res.Columns)
	}

	// Three more texts, each twice, at a bound of two per connection.
	for i := range 3 {
		other := q + ` AND ` + strconv.Itoa(i) + ` = ` + strconv.Itoa(i)
		for range 2 {
			if _, err := p.QueryPostgresText(ctx, other, int64(2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 2 { // the second batch closes what the first evicted
		if _, err := p.QueryPostgresText(ctx, q, int64(1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := preparedNames(); len(got) > 2 {
		t.Errorf("prepared for batches: %q, want at most 2", got)
	}
}

// TestCombinerCallerGivesUp: a caller whose context ends gets its error at
// once; the others in its batch get their answers; a batch whose callers
// have all gone is canceled on the server.
func TestCombinerCallerGivesUp(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 2, 1)
	ctx := context.Background()

	// A slow leader holds the lane; two callers wait behind it, one of
	// which gives up.
	c := p.combiner
	c.holdoff = time.Minute // no spare lane: the callers wait
	slowDone := make(chan error, 1)
	go func() {
		_, _, err := c.run(ctx, `SELECT pg_sleep(0.3)::text`, nil, true)
		slowDone <- err
	}()
	time.Sleep(50 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.run(short, `SELECT 1`, nil, true)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 200*time.Millisecond {
		t.Errorf("a caller that gave up after 20 ms: %v after %v", err, time.Since(start))
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a caller that gave up before its statement was sent: %v, want the context's error alone (the client canceled; not the backend unavailable)", err)
	}
	if err := <-slowDone; err != nil {
		t.Errorf("the slow statement: %v", err)
	}

	// Every caller gone: the server stops the statement.
	gone, cancelGone := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelGone()
	start = time.Now()
	_, _, err = c.run(gone, `SELECT pg_sleep(5)::text`, nil, true)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a 5 s statement whose caller left after 100 ms: %v after %v", err, time.Since(start))
	}
	if _, _, err := c.run(ctx, `SELECT 1`, nil, true); err != nil {
		t.Errorf("after a canceled batch: %v", err)
	}
}

// TestCombinerHoldoff: when every lane has gone longer than the holdoff
// without finishing a batch, a new statement opens a spare lane instead of
// waiting behind the slow one, still in a batch; when the spare lanes are
// held too, it runs alone.
func TestCombinerHoldoff(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 3, 1)
	p.combiner.shorterThan = time.Minute
	ctx := context.Background()
	fast := `SELECT 42`
	if _, err := p.QueryPostgresText(ctx, fast); err != nil { // seen, short: combined from now on
		t.Fatal(err)
	}
	var held sync.WaitGroup
	hold := func() {
		held.Add(1)
		go func() {
			defer held.Done()
			if _, _, err := p.combiner.run(ctx, `SELECT pg_sleep(0.5)::text`, nil, true); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	timedFast := func(what string) {
		t.Helper()
		start := time.Now()
		res, err := p.QueryPostgresText(ctx, fast)
		if err != nil || len(res.PostgresText) != 1 {
			t.Fatalf("SELECT 42: %v %#v", err, res)
		}
		if waited := time.Since(start); waited > 300*time.Millisecond {
			t.Errorf("%s: a short statement waited %v behind a 0.5 s one", what, waited)
		}
	}
	hold() // the lane
	timedFast("lane held")
	if got := p.combiner.statements.Load(); got != 2 {
		t.Errorf("with the lane stalled: %d statements combined, want 2 (the short one on a spare lane)", got)
	}
	held.Wait()
	hold() // the lane
	hold() // the spare lane
	timedFast("lane and spare lane held")
	if got := p.combiner.statements.Load(); got != 4 {
		t.Errorf("with every lane and spare lane held: %d statements combined, want 4 (the short one alone)", got)
	}
	held.Wait()
}

// TestCombinerResultLimit: a result over the cap fails alone; the next
// statement on the lane is answered.
func TestCombinerResultLimit(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 1, 1)
	ctx := context.Background()
	c := p.combiner
	_, _, err := c.run(WithResultLimit(ctx, ResultLimit{Rows: 10}), `SELECT g FROM generate_series(1, 1000) g`, nil, true)
	var tl *ResultTooLargeError
	if !errors.As(err, &tl) || !tl.Rows {
		t.Errorf("1000 rows at a cap of 10: %v", err)
	}
	res, _, err := c.run(ctx, `SELECT count(*) FROM generate_series(1, 1000)`, nil, true)
	if err != nil || len(res.PostgresText) != 1 || dataRowTexts(t, res.PostgresText[0])[0] != "1000" {
		t.Errorf("the next statement: %v %#v", err, res)
	}
}

// TestCombinerOnlyShortSeenTexts: a text runs alone the first time and is
// combined from then on while its runs stay short; a text whose last run
// was long always runs alone.
func TestCombinerOnlyShortSeenTexts(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 2, 1)
	p.combiner.shorterThan = 50 * time.Millisecond
	ctx := context.Background()
	combined := func() int64 { return p.combiner.statements.Load() }
	for i, want := range []int64{0, 1, 2} {
		if _, err := p.QueryPostgresText(ctx, `SELECT 7`); err != nil {
			t.Fatal(err)
		}
		if got := combined(); got != want {
			t.Errorf("run %d of a short text: %d combined, want %d", i+1, got, want)
		}
	}
	for i := range 3 {
		if _, err := p.QueryPostgresText(ctx, `SELECT pg_sleep(0.1)::text`); err != nil {
			t.Fatal(err)
		}
		if got := combined(); got != 2 {
			t.Errorf("run %d of a 100 ms text: %d combined, want still 2", i+1, got)
		}
	}
}

// TestOpenPipelineLanes: the policy's backend.pipeline_lanes reaches the
// backend; 0 turns combining off.
func TestOpenPipelineLanes(t *testing.T) {
	dsn := pgDSN(t)
	for _, tc := range []struct {
		lanes *int
		want  int // 0: no combiner
	}{
		{nil, defaultPipelineLanes(8)},
		{new(0), 0},
		{new(3), 3},
	} {
		b, err := Open(context.Background(), config.Backend{Kind: config.BackendPostgres, DSN: dsn, MaxConns: 8, PipelineLanes: tc.lanes})
		if err != nil {
			t.Fatal(err)
		}
		p := b.(*Postgres)
		got := 0
		if p.combiner != nil {
			got = p.combiner.lanes
		}
		if got != tc.want {
			t.Errorf("pipeline_lanes %v: %d lanes, want %d", tc.lanes, got, tc.want)
		}
		b.Close()
	}
}

// TestCombinerLeavesOnlyWhenSlow: a combined text stays combined through
// runs longer than it takes to enter (a busy server's queue), runs alone
// once a run takes leaveAt or more, and comes back after readmitAfter
// runs alone shorter than leaveAt, twice as many after its second slow
// run.
func TestCombinerLeavesOnlyWhenSlow(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 2, 1)
	p.combiner.shorterThan = 50 * time.Millisecond
	p.combiner.leaveAt = 500 * time.Millisecond
	p.combiner.readmitAfter = 2
	ctx := context.Background()
	q := `SELECT pg_sleep($1::float8)::text`
	for i, step := range []struct {
		sleep    float64 // -1: a run that fails
		combined int64   // statements combined after the run
	}{
		{0, 0},   // first run: alone
		{0, 1},   // seen and short: combined
		{0.1, 2}, // longer than it takes to enter, shorter than to leave: still combined
		{0, 3},
		{0.6, 4}, // combined, and too long: leaves
		{0, 4},   // alone, fits: 1 of 2
		{0.6, 4}, // alone, too long: the count starts again
		{0.1, 4}, // fits, though longer than it takes to enter: 1 of 2
		{-1, 4},  // alone, failed: does not count
		{0, 4},   // 2 of 2
		{0, 5},   // back in a batch
		{0.6, 6}, // too long again: leaves for 4 short runs alone
		{0, 6},
		{0, 6},
		{0, 6},
		{0, 6},
		{0, 7}, // back
	} {
		if step.sleep < 0 {
			if _, err := p.QueryPostgresText(ctx, q, "not a number"); err == nil {
				t.Fatalf("run %d: no error", i+1)
			}
		} else if _, err := p.QueryPostgresText(ctx, q, step.sleep); err != nil {
			t.Fatal(err)
		}
		if got := p.combiner.statements.Load(); got != step.combined {
			t.Errorf("run %d (%.1f s): %d combined, want %d", i+1, step.sleep, got, step.combined)
		}
	}
}

// TestCombinerFailedPrepare: a text that fails to prepare gets its error,
// and its statement name is not closed on the server afterwards (it was
// never there: closing it would only log an error on the server).
func TestCombinerFailedPrepare(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 1, 1)
	p.combiner.shorterThan = time.Minute
	ctx := context.Background()
	q := `SELECT x FROM no_such_table_` + strconv.FormatInt(time.Now().UnixNano(), 10)
	for i := range 2 { // alone, then combined
		_, err := p.QueryPostgresText(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42P01" {
			t.Fatalf("run %d: %v, want undefined_table", i+1, err)
		}
	}
	if p.combiner.statements.Load() != 1 {
		t.Fatalf("%d statements combined, want 1", p.combiner.statements.Load())
	}
	pc := p.pool.idle[0]
	if pc.pipeline == nil || len(pc.pipeline.evicted) != 0 || pc.pipeline.prepared.Len() != 0 {
		t.Errorf("after a failed prepare: %+v", pc.pipeline)
	}
	if _, err := p.QueryPostgresText(ctx, `SELECT 1`); err != nil {
		t.Errorf("the connection after a failed prepare: %v", err)
	}
}

// TestCombinerDecodedResults: Query (a DP query's bounded SQL, decoded
// values) goes through the combiner like a public-table statement once its
// text is seen and short, and a combined result is the one the statement
// alone returns, type for type and value for value, NULLs included.
func TestCombinerDecodedResults(t *testing.T) {
	p := openCombinedT(t, pgDSN(t), 2, 1)
	p.combiner.shorterThan = time.Minute
	ctx := context.Background()
	const sql = `SELECT $1::int8 AS n, $1::numeric / 8 AS ratio, $1::float8 / 3 AS third,
		DATE '2025-01-05' + $1::int AS day, TIMESTAMPTZ '2025-01-05 10:00:00+02' AS at,
		'x' || $1::text AS label, $1::int8 > 2 AS big, NULL::int8 AS nothing`
	alone, err := p.Query(ctx, sql, int64(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.combiner.statements.Load(); got != 0 {
		t.Fatalf("the first run of a text was combined (%d)", got)
	}
	combined, err := p.Query(ctx, sql, int64(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.combiner.statements.Load(); got != 1 {
		t.Fatalf("the second run of a short text: %d combined, want 1", got)
	}
	if combined.PostgresText != nil {
		t.Fatalf("Query returned wire rows: %d", len(combined.PostgresText))
	}
	if fmt.Sprintf("%#v", combined.Columns) != fmt.Sprintf("%#v", alone.Columns) {
		t.Errorf("columns: combined %#v, alone %#v", combined.Columns, alone.Columns)
	}
	if fmt.Sprintf("%#v", combined.Values) != fmt.Sprintf("%#v", alone.Values) {
		t.Errorf("values: combined %#v, alone %#v", combined.Values, alone.Values)
	}
	if len(alone.Values) != 1 || alone.Values[0][7] != nil || alone.Values[0][0] != int64(5) {
		t.Errorf("alone: %#v", alone.Values)
	}
	// An error in a combined statement is the statement's own.
	if _, err := p.Query(ctx, `SELECT 1 / $1::int`, int64(1)); err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(ctx, `SELECT 1 / $1::int`, int64(0))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Errorf("division by zero, combined: %v", err)
	}
	if got := p.combiner.statements.Load(); got != 2 {
		t.Errorf("%d combined, want 2", got)
	}
	// The result limit holds for decoded rows in a batch too.
	const many = `SELECT g, g::numeric / 3 FROM generate_series(1, $1::int) g`
	if _, err := p.Query(ctx, many, int64(1000)); err != nil {
		t.Fatal(err)
	}
	_, err = p.Query(WithResultLimit(ctx, ResultLimit{Rows: 10}), many, int64(1000))
	var tl *ResultTooLargeError
	if !errors.As(err, &tl) || !tl.Rows {
		t.Errorf("1000 decoded rows at a cap of 10, combined: %v", err)
	}
	if got := p.combiner.statements.Load(); got != 3 {
		t.Errorf("%d combined, want 3", got)
	}
	res, err := p.Query(ctx, many, int64(4))
	if err != nil || len(res.Values) != 4 {
		t.Errorf("the next statement: %v %#v", err, res)
	}
}

// TestSentHook: a text's first run, and the runs of a text that never
// succeeded, call no sent hook (a refusal there is the database's before
// the data); once a run succeeded, each statement calls its hook once,
// when sent, well before a 0.3 s statement's result is in: alone, and
// combined (from the batch's flush).
func TestSentHook(t *testing.T) {
	dsn := pgDSN(t)
	for _, lanes := range []int{0, 1} {
		t.Run(fmt.Sprintf("lanes=%d", lanes), func(t *testing.T) {
			p := openCombinedT(t, dsn, 2, lanes)
			if p.combiner != nil {
				p.combiner.shorterThan = time.Minute // combined from the second run on
			}
			ctx := context.Background()
			run := func(sql string) (calls int, ahead time.Duration, err error) {
				var at time.Time
				hooked := WithSent(ctx, func() { calls++; at = time.Now() })
				_, err = p.Query(hooked, sql)
				if calls > 0 {
					ahead = time.Since(at)
				}
				return calls, ahead, err
			}
			slow := `SELECT pg_sleep(0.3)::text, ` + strconv.Itoa(lanes)
			if calls, _, err := run(slow); err != nil || calls != 0 {
				t.Fatalf("first run: %d hook calls, %v; want none", calls, err)
			}
			for i := range 2 {
				calls, ahead, err := run(slow)
				if err != nil || calls != 1 || ahead < 200*time.Millisecond {
					t.Errorf("run %d after a success: %d hook calls, %v before the result, %v; want one, about 0.3 s ahead", i+2, calls, ahead, err)
				}
			}
			if lanes > 0 && p.combiner.statements.Load() == 0 {
				t.Error("nothing went combined: the combined path is untested")
			}
			bad := `SELECT no_such_column_` + strconv.Itoa(lanes)
			for i := range 2 {
				if calls, _, err := run(bad); err == nil || calls != 0 {
					t.Errorf("run %d of a refused text: %d hook calls, %v; want an error and no call", i+1, calls, err)
				}
			}
		})
	}
}
