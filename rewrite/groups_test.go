package rewrite

import (
	"strings"
	"testing"
)

// WHERE's own constants narrow a public key list: the keys the query
// excludes are not released as noisy zeros. Anything WHERE does not pin
// down (OR, NOT IN, ranges, other columns) leaves the list whole.
func TestWhereNarrowsPublicKeys(t *testing.T) {
	pol := testPolicy(t)
	for _, c := range []struct{ sql, keys string }{
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis = 'B' GROUP BY diagnosis`, "B"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE 'B' = diagnosis GROUP BY diagnosis`, "B"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE nights > 1 AND diagnosis IN ('a', 'C  ') GROUP BY diagnosis`, "A C"},
		{`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id IN (2, 7) GROUP BY clinic_id`, "2"},
		{`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id = '1' GROUP BY clinic_id`, "1"},
		{`SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id WHERE c.city = 'Oslo' GROUP BY c.city`, ""},
		// Left whole.
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis = 'B' OR nights > 1 GROUP BY diagnosis`, "A B C"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis NOT IN ('B') GROUP BY diagnosis`, "A B C"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis = 'Z' GROUP BY diagnosis`, "A B C"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis > 'A' GROUP BY diagnosis`, "A B C"},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE region = 'B' GROUP BY diagnosis`, "A B C"},
		// Beyond ASCII a collation may equate more than case ('Zurich' and
		// 'Zürich'): kept.
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE diagnosis IN ('B', 'Ä') GROUP BY diagnosis`, "A B C"},
	} {
		p := planOf(t, pol, c.sql, Options{Dialect: Postgres, Epsilon: 1})
		if got := strings.Join(p.Groups[0].Keys, " "); got != c.keys {
			t.Errorf("%s: keys %q, want %q", c.sql, got, c.keys)
		}
	}
}
