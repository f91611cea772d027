package author

// Tests of the (n, ε)-closeness audit: the distances on hand-computed
// examples (the t-closeness paper's salaries among them), supersets
// chosen by suppressing quasi-identifiers, NULLs, the loaders and the
// refusal of bad options.

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
)

func readFixture(t *testing.T, name string, columns ...string) *ClosenessTable {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "closeness", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := ReadClosenessCSV(f, name, columns)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// classOf finds the class with the given quasi-identifier values.
func classOf(t *testing.T, r *ClosenessReport, values ...string) ClosenessClass {
	t.Helper()
	for _, c := range r.Classes {
		if reflect.DeepEqual(c.Values, values) {
			return c
		}
	}
	t.Fatalf("no class %v in %+v", values, r.Classes)
	return ClosenessClass{}
}

// The t-closeness paper's example: salaries 3k..11k, one record each, in
// three classes of three; with n = 9 only the whole table is a superset.
// EMD(P1, Q) = 0.375, EMD(P2, Q) = 1/6, and for P3 = {7k, 9k, 10k} the
// cumulative differences are −1, −2, −3, −4, −2, −3, −1, 1, 0 ninths:
// 17/9 over m − 1 = 8, 17/72. Variational(P1, Q) = 2/3, KL(P1‖Q) = ln 3.
func TestClosenessSalaries(t *testing.T) {
	tbl := readFixture(t, "salaries.csv", "zip", "age", "salary")
	if !reflect.DeepEqual(tbl.Numeric, []bool{false, false, true}) {
		t.Fatalf("numeric columns: %v", tbl.Numeric)
	}
	for _, tc := range []struct {
		distance   Distance
		p1, p2, p3 float64
	}{
		{EMD, 0.375, 1.0 / 6, 17.0 / 72},
		{Variational, 2.0 / 3, 2.0 / 3, 2.0 / 3},
		{KL, math.Log(3), math.Log(3), math.Log(3)},
	} {
		r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"zip", "age"}, Sensitive: "salary", N: 9, Epsilon: 0.2, Distance: tc.distance})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []struct {
			values []string
			d      float64
		}{{[]string{"476**", "2*"}, tc.p1}, {[]string{"4790*", "≥40"}, tc.p2}, {[]string{"476**", "3*"}, tc.p3}} {
			c := classOf(t, r, want.values...)
			if !near(c.Distance, want.d) || c.SupersetSize != 9 || len(c.Suppressed) != 2 || c.Pass != (want.d <= 0.2) {
				t.Errorf("%s %v: %+v, want distance %v to the whole table", tc.distance, want.values, c, want.d)
			}
		}
	}
	// By emd at ε = 0.2, P1 and P3 fail, the worst first; at ε = 0.375 (P1
	// exactly) the table passes.
	r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"zip", "age"}, Sensitive: "salary", N: 9, Epsilon: 0.2, Distance: EMD})
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Failing(); len(f) != 2 || f[0].Values[1] != "2*" || f[1].Values[1] != "3*" || r.Pass() || r.Worst().Values[1] != "2*" {
		t.Errorf("failing at ε 0.2: %+v", f)
	}
	var out bytes.Buffer
	r.Write(&out)
	for _, want := range []string{
		"table   salaries.csv: 9 records in 3 classes; quasi-identifiers zip, age; sensitive salary (numeric, 9 distinct values)\n",
		"fail    zip=476**, age=2* (3 records): nearest superset the whole table (9 records) at 0.3750 > ε 0.2\n",
		"fail    zip=476**, age=3* (3 records): nearest superset the whole table (9 records) at 0.2361 > ε 0.2\n",
		"worst   zip=476**, age=2* (3 records): nearest superset the whole table (9 records) at 0.3750 > ε 0.2\n",
		"3 classes, 2 failing (6 of 9 records in failing classes); salaries.csv does not have (9, 0.2)-closeness\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	r, err = Closeness(tbl, ClosenessOptions{Quasi: []string{"zip", "age"}, Sensitive: "salary", N: 9, Epsilon: 0.375, Distance: EMD})
	if err != nil || !r.Pass() {
		t.Errorf("at ε = 0.375: %v %+v", err, r.Classes)
	}
	// n larger than the table: no superset, every class fails.
	r, err = Closeness(tbl, ClosenessOptions{Quasi: []string{"zip"}, Sensitive: "salary", N: 10, Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	r.Write(&out)
	if len(r.Failing()) != 2 || r.Classes[0].SupersetSize > 0 || !math.IsInf(r.Classes[0].Distance, 1) ||
		!strings.Contains(out.String(), "fail    zip=476** (6 records): no superset has 10 records (the table has 9)\n") {
		t.Errorf("n = 10 > 9 records: %+v\n%s", r.Classes, out.String())
	}
}

// A categorical attribute: class P1 holds gastric ulcer, gastritis and
// stomach cancer, a third each; the table Q has gastric ulcer 1,
// gastritis 2, stomach cancer 2, flu 1, bronchitis 2, pneumonia 1 (of 9).
// Variational = ½ (2/9 + 1/9 + 1/9 + 1/9 + 2/9 + 1/9) = 4/9, and emd is
// the same; KL = ⅓ ln 3 + ⅔ ln (3/2).
func TestClosenessCategorical(t *testing.T) {
	tbl := readFixture(t, "salaries.csv", "zip", "age", "disease")
	for d, want := range map[Distance]float64{Variational: 4.0 / 9, EMD: 4.0 / 9, KL: (math.Log(3) + 2*math.Log(1.5)) / 3} {
		r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"zip", "age"}, Sensitive: "disease", N: 9, Epsilon: 0.5, Distance: d})
		if err != nil {
			t.Fatal(err)
		}
		if c := classOf(t, r, "476**", "2*"); !near(c.Distance, want) {
			t.Errorf("%s: %v, want %v", d, c.Distance, want)
		}
		var out bytes.Buffer
		r.Write(&out)
		if note := "note    disease is not numeric: emd takes every two values as 1 apart, which is the variational distance"; strings.Contains(out.String(), note) != (d == EMD) {
			t.Errorf("%s: the note on emd over text:\n%s", d, out.String())
		}
	}
}

// The distances on counts: P = (2, 1, 0) of 3, Q = (3, 2, 1) of 6.
// Variational ½ (1/6 + 0 + 1/6) = 1/6; KL ⅔ ln (4/3); ordered EMD with
// cumulative differences 1/6, 1/6, 0 over m − 1 = 2: 1/6.
func TestClosenessDistances(t *testing.T) {
	p := []bin{{0, 2}, {1, 1}}
	q := histogram{0: 3, 1: 2, 2: 1}
	for _, tc := range []struct {
		d       Distance
		ordered bool
		want    float64
	}{
		{Variational, false, 1.0 / 6},
		{KL, false, 2.0 / 3 * math.Log(4.0/3)},
		{EMD, false, 1.0 / 6},
		{EMD, true, 1.0 / 6},
	} {
		if got := newSuperset(q, 6, 3).distance(tc.d, tc.ordered, 3, p, 3); !near(got, tc.want) {
			t.Errorf("%s (ordered %v): %v, want %v", tc.d, tc.ordered, got, tc.want)
		}
	}
	// Ordered EMD tells near from far where the variational distance
	// cannot: all mass on the first of 5 values against Q half there,
	// half on the second (1/2 for one step, over 4: 1/8) or the last
	// (1/2 for four steps: 1/2).
	if got := newSuperset(histogram{0: 1, 1: 1}, 2, 5).distance(EMD, true, 5, []bin{{0, 1}}, 1); !near(got, 0.125) {
		t.Errorf("EMD one step: %v", got)
	}
	if got := newSuperset(histogram{0: 1, 4: 1}, 2, 5).distance(EMD, true, 5, []bin{{0, 1}}, 1); !near(got, 0.5) {
		t.Errorf("EMD four steps: %v", got)
	}
	if got := newSuperset(histogram{0: 5}, 5, 1).distance(EMD, true, 1, []bin{{0, 2}}, 2); got != 0 {
		t.Errorf("EMD over one value: %v", got)
	}
}

// The audit's distances (O(|P| log |Q|)) agree with the definitions
// computed term by term, on random classes of random supersets.
func TestClosenessDistancesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 2000; trial++ {
		m := 1 + rng.IntN(30)
		q, p := histogram{}, histogram{}
		var nq, np int64
		for i := 0; i < 1+rng.IntN(60); i++ {
			v := int32(rng.IntN(m))
			q[v]++
			nq++
			if rng.IntN(3) == 0 || np == 0 {
				p[v]++
				np++
			}
		}
		s := newSuperset(q, nq, m)
		for _, d := range []Distance{Variational, KL, EMD} {
			for _, ordered := range []bool{false, true} {
				got, want := s.distance(d, ordered, m, p.sorted(), np), referenceDistance(d, ordered, m, p.sorted(), np, q.sorted(), nq)
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("%s (ordered %v), m %d, P %v of %d, Q %v of %d: %v, want %v", d, ordered, m, p.sorted(), np, q.sorted(), nq, got, want)
				}
			}
		}
	}
}

// referenceDistance computes the distance as written: a walk over every
// value of P or Q, the ordered EMD summing |Σ_{j≤i} (P_j − Q_j)| over all
// m values (a run of values with neither counts once per value).
func referenceDistance(d Distance, ordered bool, m int, p []bin, np int64, q []bin, nq int64) float64 {
	if d == EMD && !ordered {
		d = Variational
	}
	den := float64(np) * float64(nq)
	var sum float64
	var cum int64 // Σ_{j ≤ pos} (p_j·nq − q_j·np), for EMD
	i, j := 0, 0
	for i < len(p) || j < len(q) {
		var pos int32
		switch {
		case j == len(q) || (i < len(p) && p[i].pos < q[j].pos):
			pos = p[i].pos
		default:
			pos = q[j].pos
		}
		var pi, qi int64
		if i < len(p) && p[i].pos == pos {
			pi = p[i].n
			i++
		}
		if j < len(q) && q[j].pos == pos {
			qi = q[j].n
			j++
		}
		a, b := pi*nq, qi*np
		switch d {
		case Variational:
			sum += math.Abs(float64(a - b))
		case KL:
			if pi > 0 {
				sum += float64(pi) / float64(np) * math.Log(float64(a)/float64(b))
			}
		case EMD:
			cum += a - b
			next := int32(m)
			switch {
			case i < len(p) && (j == len(q) || p[i].pos <= q[j].pos):
				next = p[i].pos
			case j < len(q):
				next = q[j].pos
			}
			sum += math.Abs(float64(cum)) * float64(next-pos)
		}
	}
	switch d {
	case Variational:
		return sum / (2 * den)
	case EMD:
		if m <= 1 {
			return 0
		}
		return sum / (den * float64(m-1))
	}
	return sum
}

// A small class fails against the whole table but passes through a
// superset that suppresses one quasi-identifier. clinic.csv: (A, F) holds
// x, y; (A, M) x, x, y, y; (B, F) z ×5; (NULL, F) z. With n = 4, (A, F)
// is 0.5 from the whole table (x 3, y 3, z 6 of 12) but 0 from city=A
// (x 3, y 3 of 6). (NULL, F) has only sex=F (x, y, z ×6: 0.25) and the
// whole table (0.5): it fails at ε 0.1, passes at 0.25.
func TestClosenessPartialSuppression(t *testing.T) {
	tbl := readFixture(t, "clinic.csv", "city", "sex", "diagnosis")
	opts := ClosenessOptions{Quasi: []string{"city", "sex"}, Sensitive: "diagnosis", N: 4, Epsilon: 0.1, Distance: Variational}
	r, err := Closeness(tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := classOf(t, r, "A", "F"); !c.Pass || c.Distance != 0 || c.SupersetSize != 6 || !reflect.DeepEqual(c.Suppressed, []string{"sex"}) {
		t.Errorf("(A, F): %+v, want a pass through city=A (sex suppressed, 6 records)", c)
	}
	if c := classOf(t, r, "A", "M"); !c.Pass || c.SupersetSize != 4 || len(c.Suppressed) != 0 {
		t.Errorf("(A, M) has 4 records itself: %+v", c)
	}
	f := r.Failing()
	if len(f) != 1 || !reflect.DeepEqual(f[0].Values, []string{"NULL", "F"}) || !near(f[0].Distance, 0.25) || f[0].SupersetSize != 8 || !reflect.DeepEqual(f[0].Suppressed, []string{"city"}) {
		t.Fatalf("failing: %+v", f)
	}
	var out bytes.Buffer
	r.Write(&out)
	for _, want := range []string{
		"note    city is NULL in 1 record: NULL is a class value of its own\n",
		"fail    city=NULL, sex=F (1 record): nearest superset city=*, sex=F (8 records) at 0.2500 > ε 0.1\n",
		"4 classes, 1 failing (1 of 12 records in failing classes); clinic.csv does not have (4, 0.1)-closeness\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	// Only the whole table (one quasi-identifier): (A, F) would fail.
	opts.Epsilon = 0.25
	if r, err = Closeness(tbl, opts); err != nil || !r.Pass() {
		t.Errorf("at ε 0.25: %v %+v", err, r.Failing())
	}
	out.Reset()
	r.Write(&out)
	if !strings.Contains(out.String(), "clinic.csv has (4, 0.25)-closeness\n") || !strings.Contains(out.String(), "worst   city=NULL, sex=F (1 record): nearest superset city=*, sex=F (8 records) at 0.2500 ≤ ε 0.25\n") {
		t.Errorf("a passing report:\n%s", out.String())
	}
}

// NULL sensitive values are a value of their own, ordered after the
// largest number for emd: values 1, 2, NULL; class a = {1, NULL} and the
// table {1, 2, 2, NULL} give cumulative differences 1/4, −1/4, 0, so
// (1/4 + 1/4)/2 = 1/4 (NULL first would give 3/8).
func TestClosenessNullSensitive(t *testing.T) {
	tbl := &ClosenessTable{Name: "t", Columns: []string{"g", "v"}, Numeric: []bool{false, true},
		Rows: [][]any{{"a", int64(1)}, {"a", nil}, {"b", "2"}, {"b", 2.0}}}
	r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"g"}, Sensitive: "v", N: 4, Epsilon: 0.2, Distance: EMD})
	if err != nil {
		t.Fatal(err)
	}
	if c := classOf(t, r, "a"); !near(c.Distance, 0.25) || r.SensitiveValues != 3 || r.SensitiveNulls != 1 {
		t.Errorf("class a: %+v; %d values, %d NULL", c, r.SensitiveValues, r.SensitiveNulls)
	}
	var out bytes.Buffer
	r.Write(&out)
	if !strings.Contains(out.String(), "note    v is NULL in 1 record: NULL counts as a value of its own (for emd, ordered after the largest number)\n") {
		t.Errorf("no note on NULL:\n%s", out.String())
	}
	// A value that is not a number, in a column said to be numeric.
	tbl.Rows = append(tbl.Rows, []any{"c", "many"})
	if _, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"g"}, Sensitive: "v", N: 4, Epsilon: 0.2}); err == nil || !strings.Contains(err.Error(), "row 5: column v is numeric, but many is not a number") {
		t.Errorf("a word in a numeric column: %v", err)
	}
}

// Bad options are refused, each with a message that says what to fix.
func TestClosenessRefuses(t *testing.T) {
	tbl := readFixture(t, "salaries.csv", "zip", "age", "salary")
	good := ClosenessOptions{Quasi: []string{"zip", "age"}, Sensitive: "salary", N: 3, Epsilon: 0.1, Distance: EMD}
	for _, tc := range []struct {
		change func(*ClosenessOptions)
		want   string
	}{
		{func(o *ClosenessOptions) { o.Quasi = []string{"zip", "height"} }, `salaries.csv: no such column "height" (its columns: zip, age, salary)`},
		{func(o *ClosenessOptions) { o.Sensitive = "income" }, `no such column "income"`},
		{func(o *ClosenessOptions) { o.Quasi = []string{"zip", "Salary"} }, `the sensitive column "salary" is also a quasi-identifier`},
		{func(o *ClosenessOptions) { o.Quasi = []string{"zip", "ZIP"} }, `quasi-identifier "ZIP" is named twice`},
		{func(o *ClosenessOptions) { o.Quasi = nil }, "give at least one quasi-identifier column"},
		{func(o *ClosenessOptions) { o.Sensitive = "" }, "give the sensitive column"},
		{func(o *ClosenessOptions) { o.N = 0 }, "n must be at least 1 (got 0)"},
		{func(o *ClosenessOptions) { o.Epsilon = -0.5 }, "ε must be a number ≥ 0 (got -0.5)"},
		{func(o *ClosenessOptions) { o.Epsilon = math.NaN() }, "ε must be a number ≥ 0"},
		{func(o *ClosenessOptions) { o.Distance = "hamming" }, `unknown distance "hamming": want variational, kl or emd`},
		{func(o *ClosenessOptions) { o.Quasi = strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m", ",") }, "13 quasi-identifiers: at most 12"},
	} {
		o := good
		tc.change(&o)
		if _, err := Closeness(tbl, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", o, err, tc.want)
		}
	}
	if _, err := Closeness(tbl, good); err != nil {
		t.Errorf("good options: %v", err)
	}
	if d, err := ParseDistance(" KL "); d != KL || err != nil {
		t.Errorf("ParseDistance(KL): %v %v", d, err)
	}
	// The CSV reader names what is missing, and refuses ragged rows.
	if _, err := ReadClosenessCSV(strings.NewReader("a,b\n1,2\n"), "x.csv", []string{"a", "c"}); err == nil || err.Error() != `x.csv: no such column "c" (the header has: a, b)` {
		t.Errorf("unknown CSV column: %v", err)
	}
	if _, err := ReadClosenessCSV(strings.NewReader("a,b\n1,2,3\n"), "x.csv", []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "x.csv: record on line 2") {
		t.Errorf("a ragged row: %v", err)
	}
	if _, err := ReadClosenessCSV(strings.NewReader(""), "x.csv", []string{"a"}); err == nil || !strings.Contains(err.Error(), "no header row") {
		t.Errorf("an empty file: %v", err)
	}
}

// A column is numeric in a CSV file when every value that is not empty
// (NULL) is a number, and a number is the same however written.
func TestClosenessCSVNumbers(t *testing.T) {
	tbl, err := ReadClosenessCSV(strings.NewReader("\ufeffq,v,w,x\na,1,1,\na,1.0,x,\nb, 2 ,2,\nb,,3,\n"), "n.csv", []string{"q", "v", "w", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tbl.Numeric, []bool{false, true, false, false}) {
		t.Errorf("numeric: %v", tbl.Numeric)
	}
	r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"v"}, Sensitive: "q", N: 1, Epsilon: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 3 || r.QuasiNulls[0] != 1 || !r.Pass() {
		t.Errorf("classes of 1, 1.0, 2 and NULL: %+v", r.Classes)
	}
}

// The backend loader reads the columns it is asked for, numeric where the
// database declares numbers, and names what does not exist.
func TestLoadClosenessTable(t *testing.T) {
	_, be := smallDB(t)
	ctx := context.Background()
	tbl, err := LoadClosenessTable(ctx, be, config.BackendSQLite, "", "orders", []string{"SHOP", "amount"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Rows) != 55 || !reflect.DeepEqual(tbl.Columns, []string{"shop", "amount"}) || !reflect.DeepEqual(tbl.Numeric, []bool{false, true}) {
		t.Fatalf("%d rows, columns %v, numeric %v", len(tbl.Rows), tbl.Columns, tbl.Numeric)
	}
	// Person i has i orders of 10·i in shops s0, s1, s2 in turn: 55
	// orders, and every shop has at least 15. With n = 15 every class
	// passes as it is.
	r, err := Closeness(tbl, ClosenessOptions{Quasi: []string{"shop"}, Sensitive: "amount", N: 15, Epsilon: 0})
	if err != nil || !r.Pass() || len(r.Classes) != 3 || r.SensitiveValues != 10 {
		t.Errorf("orders by shop: %v %+v", err, r)
	}
	if _, err := LoadClosenessTable(ctx, be, config.BackendSQLite, "", "orders", []string{"shop", "colour"}); err == nil || err.Error() != "colour: no such column in orders (its columns: order_id, person_id, amount, shop)" {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := LoadClosenessTable(ctx, be, config.BackendSQLite, "", "nothing", []string{"a"}); err == nil || err.Error() != `no table "nothing" in the database` {
		t.Errorf("unknown table: %v", err)
	}
}
