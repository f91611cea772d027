package rewrite

import "testing"

// COUNT(DISTINCT) of a LEFT-joined table's unit counts its values, which
// are NULL where the table has no row; of an inner-joined one, the units
// (found in review: the LEFT-joined one counted every person).
func TestLeftJoinedUnitIsNotTheUnit(t *testing.T) {
	pol := testPolicy(t)
	for _, c := range []struct {
		sql  string
		want AggFunc
	}{
		{`SELECT COUNT(DISTINCT a.patient_id) FROM doses d LEFT JOIN admissions a ON d.admission_id = a.admission_id AND a.ward = 'W'`, CountDistinctValues},
		{`SELECT COUNT(DISTINCT a.patient_id) FROM doses d JOIN admissions a ON d.admission_id = a.admission_id AND a.ward = 'W'`, CountDistinctUnit},
		{`SELECT COUNT(DISTINCT s.patient_id) FROM visits v LEFT JOIN stays s USING (patient_id)`, CountDistinctValues},
		{`SELECT COUNT(DISTINCT s.patient_id) FROM visits v JOIN stays s USING (patient_id)`, CountDistinctUnit},
	} {
		if got := planOf(t, pol, c.sql, Options{Dialect: Postgres, Epsilon: 1}).Aggregates[0].Func; got != c.want {
			t.Errorf("%s: %v, want %v", c.sql, got, c.want)
		}
	}
}
