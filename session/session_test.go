package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/internal/fixture"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session/catalog"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	_ "modernc.org/sqlite"
)

func loadPolicy(t testing.TB) *config.Policy { return fixture.Policy(t) }

// engineFixture is an engine over a small SQLite database and a ledger.
func engineFixture(t testing.TB) (*engine.Engine, *budget.Accountant, backend.Backend) {
	t.Helper()
	be, acct := fixture.Open(t)
	e, err := engine.New(engine.Options{Policy: loadPolicy(t), Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	return e, acct, be
}

// sessionFixture is engineFixture's engine, rebuilt over the same backend
// and ledger with the policy changed by mutate (nil: unchanged), a second
// analyst "bob", and a budget of ε = 100 for both analysts so that tests
// can run many queries. It returns a session of ana.
func sessionFixture(t *testing.T, mutate func(*config.Policy)) (*engine.Engine, *Session, *budget.Accountant, backend.Backend) {
	t.Helper()
	_, acct, be := engineFixture(t)
	pol := loadPolicy(t)
	bob := pol.Analysts[0]
	bob.Name = "bob"
	pol.Analysts = append(pol.Analysts, bob)
	if mutate != nil {
		mutate(pol)
	}
	acct.SetLimit("ana", budget.Cost{Epsilon: 100, Delta: 1e-4})
	acct.SetLimit("bob", budget.Cost{Epsilon: 100, Delta: 1e-4})
	e, err := engine.New(engine.Options{Policy: pol, Backend: be, Dialect: rewrite.SQLite, Accountant: acct})
	if err != nil {
		t.Fatal(err)
	}
	return e, newSession(t, e, "ana"), acct, be
}

func newSession(t *testing.T, e *engine.Engine, analyst string) *Session {
	t.Helper()
	s, err := New(serverFor(t, e), analyst, rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// exec runs one statement and returns its result, failing the test on an
// error.
func exec(t *testing.T, s *Session, sql string) *sqltypes.Result {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(res) != 1 {
		t.Fatalf("%s: %d results, want 1", sql, len(res))
	}
	return res[0]
}

// execErr runs one statement that must fail and returns its error.
func execErr(t *testing.T, s *Session, sql string) *sqlerr.Error {
	t.Helper()
	res, err := s.Execute(context.Background(), sql)
	if err == nil {
		t.Fatalf("%s: got %v, want an error", sql, res)
	}
	var e *sqlerr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not an *sqlerr.Error", sql, err, err)
	}
	return e
}

// spent is the analyst's committed ε.
func spent(t *testing.T, acct *budget.Accountant, analyst string) float64 {
	return fixture.Spent(t, acct, analyst)
}

// charges is the number of ledger entries of the analyst.
func charges(t *testing.T, acct *budget.Accountant, analyst string) int {
	return fixture.Charges(t, acct, analyst)
}

func TestSessionChargesAndRefusesWhenExhausted(t *testing.T) {
	e, acct, _ := engineFixture(t)
	ctx := context.Background()
	s, err := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	if err != nil {
		t.Fatal(err)
	}
	// Public tables and session statements cost nothing.
	for _, q := range []string{"SELECT body FROM notes", "SET application_name = 'x'", "BEGIN", "-- nothing"} {
		if _, err := s.Execute(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Fatalf("free statements spent ε=%v", st.Spent.Epsilon)
	}
	// Two answers at ε = 0.5 fit in 1.2; the third does not. (The queries
	// differ: a repeated query is answered from the cache, at no cost.)
	for _, q := range []string{"SELECT COUNT(n) FROM visits", "SELECT COUNT(*) FROM visits"} {
		res, err := s.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Rows) != 1 {
			t.Fatalf("result %v", res)
		}
	}
	st, _ := acct.Status("ana")
	if st.Spent.Epsilon != 1.0 {
		t.Fatalf("spent ε=%v after two queries, want 1.0", st.Spent.Epsilon)
	}
	charges, err := acct.Charges(ctx, "ana", 10)
	if err != nil || len(charges) != 2 || charges[0].Query != "SELECT COUNT(*) FROM visits" {
		t.Fatalf("ledger: %v %v", charges, err)
	}
	_, err = s.Execute(ctx, "SELECT SUM(n) FROM visits")
	e2 := sqlerr.As(err)
	if e2.Code != sqlerr.BudgetExhausted {
		t.Fatalf("third query: %v, want %s", err, sqlerr.BudgetExhausted)
	}
	// Still usable for public data.
	if _, err := s.Execute(ctx, "SELECT body FROM notes"); err != nil {
		t.Fatal(err)
	}
}

func TestMultipleStatementsRejected(t *testing.T) {
	e, acct, _ := engineFixture(t)
	s, _ := New(serverFor(t, e), "ana", rewrite.PostgresFrontEnd)
	_, err := s.Execute(context.Background(), "SELECT COUNT(*) FROM visits; SELECT COUNT(*) FROM visits")
	if sqlerr.As(err).Code != sqlerr.FeatureNotSupported {
		t.Fatalf("got %v", err)
	}
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != 0 {
		t.Fatal("a rejected query was charged")
	}
}

// servers holds one Server per test engine, and catalogs one catalog per
// schema: the test fixtures' engines share a policy and a backend schema,
// and building a catalog is the slow part of opening a session in tests
// (much more so under the race detector).
var (
	servers  sync.Map
	catalogs sync.Map
)

// serverFor returns the Server of engine e, built once.
func serverFor(tb testing.TB, e *engine.Engine) *Server {
	tb.Helper()
	if srv, ok := servers.Load(e); ok {
		return srv.(*Server)
	}
	ctx := context.Background()
	if err := loadKeyLists(ctx, e.Policy(), e.Backend(), e.Dialect()); err != nil {
		tb.Fatal(err)
	}
	schema, err := CatalogSchema(ctx, e.Policy(), e.Backend())
	if err != nil {
		tb.Fatal(err)
	}
	key := fmt.Sprintf("%+v", schema)
	cat, ok := catalogs.Load(key)
	if !ok {
		built, err := catalog.New(ctx, schema)
		if err != nil {
			tb.Fatal(err)
		}
		cat, _ = catalogs.LoadOrStore(key, built)
	}
	srv := &Server{engine: e}
	srv.catalog.Store(cat.(*catalog.Catalog))
	servers.Store(e, srv)
	tb.Cleanup(func() { servers.Delete(e) })
	return srv
}

// keys_from: a column's key list is read from a public table at start;
// exactly those keys are released (here the notes' bodies, which no visit
// has: both come out as noisy zeros).
func TestKeysFromPublicTable(t *testing.T) {
	_, s, _, _ := sessionFixture(t, func(pol *config.Policy) {
		col, _ := pol.ProtectedTables[0].Column("kind")
		col.Keys = nil
		col.KeysFrom = &config.KeySource{Table: "notes", Column: "body"}
	})
	res := exec(t, s, "SELECT kind, COUNT(*) FROM visits GROUP BY kind")
	var keys []string
	for _, row := range res.Rows {
		keys = append(keys, row[0].(string))
	}
	if strings.Join(keys, ",") != "hello,world" {
		t.Fatalf("released keys %v, want the public table's hello, world", keys)
	}
	explain := exec(t, s, "EXPLAIN DP SELECT kind, COUNT(*) FROM visits GROUP BY kind")
	if !strings.Contains(fmt.Sprint(explain.Rows), "public list of 2 key(s)") {
		t.Errorf("explain does not show the key list: %v", explain.Rows)
	}
}

// A key source the backend cannot read stops the server from starting.
func TestKeysFromMissingTable(t *testing.T) {
	e, _, _, _ := sessionFixture(t, nil)
	e.Policy().ProtectedTables[0].Columns[1].KeysFrom = &config.KeySource{Table: "nowhere", Column: "x"}
	if _, err := NewServer(context.Background(), e); err == nil || !strings.Contains(err.Error(), "nowhere(x)") {
		t.Fatalf("NewServer: %v, want an error naming the key source", err)
	}
}

// A public table's group_keys column the backend does not have stops the
// server from starting, naming it.
func TestPublicGroupKeysOfMissingColumn(t *testing.T) {
	e, _, _, _ := sessionFixture(t, nil)
	e.Policy().PublicTables[0].GroupKeys = []string{"nosuch"}
	if _, err := NewServer(context.Background(), e); err == nil || !strings.Contains(err.Error(), `group_keys names "nosuch"`) {
		t.Fatalf("NewServer: %v, want an error naming the column", err)
	}
}

// A privacy unit path through a column that is not its table's primary
// key stops the server from starting: a row could belong to two people.
func TestUnitPathKeyMustBePrimary(t *testing.T) {
	for _, c := range []struct {
		table, column, want string
	}{
		{"visits", "kind", "goes through visits.kind, which must be the primary key of visits (it has no primary key)"},
		{"nowhere", "id", "the database has no table nowhere"},
	} {
		e, _, _, _ := sessionFixture(t, func(pol *config.Policy) {
			if c.table == "nowhere" { // a protected table the database lacks
				pol.ProtectedTables = append(pol.ProtectedTables, config.ProtectedTable{Name: "nowhere", PrivacyUnit: "x",
					Columns: []config.Column{{Name: "x", Type: config.TypeInt}}})
			}
			pol.ProtectedTables = append(pol.ProtectedTables, config.ProtectedTable{Name: "tags", PrivacyUnit: "ref",
				UnitPath: &config.UnitReference{Table: c.table, Column: c.column},
				Columns:  []config.Column{{Name: "ref", Type: config.TypeText}}})
		})
		if _, err := NewServer(context.Background(), e); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewServer: %v, want an error saying %q", err, c.want)
		}
	}
}

// SET dpproxy.intervals: notices or interval columns on DP answers, free
// (no second charge), and refusals of bad values.
func TestIntervalsSetting(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	if got := exec(t, s, "SHOW dpproxy.intervals").Rows[0][0]; got != "off" {
		t.Fatalf("default dpproxy.intervals = %v, want off", got)
	}
	plain := exec(t, s, "SELECT COUNT(*) FROM visits")
	if len(plain.Notices) != 0 || len(plain.Columns) != 1 {
		t.Fatalf("intervals off: %+v", plain)
	}
	exec(t, s, "SET dpproxy.intervals = notice")
	res := exec(t, s, "SELECT COUNT(*), AVG(cost) FROM visits")
	// The intervals cover bounding's bias too (rewrite/excess.go); the
	// fixture's few visits leave the mean before clamping unbounded.
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "count in [") || !strings.Contains(res.Notices[0], "bias of contribution bounding") {
		t.Fatalf("notice mode: %q", res.Notices)
	}
	// The cached answer to the same query carries the same intervals.
	if again := exec(t, s, "SELECT COUNT(*), AVG(cost) FROM visits"); len(again.Notices) != 1 || again.Notices[0] != res.Notices[0] {
		t.Fatalf("cached answer's notice %q, want %q", again.Notices, res.Notices)
	}
	exec(t, s, "SET dpproxy.intervals TO 'columns'")
	spent := fixture.Spent(t, acct, "ana")
	res = exec(t, s, "SELECT kind, COUNT(*) AS n FROM visits GROUP BY kind")
	var names []string
	for _, c := range res.Columns {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "kind,n,n_lo95,n_hi95" {
		t.Fatalf("columns mode: %v", names)
	}
	// The interval is for the true count: it reaches at least the value,
	// and starts above it when the measured excess shows the bounded
	// count is low (so "lo ≤ value" would fail a few runs in a hundred).
	for _, row := range res.Rows {
		v, lo, hi := sqltypes.Float(row[1]), row[2].(float64), row[3].(float64)
		if !(0 <= lo && lo <= hi && v <= hi) {
			t.Errorf("row %v: not an interval for the count %v", row, v)
		}
	}
	if got := fixture.Spent(t, acct, "ana") - spent; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("the answer with intervals cost ε %v, want the query's 0.5", got)
	}
	// Prepared statements describe the interval columns too.
	p, err := s.Prepare(context.Background(), "SELECT COUNT(*) FROM visits", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Columns) != 3 || p.Columns[2].Name != "count_hi95" {
		t.Errorf("described columns %+v", p.Columns)
	}
	for _, bad := range []string{"SET dpproxy.intervals = maybe", "SET dpproxy.intervals = 1"} {
		if _, err := s.Execute(context.Background(), bad); sqlerr.As(err) == nil || sqlerr.As(err).Code != sqlerr.InvalidParameterValue {
			t.Errorf("%s: %v, want 22023", bad, err)
		}
	}
	exec(t, s, "RESET dpproxy.intervals")
	if got := exec(t, s, "SHOW dpproxy.intervals").Rows[0][0]; got != "off" {
		t.Errorf("after RESET: %v", got)
	}
	if got := exec(t, s, "SHOW dpproxy.epsilon").Rows[0][0]; got != "0.5" {
		t.Errorf("RESET dpproxy.intervals changed dpproxy.epsilon to %v", got)
	}
}

// SET dpproxy.target_error: each query runs at the smallest ε whose COUNT
// and SUM bounds meet the target, says so, and is charged that ε; a
// target beyond the policy's reach is refused with the ε it would take.
func TestTargetError(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	exec(t, s, "SET dpproxy.target_error = 50")
	if got := exec(t, s, "SHOW dpproxy.target_error").Rows[0][0]; got != "50" {
		t.Fatalf("SHOW: %v", got)
	}
	spent := fixture.Spent(t, acct, "ana")
	res := exec(t, s, "SELECT COUNT(*) FROM visits")
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "chosen for a 95 % error bound of ±50") {
		t.Fatalf("notices %q", res.Notices)
	}
	charged := fixture.Spent(t, acct, "ana") - spent
	// COUNT(*) without GROUP BY: sensitivity Linf = 3, discrete Laplace;
	// its 95 % bound ≈ 3·ln(20)/ε ≤ 50 needs ε ≈ 0.18.
	if charged < 0.15 || charged > 0.2 || !strings.Contains(res.Notices[0], strconv.FormatFloat(charged, 'g', 3, 64)) {
		t.Errorf("charged ε %v; notice %q", charged, res.Notices[0])
	}
	explain := exec(t, s, "EXPLAIN DP SELECT COUNT(*) FROM visits")
	if b := explain.Rows[0][6].(float64); b > 50 || b < 45 {
		t.Errorf("explained bound %v, want just under the target 50", b)
	}
	// Too precise for max_epsilon_per_query (1): refused with what it takes.
	exec(t, s, "SET dpproxy.target_error = 2")
	if e := execErr(t, s, "SELECT COUNT(*) FROM visits"); e.Code != sqlerr.PrivacyParameterError || !strings.Contains(e.Message, "needs ε ≈") {
		t.Errorf("unreachable target: %v", e)
	}
	exec(t, s, "SET dpproxy.target_error = 50")
	if e := execErr(t, s, "SELECT AVG(cost) FROM visits"); e.Code != sqlerr.FeatureNotSupported || !strings.Contains(e.Message, "COUNT and SUM") {
		t.Errorf("AVG alone: %v", e)
	}
	if e := execErr(t, s, "SET dpproxy.target_error = -3"); e.Code != sqlerr.InvalidParameterValue {
		t.Errorf("negative target: %v", e)
	}
	exec(t, s, "RESET ALL")
	if got := exec(t, s, "SHOW dpproxy.target_error").Rows[0][0]; got != "off" {
		t.Errorf("after RESET ALL: %v", got)
	}
}

// SET dpproxy.report_bias = on: the answer comes with DP estimates of
// what bounding changed, for a tenth of the query's ε (the charge stays
// the query's ε), and is not the cached answer without them.
func TestReportBias(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	plain := exec(t, s, "SELECT COUNT(*), SUM(cost) FROM visits")
	exec(t, s, "SET dpproxy.report_bias = on")
	spent := fixture.Spent(t, acct, "ana")
	res := exec(t, s, "SELECT COUNT(*), SUM(cost) FROM visits")
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "bias report") ||
		!strings.Contains(res.Notices[0], "rows beyond the bounds: about") || !strings.Contains(res.Notices[0], "cost outside [10, 20]: about") {
		t.Fatalf("notices %q", res.Notices)
	}
	if got := fixture.Spent(t, acct, "ana") - spent; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("charged %v, want the query's ε 0.5 (the report is part of it)", got)
	}
	if len(plain.Notices) != 0 {
		t.Errorf("the answer without the report has notices %q", plain.Notices)
	}
	explain := exec(t, s, "EXPLAIN DP SELECT COUNT(*), SUM(cost) FROM visits")
	if !strings.Contains(fmt.Sprint(explain.Rows), "bias report: ε = 0.05") {
		t.Errorf("explain does not state the report: %v", explain.Rows)
	}
	if e := execErr(t, s, "SET dpproxy.report_bias = maybe"); e.Code != sqlerr.InvalidParameterValue {
		t.Errorf("bad value: %v", e)
	}
	exec(t, s, "RESET dpproxy.report_bias")
	if got := exec(t, s, "SHOW dpproxy.report_bias").Rows[0][0]; got != "off" {
		t.Errorf("after RESET: %v", got)
	}
}

// max_rows_per_unit: auto end to end: the answer says which bound the data
// chose, the charge is the query's ε, and explain describes the method.
func TestAutoRowBound(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, func(pol *config.Policy) {
		pol.ProtectedTables[0].MaxRowsPerUnit = config.RowsAuto
	})
	spent := fixture.Spent(t, acct, "ana")
	res := exec(t, s, "SELECT kind, COUNT(*) FROM visits GROUP BY kind")
	if len(res.Notices) == 0 || !strings.Contains(res.Notices[0], "rows per person per group bounded at") {
		t.Fatalf("notices %q", res.Notices)
	}
	if got := fixture.Spent(t, acct, "ana") - spent; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("charged %v, want the query's 0.5", got)
	}
	explain := exec(t, s, "EXPLAIN DP SELECT kind, COUNT(*) FROM visits GROUP BY kind")
	if !strings.Contains(fmt.Sprint(explain.Rows), "max_rows_per_unit: auto") {
		t.Errorf("explain: %v", explain.Rows)
	}
}
