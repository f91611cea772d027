package rewrite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// FuzzAnalyze runs any text through the whole front of the pipeline:
// normalizer, parser, Analyze for every backend dialect, and the SQLite
// backend SQL on the execute fixture. Properties: nothing panics; a
// refusal is an *sqlerr.Error that is not internal; whatever is accepted
// and names a protected table is an aggregate plan (never a passthrough)
// with at least one noisy measurement; the SQL a plan emits for SQLite
// runs.
func FuzzAnalyze(f *testing.F) {
	for _, c := range readCorpusQueries(f) {
		f.Add(c)
	}
	for _, r := range rejections {
		f.Add(r.sql)
	}
	for _, c := range executeCases {
		f.Add(c.sql)
	}
	pol := testPolicy(f)
	keyed := withKeyUnits(pol)
	db := fuzzFixture(f)
	f.Fuzz(func(t *testing.T, in string) {
		parsed, err := ParseStatement(in, PostgresFrontEnd)
		if err != nil {
			checkRefusal(t, in, err)
			return
		}
		for _, stmt := range parsed.Stmts {
			for _, d := range []Dialect{SQLite, Postgres, MySQL} {
				q, err := Analyze(stmt, pol, Options{Dialect: d, Epsilon: 1, Casts: parsed.CastOf})
				if err != nil {
					checkRefusal(t, in, err)
					break
				}
				// What is passed through is restored from the statement as
				// analyzed (an unused WITH clause dropped): it must read no
				// protected table.
				if q.Passthrough != nil && namesProtectedTable(stmt, pol) {
					t.Fatalf("%q names a protected table and was passed through as %q", in, q.Passthrough.SQL)
				}
				if p := q.Plan; p != nil {
					// A plan releases noisy measurements, or keys through
					// partition selection (which spends ε and δ).
					// Quantiles are released by the exponential mechanism
					// over their histograms.
					noisy := len(p.Measurements) > 0 || len(p.Quantiles) > 0 || (p.Selection != nil && p.Selection.Epsilon > 0 && p.Selection.Delta > 0)
					if !noisy || len(p.BackendQueries()) == 0 || p.Epsilon <= 0 {
						t.Fatalf("%q: a plan without noise: %+v", in, p)
					}
					for _, m := range p.Measurements {
						if m.Sensitivity < 0 || m.Epsilon <= 0 {
							t.Fatalf("%q: measurement %+v", in, m)
						}
					}
					for _, q := range p.Quantiles {
						if q.Epsilon <= 0 || q.ChangedGroups < 1 || q.MassSensitivity < 1 {
							t.Fatalf("%q: quantile %+v", in, q)
						}
					}
					if d == SQLite {
						for _, sql := range p.BackendQueries() {
							rows, err := db.QueryContext(context.Background(), sql)
							if err != nil {
								t.Fatalf("%q: the SQLite backend SQL fails: %v\n%s", in, err, sql)
							}
							rows.Close()
						}
					}
				}
			}
			// With each unit its table's primary key (UnitIsKey), plans
			// without the per-unit step: their SQL must run as well.
			q, err := Analyze(stmt, keyed, Options{Dialect: SQLite, Epsilon: 1, Casts: parsed.CastOf})
			if err != nil {
				checkRefusal(t, in, err)
				continue
			}
			if q.Plan == nil {
				continue
			}
			for _, sql := range q.Plan.BackendQueries() {
				rows, err := db.QueryContext(context.Background(), sql)
				if err != nil {
					t.Fatalf("%q, units as keys: the SQLite backend SQL fails: %v\n%s", in, err, sql)
				}
				rows.Close()
			}
		}
	})
}

func checkRefusal(t *testing.T, in string, err error) {
	t.Helper()
	e := sqlerr.As(err)
	if e.Code == sqlerr.InternalError || e.Message == "" {
		t.Fatalf("%q: refused with %v (%s)", in, err, e.Code)
	}
}

// namesProtectedTable reports whether stmt refers to a table of the
// policy's protected tables anywhere.
func namesProtectedTable(stmt ast.StmtNode, pol *config.Policy) bool {
	v := &tableVisitor{pol: pol}
	stmt.Accept(v)
	return v.found
}

type tableVisitor struct {
	pol   *config.Policy
	found bool
}

func (v *tableVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if tn, ok := n.(*ast.TableName); ok {
		for _, t := range v.pol.ProtectedTables {
			if strings.EqualFold(tn.Name.O, t.Name) {
				v.found = true
			}
		}
	}
	return n, false
}

func (v *tableVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

var (
	fuzzDBOnce sync.Once
	fuzzDB     *sql.DB
)

// fuzzFixture is the execute fixture in one SQLite database for the
// whole fuzzing process.
func fuzzFixture(f *testing.F) *sql.DB {
	fuzzDBOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rewrite-fuzz")
		if err != nil {
			f.Fatal(err)
		}
		db, err := sql.Open("sqlite", filepath.Join(dir, "fixture.db"))
		if err != nil {
			f.Fatal(err)
		}
		for _, stmt := range append(slices.Clone(fixture), keyUnitFixture...) {
			if _, err := db.Exec(stmt); err != nil {
				f.Fatal(err)
			}
		}
		fuzzDB = db
	})
	return fuzzDB
}

// readCorpusQueries returns the golden cases' queries.
func readCorpusQueries(f *testing.F) []string {
	data, err := os.ReadFile("testdata/cases.sql")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(data), "-- name: ")[1:] {
		_, q, _ := strings.Cut(block, "\n")
		if _, rest, ok := strings.Cut(q, "-- neighbouring: "); ok {
			_, q, _ = strings.Cut(rest, "\n")
		}
		out = append(out, strings.TrimSpace(q))
	}
	return out
}
