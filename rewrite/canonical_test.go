package rewrite

import "testing"

func canonical(t *testing.T, sql string, fe FrontEnd) string {
	t.Helper()
	stmts, err := Parse(sql, fe)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	if len(stmts) != 1 {
		t.Fatalf("Parse(%q): %d statements", sql, len(stmts))
	}
	c, err := Canonical(stmts[0])
	if err != nil {
		t.Fatalf("Canonical(%q): %v", sql, err)
	}
	return c
}

func TestCanonical(t *testing.T) {
	const base = "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3"
	for _, tc := range []struct {
		name  string
		other string
		same  bool
	}{
		{"identical", base, true},
		{"white space", "SELECT region,COUNT(*) ,  AVG(income)\n\tFROM patients\nWHERE age>=18 AND sex='F'\nGROUP BY region ORDER BY 2 DESC LIMIT 3", true},
		{"keyword case", "select region, count(*), avg(income) from patients where age >= 18 and sex = 'F' group by region order by 2 desc limit 3", true},
		{"comments and semicolon", "/* c */ SELECT region, COUNT(*), AVG(income) FROM patients -- x\nWHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3;", true},
		{"redundant parentheses kept", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE (age >= 18) AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"WHERE 1=1", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' AND 1=1 GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"x+0", "SELECT region, COUNT(*), AVG(income+0) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"another constant", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 19 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"same number, other spelling", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18.0 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"string case", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'f' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"identifier case", "SELECT Region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3", false},
		{"quoted identifier", `SELECT "region", COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 3`, true},
		{"another limit", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 DESC LIMIT 4", false},
		{"ascending", "SELECT region, COUNT(*), AVG(income) FROM patients WHERE age >= 18 AND sex = 'F' GROUP BY region ORDER BY 2 LIMIT 3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := canonical(t, base, PostgresFrontEnd), canonical(t, tc.other, PostgresFrontEnd)
			if (a == b) != tc.same {
				t.Errorf("canonical texts\n  %s\n  %s\nequal = %v, want %v", a, b, a == b, tc.same)
			}
		})
	}
}

// Strings are compared by value, whatever the front end's escaping, and
// quotes cannot make two different strings look the same.
func TestCanonicalStrings(t *testing.T) {
	pg := canonical(t, `SELECT COUNT(*) FROM t WHERE s = 'it''s \n'`, PostgresFrontEnd)
	my := canonical(t, `SELECT COUNT(*) FROM t WHERE s = 'it\'s \\n'`, MySQLFrontEnd)
	if pg != my {
		t.Errorf("the same string from two front ends:\n  %s\n  %s", pg, my)
	}
	a := canonical(t, `SELECT COUNT(*) FROM t WHERE s = 'a'' OR s = ''b'`, PostgresFrontEnd)
	b := canonical(t, `SELECT COUNT(*) FROM t WHERE s = 'a' OR s = 'b'`, PostgresFrontEnd)
	if a == b {
		t.Errorf("a one-string and a two-string query share the text %s", a)
	}
	if _, err := Canonical(nil); err == nil {
		t.Error("Canonical(nil) succeeded")
	}
}
