package rewrite

import (
	"strings"
	"testing"
)

// The heavy-units form (heavy.go) is chosen only where its result is
// the window form's: a dialect that asks for it, the total bound without
// partition selection or excess columns, the table alone, and a WHERE
// that reads nothing else (a subquery would be read three times).
func TestHeavyUnitsFormChosen(t *testing.T) {
	pol := testPolicy(t)
	for _, c := range []struct {
		sql     string
		dialect Dialect
		bias    bool
		heavy   bool
	}{
		{sql: `SELECT city, COUNT(*) FROM trips GROUP BY city`, dialect: MySQL, heavy: true},
		{sql: `SELECT city, SUM(km) FROM trips WHERE km < 50 OR city = 'z' GROUP BY city`, dialect: MySQL, heavy: true},
		{sql: `SELECT city, COUNT(*) FROM trips GROUP BY city`, dialect: Postgres},
		{sql: `SELECT city, COUNT(*) FROM trips GROUP BY city`, dialect: SQLite},
		{sql: `SELECT city, COUNT(*) FROM trips WHERE city IN (SELECT city FROM clinics) GROUP BY city`, dialect: MySQL},
		{sql: `SELECT city, COUNT(*) FROM trips WHERE EXISTS (SELECT 1 FROM clinics WHERE clinics.city = trips.city) GROUP BY city`, dialect: MySQL},
		{sql: `SELECT t.city, COUNT(*) FROM trips AS t JOIN clinics AS c ON c.city = t.city GROUP BY t.city`, dialect: MySQL},
		{sql: `SELECT city, COUNT(*) FROM trips GROUP BY city`, dialect: MySQL, bias: true},
		{sql: `SELECT ward, COUNT(*) FROM legs GROUP BY ward`, dialect: MySQL},             // partition selection
		{sql: `SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis`, dialect: MySQL}, // no total bound
	} {
		t.Run(c.dialect.Name()+"/"+c.sql, func(t *testing.T) {
			stmts, err := Parse(c.sql, PostgresFrontEnd)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Analyze(stmts[0], pol, Options{Dialect: c.dialect, Epsilon: 1, BiasBounds: c.bias})
			if err != nil {
				t.Fatal(err)
			}
			if heavy := strings.Contains(q.Plan.BackendSQL, "dp_fix"); heavy != c.heavy {
				t.Errorf("heavy-units form %v, want %v:\n%s", heavy, c.heavy, q.Plan.BackendSQL)
			}
		})
	}
}
