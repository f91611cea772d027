package rewrite

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// parseForTemplate parses one PostgreSQL text as BuildTemplate takes it.
func parseForTemplate(t testing.TB, sql string) (TemplateText, bool) {
	t.Helper()
	parsed, err := ParseStatement(sql, PostgresFrontEnd)
	if err != nil || len(parsed.Stmts) != 1 {
		return TemplateText{}, false
	}
	var casts CastLookup
	if parsed.Casts != nil {
		casts = parsed.CastOf
	}
	return TemplateText{Stmt: parsed.Stmts[0], Casts: casts}, true
}

// templateOf builds the template of sql's shape the way the session does;
// the error says why there is none.
func templateOf(t testing.TB, pol *config.Policy, opts Options, sql string) (*Template, *Shape, error) {
	t.Helper()
	shape, ok := PostgresShape(sql)
	if !ok {
		return nil, nil, errNoShape
	}
	var texts []TemplateText
	for _, base := range ProbeBases {
		values := shape.Probe(base)
		text, ok := parseForTemplate(t, shape.Text(values))
		if !ok {
			return nil, nil, errNoShape
		}
		text.Values = values
		texts = append(texts, text)
	}
	tmpl, err := BuildTemplate(&shape, texts, pol, opts)
	return tmpl, &shape, err
}

var errNoShape = &testError{"no shape"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

// analyzeFresh is what the session does without a template.
func analyzeFresh(t testing.TB, pol *config.Policy, opts Options, sql string) (*Query, string, error) {
	t.Helper()
	text, ok := parseForTemplate(t, sql)
	if !ok {
		t.Fatalf("%s: does not parse", sql)
	}
	opts.Casts = text.Casts
	q, err := Analyze(text.Stmt, pol, opts)
	if err != nil {
		return nil, "", err
	}
	canonical, err := Canonical(text.Stmt)
	if err != nil {
		t.Fatal(err)
	}
	return q, canonical, nil
}

// templateQueries are queries beyond the golden cases with slots in every
// position a shape may have them and many it may not.
var templateQueries = []string{
	`SELECT COUNT(*) FROM visits WHERE patient_id = 42`,
	`SELECT COUNT(*), SUM(cost) FROM visits WHERE clinic_id = 7 AND nights >= 3`,
	`SELECT AVG(cost) FROM visits WHERE nights BETWEEN 2 AND 9 OR clinic_id IN (3, 4, 5)`,
	`SELECT COUNT(*) FROM visits WHERE clinic_id NOT IN (12, 13) AND nights <> 4`,
	`SELECT COUNT(*) FROM visits WHERE 7 < nights AND nights < 30`,
	`SELECT COUNT(*) FROM visits WHERE nights = 3 AND clinic_id = 3`,
	`SELECT COUNT(*) FROM visits WHERE nights = 3 AND clinic_id = 4 LIMIT 3`,
	`SELECT diagnosis, COUNT(*) FROM visits WHERE clinic_id = 5 GROUP BY diagnosis`,
	`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id = 5 GROUP BY clinic_id`,
	`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id IN (5, 6) GROUP BY clinic_id`,
	`SELECT region, COUNT(*) FROM visits WHERE nights > 2 GROUP BY region`,
	`SELECT diagnosis, COUNT(*) FROM visits WHERE nights > 2 GROUP BY diagnosis HAVING COUNT(*) > 10`,
	`SELECT diagnosis, COUNT(*) FROM visits WHERE nights > 2 GROUP BY diagnosis ORDER BY 2 DESC LIMIT 5`,
	`SELECT COUNT(CASE WHEN nights > 3 THEN 1 END) FROM visits WHERE clinic_id = 9`,
	`SELECT SUM(CASE WHEN clinic_id = 2 THEN cost ELSE 0 END) FROM visits`,
	`SELECT COUNT(*) FROM visits WHERE nights + 2 > 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 2::int`,
	`SELECT COUNT(*) FROM visits WHERE nights = -5`,
	`SELECT COUNT(*) FROM visits WHERE clinic_id IN (SELECT clinic_id FROM clinics WHERE clinic_id > 5)`,
	`SELECT COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id AND c.clinic_id > 3 WHERE v.nights = 4`,
	`SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id WHERE v.nights = 4 GROUP BY c.city`,
	`SELECT COUNT(*) FROM visits WHERE 2 = 3`,
	`SELECT COUNT(*) FROM visits WHERE nights = 2 AND 5 = 5`,
	`SELECT COUNT(*) FROM visits WHERE visit_date >= '2024-06-01' AND nights = 12`,
	`SELECT COUNT(*) FROM visits WHERE note = '5' AND nights = 5`,
	`SELECT COUNT(*) FROM visits /* 5 */ WHERE nights = 5 -- 6`,
	`SELECT COUNT(*) FROM "visits" WHERE "nights" = 14`,
	`SELECT COUNT(*) FROM visits WHERE nights = 007`,
	`SELECT COUNT(*) FROM visits WHERE nights = 2147483647`,
	`SELECT COUNT(*) FROM visits WHERE nights = 2147483648`,
	`SELECT COUNT(*) FROM visits WHERE nights = 1 AND clinic_id = 0`,
	`SELECT COUNT(*) FROM visits WHERE nights = 2.5`,
	`SELECT "source"."n" FROM (SELECT COUNT(*) AS "n" FROM visits WHERE nights = 8) AS "source"`,
	`SELECT date_trunc('month', visit_date) AS m, COUNT(*) FROM visits WHERE clinic_id = 4 GROUP BY 1`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FROM visits WHERE nights = 3`,
	`SELECT COUNT(*) FROM people WHERE age > 17 AND age <= 65`,
	`SELECT sex, AVG(income) FROM people WHERE age BETWEEN 18 AND 64 GROUP BY sex`,
	`SELECT COUNT(DISTINCT patient_id) FROM visits WHERE clinic_id = 11`,
	// From the review of the change: joins, DISTINCT, constants equal to
	// slots, every column type, comments and quoting.
	`SELECT COUNT(*) FROM visits v LEFT JOIN clinics c ON c.clinic_id = v.clinic_id WHERE c.clinic_id = 5`,
	`SELECT COUNT(*) FROM visits v LEFT JOIN clinics c ON c.clinic_id = v.clinic_id WHERE c.clinic_id IS NULL AND v.nights = 5`,
	`SELECT COUNT(*) FROM visits JOIN clinics USING (clinic_id) WHERE clinic_id = 5`,
	`SELECT city, COUNT(*) FROM visits JOIN clinics USING (clinic_id) WHERE clinic_id = 5 GROUP BY city`,
	`SELECT c.name, COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id WHERE v.nights = 5 GROUP BY c.name`,
	`SELECT COUNT(*) FROM visits WHERE patient_id = 42 AND patient_id <> 43`,
	`SELECT COUNT(*), SUM(nights), AVG(nights) FROM visits WHERE nights > 2 AND nights < 9`,
	`SELECT MIN(nights), MAX(cost) FROM visits WHERE clinic_id = 5`,
	`SELECT STDDEV(cost), VARIANCE(cost) FROM visits WHERE clinic_id = 5`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cost) FROM visits WHERE clinic_id = 5`,
	`SELECT diagnosis, percentile_disc(0.9) WITHIN GROUP (ORDER BY cost) FROM visits WHERE clinic_id = 5 GROUP BY diagnosis`,
	`SELECT width_bucket(nights, 0, 10, 5) AS b, COUNT(*) FROM visits WHERE clinic_id = 5 GROUP BY 1`,
	`SELECT COUNT(*) FROM visits WHERE nights IN (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)`,
	// DISTINCT groups: no GROUP BY in the AST
	`SELECT DISTINCT clinic_id, region FROM visits WHERE clinic_id = 5`,
	`SELECT DISTINCT clinic_id, region FROM visits WHERE clinic_id IN (5, 6)`,
	`SELECT DISTINCT diagnosis, clinic_id, region FROM visits WHERE clinic_id = 7 AND nights > 3`,
	// joined public table with keys
	`SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id WHERE c.clinic_id = 5 GROUP BY c.city`,
	`SELECT c.clinic_id, COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id WHERE v.clinic_id = 5 GROUP BY c.clinic_id`,
	`SELECT c.city, COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id WHERE v.clinic_id = 5 GROUP BY 1`,
	// non-slot constants equal to slots
	`SELECT COUNT(CASE WHEN 5 = nights THEN 1 END) FROM visits WHERE clinic_id = 6`,
	`SELECT SUM(CASE nights WHEN 5 THEN cost END), SUM(CASE nights WHEN 6 THEN cost END) FROM visits WHERE clinic_id = 7`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND 6 = clinic_id`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 OR 5 = clinic_id`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND nights <> -5`,
	`SELECT SUM(CASE WHEN 3 < nights THEN cost ELSE 0 END) FROM visits WHERE nights < 9`,
	`SELECT COUNT(*) FROM visits WHERE (nights = 5) AND ((clinic_id IN (5, 5, 6)))`,
	`SELECT COUNT(*) FROM visits WHERE nights BETWEEN 9 AND 2`,
	`SELECT COUNT(*) FROM visits WHERE nights NOT BETWEEN 3 AND 4`,
	`SELECT COUNT(*) FROM visits WHERE NOT (nights = 3)`,
	`SELECT COUNT(*) FROM visits WHERE nights = 3 AND note IS NULL`,
	`SELECT COUNT(*) FROM visits WHERE nights IS NOT NULL AND clinic_id = 3`,
	`SELECT COUNT(*) FROM visits WHERE patient_id = 42 OR patient_id = 43`,
	`SELECT COUNT(*) FROM visits WHERE patient_id IN (42, 43, 44)`,
	`SELECT COUNT(DISTINCT patient_id) FROM visits WHERE patient_id > 100`,
	`SELECT COUNT(DISTINCT clinic_id) FROM visits WHERE clinic_id > 3`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY nights) FROM visits WHERE nights > 3`,
	`SELECT diagnosis, AVG(cost) FROM visits WHERE nights > 3 GROUP BY diagnosis HAVING AVG(cost) > 5`,
	`SELECT diagnosis, COUNT(*) AS n FROM visits WHERE nights > 3 GROUP BY diagnosis ORDER BY n DESC LIMIT 2`,
	`SELECT diagnosis, COUNT(*) FROM visits WHERE nights > 3 GROUP BY diagnosis LIMIT 2 OFFSET 1`,
	`SELECT COUNT(*) FROM visits WHERE stamp > 1000000 AND nights < 3`,
	`SELECT SUM(stamp) FROM visits WHERE stamp = 1000000`,
	`SELECT SUM(income) FROM people WHERE income < 200000 AND age > 30`,
	`SELECT COUNT(*) FROM people WHERE age = 2147483648`,
	`SELECT k, COUNT(*) FROM extremes WHERE patient_id = 9223372036854775807 GROUP BY k`,
	`SELECT COUNT(*) FROM extremes WHERE k = 9223372036854775807`,
	`SELECT COUNT(*) FROM extremes WHERE k > 2 AND k < 3`,
	`SELECT COUNT(*) FROM surveys WHERE married = 2`,
	`SELECT COUNT(*) FROM surveys WHERE answered_on = 20240101`,
	`SELECT COUNT(*) FROM visits WHERE visit_date > 20240101`,
	`SELECT COUNT(*) FROM visits WHERE note = 5`,
	`SELECT COUNT(*) FROM visits WHERE diagnosis = 5`,
	`SELECT COUNT(*) FROM visits WHERE region = 5`,
	`SELECT ward, COUNT(*) FROM stays WHERE nights > 3 GROUP BY ward`,
	`SELECT city, SUM(km) FROM trips WHERE km > 3 GROUP BY city`,
	`SELECT ward, COUNT(*) FROM legs WHERE patient_id > 3 GROUP BY ward`,
	`SELECT city, COUNT(*) FROM tolls WHERE patient_id > 3 GROUP BY city`,
	`SELECT drug, SUM(mg) FROM doses WHERE admission_id = 5 GROUP BY drug`,
	`SELECT drug, SUM(mg) FROM doses d JOIN admissions a ON a.admission_id = d.admission_id WHERE a.admission_id = 5 GROUP BY drug`,
	`SELECT COUNT(*) FROM doses d JOIN admissions a ON a.admission_id = d.admission_id WHERE a.patient_id = 5`,
	`SELECT tier, SUM(spend) FROM members WHERE age > 30 GROUP BY tier`,
	`SELECT tier, COUNT(*) FROM members WHERE member_id = 5 GROUP BY tier`,
	`SELECT city, COUNT(*) FROM members WHERE clinic_id = 5 GROUP BY city`,
	`SELECT COUNT(*) FROM visits v JOIN stays s ON s.patient_id = v.patient_id WHERE s.nights = 4 AND v.nights = 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 4 AND nights = 4`,
	`SELECT COUNT(*) FROM visits WHERE nights = 4 AND nights = 5`,
	`SELECT COUNT(*) FROM visits WHERE ((nights > 4)) OR ((nights < 2 AND clinic_id = 2))`,
	`SELECT COUNT(*) FROM visits WHERE nights = 0042`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND EXISTS (SELECT 1 FROM clinics c WHERE c.clinic_id = visits.clinic_id)`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND clinic_id IN (SELECT clinic_id FROM clinics)`,
	`SELECT COUNT(*), AVG(score) FROM visits WHERE score > 3 AND score < 4`,
	`SELECT SUM(cost) FROM visits WHERE cost >= 1000 AND cost <= 5000`,
	`SELECT region, COUNT(*) FROM visits WHERE clinic_id = 2 GROUP BY region`,
	`SELECT date_trunc('month', visit_date), COUNT(*) FROM visits WHERE clinic_id = 4 GROUP BY 1`,
	`SELECT CASE WHEN nights > 5 THEN 'long' ELSE 'short' END AS k, COUNT(*) FROM visits WHERE clinic_id = 4 GROUP BY 1`,
	`SELECT COUNT(*) FILTER (WHERE nights > 3) FROM visits WHERE clinic_id = 4`,
	`SELECT COUNT(*) FROM visits WHERE clinic_id = 2 LIMIT 2`,
	`SELECT COUNT(*) FROM visits WHERE nights < 5 ORDER BY 1`,
	`SELECT COUNT(*) FROM visits WHERE nights = +5`,
	`SELECT COUNT(*) FROM visits WHERE nights = - 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = (5)`,
	`SELECT COUNT(*) FROM visits WHERE nights IN ((5), 6)`,
	`SELECT COUNT(*) FROM visits WHERE nights = ALL (SELECT 5)`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 IS TRUE`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 = TRUE`,
	`SELECT COUNT(*) FROM visits WHERE (nights, clinic_id) = (5, 6)`,
	`SELECT COUNT(*) FROM visits WHERE (nights, clinic_id) IN ((5, 6))`,
	`SELECT COUNT(*) FROM visits WHERE coalesce(nights, 5) = 6`,
	`SELECT COUNT(*) FROM visits WHERE nights IN (5) AND clinic_id NOT IN (6)`,
	`SELECT COUNT(*) FROM visits WHERE nights <= 5 AND nights >= 2`,
	`SELECT COUNT(*) FROM visits WHERE nights != 5`,
	`SELECT COUNT(*) FROM visits WHERE visits.nights = 5`,
	`SELECT COUNT(*) FROM visits v WHERE v.nights = 5 AND v.clinic_id = 7`,
	`SELECT COUNT(*) FROM public.visits WHERE nights = 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 -- comment 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 /* = 6 */ AND clinic_id = 6`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND note = E'= 6'`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND note = $tag$ = 6 $tag$`,
	`SELECT COUNT(*) AS "n = 5" FROM visits WHERE nights = 5`,
	`SELECT COUNT(*) FROM visits t1 WHERE t1.nights = 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND nights = 5.0`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND cost = 5`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND cost = '5'`,
	`SELECT COUNT(*) FROM visits WHERE nights = 5 AND note = '5'`,
	`SELECT COUNT(*) FROM visits WHERE nights = '5' AND clinic_id = 5`,
	`SELECT COUNT(*), SUM(CASE WHEN nights = -5 THEN 1 ELSE 0 END) FROM visits WHERE clinic_id = 5`,
	`SELECT SUM(CASE nights WHEN 3 THEN 10 WHEN 4 THEN 20 END) FROM visits WHERE clinic_id = 10`,
	`SELECT SUM(CASE nights WHEN 3 THEN 10 ELSE 20 END) FROM visits WHERE clinic_id = 20`,
	`SELECT COUNT(*) FROM visits WHERE nights > 5 HAVING COUNT(*) > 5`,
	`SELECT COUNT(*) FROM visits WHERE clinic_id = 5 GROUP BY clinic_id`,
	`SELECT COUNT(*) FROM visits WHERE clinic_id = 2 GROUP BY region`,
	`SELECT region, COUNT(*) FROM visits WHERE clinic_id = 2 GROUP BY region ORDER BY region`,
}

// TestTemplateMatchesAnalysis is the template's contract: for every query
// of the golden cases and templateQueries that has a template, each text
// of its shape gets from the template exactly the plan and canonical text
// a full analysis gives it, under four policies (public key lists on the
// joined table, units that are keys, bounds chosen per query), three
// dialects and the options that change a plan. Values are drawn at
// random, from the text's other numbers (a slot equal to a constant
// elsewhere), from the policy's bounds and keys and from the edges of the
// slot range.
func TestTemplateMatchesAnalysis(t *testing.T) {
	var queries []string
	for _, c := range readCases(t) {
		queries = append(queries, c.sql)
	}
	queries = append(queries, templateQueries...)
	rng := rand.New(rand.NewPCG(1, 2))
	numbers := regexp.MustCompile(`\d+`)
	templates := 0
	for name, pol := range templatePolicies(t) {
		for _, d := range []Dialect{Postgres, MySQL, SQLite} {
			for _, opts := range []Options{
				{Dialect: d, Epsilon: 1, BindConstants: true},
				{Dialect: d, Epsilon: 1, BindConstants: true, ReportBias: true},
				{Dialect: d, Epsilon: 1, BindConstants: true, BiasBounds: true},
				{Dialect: d, Epsilon: 1, BindConstants: true, R2T: true},
			} {
				for _, sql := range queries {
					tmpl, shape, err := templateOf(t, pol, opts, sql)
					if err != nil {
						continue
					}
					templates++
					candidates := []int64{minSlot, minSlot + 1, 5, 10, 12, 1000, 1001, 200000, 200001, 1_000_000, maxSlot, maxSlot - 1,
						1 << 16, 1<<31 - 1, 1 << 31, 1 << 32, ProbeBases[0], ProbeBases[1], ProbeBases[2]}
					for _, n := range numbers.FindAllString(sql, -1) {
						if v, err := strconv.ParseInt(n, 10, 64); err == nil && v >= minSlot {
							candidates = append(candidates, v)
						}
					}
					for range 12 {
						values := distinctValues(rng, len(shape.Values), candidates)
						text := shape.Text(values)
						again, ok := PostgresShape(text)
						if !ok || again.Key != shape.Key {
							t.Fatalf("%s: the text with %v has another shape", sql, values)
						}
						got, canonical, err := tmpl.Instantiate(&again)
						if err != nil {
							t.Fatalf("%s with %v: %v", text, values, err)
						}
						want, wantCanonical, err := analyzeFresh(t, pol, opts, text)
						if err != nil {
							t.Fatalf("[%s %s %+v] %s: the template answers a text the analysis refuses: %v", name, d.Name(), opts, text, err)
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("[%s %s %+v] %s: the template's plan differs from the analysis':\n%s", name, d.Name(), opts, text, diffPlans(got.Plan, want.Plan))
						}
						if canonical != wantCanonical {
							t.Fatalf("%s: canonical text %q, want %q", text, canonical, wantCanonical)
						}
					}
				}
			}
		}
	}
	if templates < 500 {
		t.Fatalf("only %d templates: the test checks too little", templates)
	}
	t.Logf("%d templates checked", templates)
}

// templatePolicies are the test policy and variants whose analysis reads
// more of the policy: key lists on the public table joined, units that
// are their table's key, and bounds chosen per query (R2T, auto).
func templatePolicies(t *testing.T) map[string]*config.Policy {
	pol := testPolicy(t)
	withKeys := *pol
	withKeys.PublicTables = slices.Clone(pol.PublicTables)
	for i := range withKeys.PublicTables {
		withKeys.PublicTables[i].Keys = map[string][]string{"clinic_id": {"1", "2", "3", "5"}, "city": {"a", "b"}}
	}
	auto := withTables(pol, func(t *config.ProtectedTable) {
		if !t.IsRowPrivacy() {
			t.MaxRowsPerUnit, t.MaxTotalRowsPerUnit = config.RowsAuto, 0
		}
	})
	return map[string]*config.Policy{"plain": pol, "public keys": &withKeys, "key units": withKeyUnits(pol), "auto bounds": auto}
}

// diffPlans names the fields in which two plans differ, with both values.
func diffPlans(a, b *Plan) string {
	if a == nil || b == nil {
		return fmt.Sprintf("plans %v and %v", a, b)
	}
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s:\n  got  %+v\n  want %+v", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface()))
		}
	}
	return strings.Join(out, "\n")
}

// distinctValues draws n distinct slot values, each from candidates or
// from the whole slot range.
func distinctValues(rng *rand.Rand, n int, candidates []int64) []int64 {
	for {
		out := make([]int64, n)
		for i := range out {
			if rng.IntN(2) == 0 {
				out[i] = candidates[rng.IntN(len(candidates))]
			} else {
				out[i] = minSlot + rng.Int64N(maxSlot-minSlot)
			}
		}
		if seen := map[int64]bool{}; !slices.ContainsFunc(out, func(v int64) bool { dup := seen[v]; seen[v] = true; return dup }) {
			return out
		}
	}
}

// TestTemplateAdmits pins which queries get a template: filters of rows by
// integer constants do; a constant anywhere else, or one whose value the
// analysis reads, makes the shape analyzed in full each time.
func TestTemplateAdmits(t *testing.T) {
	pol := testPolicy(t)
	opts := Options{Dialect: Postgres, Epsilon: 1, BindConstants: true}
	for _, c := range []struct {
		sql  string
		want bool
	}{
		{`SELECT COUNT(*) FROM visits WHERE patient_id = 42`, true},
		{`SELECT COUNT(*), SUM(cost) FROM visits WHERE clinic_id = 7 AND nights >= 3`, true},
		{`SELECT AVG(cost) FROM visits WHERE nights BETWEEN 2 AND 9 OR clinic_id IN (3, 4, 5)`, true},
		{`SELECT COUNT(*) FROM visits WHERE clinic_id NOT IN (12, 13) AND nights <> 4`, true},
		{`SELECT COUNT(*) FROM visits WHERE 7 < nights`, false}, // constant first: not a slot
		{`SELECT region, COUNT(*) FROM visits WHERE nights > 2 GROUP BY region`, true},
		{`SELECT sex, AVG(income) FROM people WHERE age BETWEEN 18 AND 64 GROUP BY sex`, true},
		// The analysis reads these values, or they are not filters.
		{`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id = 5 GROUP BY clinic_id`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = 3 LIMIT 3`, true}, // LIMIT 3 stays in the shape
		{`SELECT clinic_id, COUNT(*) FROM visits WHERE clinic_id IN (5, 6) GROUP BY 1`, false},
		{`SELECT DISTINCT clinic_id, region FROM visits WHERE clinic_id = 5`, false}, // DISTINCT groups
		{`SELECT DISTINCT region FROM visits WHERE clinic_id = 5`, true},
		// The first text's values do not matter: this one's slot equals
		// another constant.
		{`SELECT COUNT(*) FROM visits WHERE nights = 5 AND cost = '5'`, true},
		{`SELECT c, COUNT(*) FROM (SELECT clinic_id AS c FROM visits WHERE nights = 5) AS s GROUP BY c`, false},
		{`WITH s AS (SELECT clinic_id AS c FROM visits) SELECT COUNT(*) FROM s WHERE c = 5`, false},
		{`SELECT diagnosis, COUNT(*) FROM visits WHERE nights > 2 GROUP BY diagnosis HAVING COUNT(*) > 10`, false},
		{`SELECT SUM(CASE WHEN clinic_id = 2 THEN cost ELSE 0 END) FROM visits`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights + 2 > 5`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = 2::int`, false},
		{`SELECT COUNT(*) FROM visits WHERE clinic_id IN (SELECT clinic_id FROM clinics WHERE clinic_id > 5)`, false},
		{`SELECT COUNT(*) FROM visits v JOIN clinics c ON c.clinic_id = v.clinic_id AND c.clinic_id > 3`, false},
		{`SELECT COUNT(*) FROM visits WHERE 2 = 3`, false},
		{`SELECT COUNT(*) FROM visits /* 5 */ WHERE nights > 1`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = 1 AND clinic_id = 0`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = 2147483648`, true},
		{`SELECT COUNT(*) FROM visits WHERE nights = 9223372036854775808`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = 2.5`, false},
		{`SELECT COUNT(*) FROM visits WHERE nights = $1`, false},
		{`SELECT name FROM clinics WHERE clinic_id = 5`, false}, // public: the passthrough memo's
		{`SELECT COUNT(*) FROM visits WHERE nosuch = 5`, false},
	} {
		tmpl, _, err := templateOf(t, pol, opts, c.sql)
		if got := tmpl != nil; got != c.want {
			t.Errorf("%s: template %v (%v), want %v", c.sql, got, err, c.want)
		}
	}
}

// TestPostgresShape pins which constants are slots and that a shape's text
// with its own values is the text.
func TestPostgresShape(t *testing.T) {
	for _, c := range []struct {
		sql    string
		values []int64 // nil: no shape
		key    string  // with NUL written as #
	}{
		{`SELECT COUNT(*) FROM t WHERE a = 42`, []int64{42}, `SELECT COUNT(*) FROM t WHERE a = #`},
		{`SELECT COUNT(*) FROM t WHERE a >= 2 AND b<>3 AND c <= 4`, []int64{2, 3, 4}, `SELECT COUNT(*) FROM t WHERE a >= # AND b<># AND c <= #`},
		{`SELECT 1 FROM t WHERE a IN (5, 6) AND b BETWEEN 7 AND 8`, []int64{5, 6, 7, 8}, `SELECT 1 FROM t WHERE a IN (#, #) AND b BETWEEN # AND #`},
		{`SELECT COUNT(*) FROM t WHERE a = 5 AND b = 5`, []int64{5}, `SELECT COUNT(*) FROM t WHERE a = # AND b = #`},
		{`SELECT COUNT(*) FROM t WHERE a = 1 OR b = 0`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = 9223372036854775807`, []int64{9223372036854775807}, `SELECT COUNT(*) FROM t WHERE a = #`},
		{`SELECT COUNT(*) FROM t WHERE a = 9223372036854775808`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = 5.5 OR a = 5e3`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = '5' OR "b=5" = 7`, []int64{7}, `SELECT COUNT(*) FROM t WHERE a = '5' OR "b=5" = #`},
		{`SELECT COUNT(*) FROM t WHERE a = $$ = 5 $$ AND b = 6`, []int64{6}, `SELECT COUNT(*) FROM t WHERE a = $$ = 5 $$ AND b = #`},
		{`SELECT COUNT(*) FROM t /* = 5 */ WHERE -- = 6` + "\n" + `a = 7`, []int64{7}, "SELECT COUNT(*) FROM t /* = 5 */ WHERE -- = 6\na = #"},
		{`SELECT COUNT(*) FROM t WHERE a = 5::int OR a = -6 OR a + 7 > b LIMIT 8`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = $1 AND b = 5`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = 'unterminated`, nil, ``},
		{`SELECT COUNT(*) FROM t WHERE a = 0042`, []int64{42}, `SELECT COUNT(*) FROM t WHERE a = #`},
	} {
		shape, ok := PostgresShape(c.sql)
		if ok != (c.values != nil) {
			t.Errorf("%s: shape %v, want %v", c.sql, ok, c.values != nil)
			continue
		}
		if !ok {
			continue
		}
		if !reflect.DeepEqual(shape.Values, c.values) {
			t.Errorf("%s: values %v, want %v", c.sql, shape.Values, c.values)
		}
		key, _, _ := strings.Cut(shape.Key, "\x01")
		if got := strings.ReplaceAll(key, "\x00", "#"); got != c.key {
			t.Errorf("%s: key %q, want %q", c.sql, got, c.key)
		}
		if !strings.Contains(c.sql, "0042") && shape.Text(shape.Values) != c.sql {
			t.Errorf("%s: the shape's text with its values is %q", c.sql, shape.Text(shape.Values))
		}
	}
}

// FuzzTemplate is TestTemplateMatchesAnalysis on any text: when the text's
// shape has a template, the text with other values in its slots gets from
// it exactly what a full analysis gives; and a shape's text with its own
// values has the same shape.
func FuzzTemplate(f *testing.F) {
	for _, c := range readCorpusQueries(f) {
		f.Add(c, uint64(7))
	}
	for _, q := range templateQueries {
		f.Add(q, uint64(1<<40))
	}
	pol := testPolicy(f)
	f.Fuzz(func(t *testing.T, in string, seed uint64) {
		shape, ok := PostgresShape(in)
		if !ok {
			return
		}
		again, ok := PostgresShape(shape.Text(shape.Values))
		if !ok || again.Key != shape.Key || !reflect.DeepEqual(again.Values, shape.Values) {
			t.Fatalf("%q: the shape's own text has another shape", in)
		}
		for _, d := range []Dialect{Postgres, MySQL} {
			opts := Options{Dialect: d, Epsilon: 1, BindConstants: true}
			tmpl, _, err := templateOf(t, pol, opts, in)
			if err != nil {
				return
			}
			rng := rand.New(rand.NewPCG(seed, 3))
			values := distinctValues(rng, len(shape.Values), shape.Values)
			text := shape.Text(values)
			other, ok := PostgresShape(text)
			if !ok || other.Key != shape.Key {
				t.Fatalf("%q with %v has another shape", in, values)
			}
			got, canonical, err := tmpl.Instantiate(&other)
			if err != nil {
				t.Fatal(err)
			}
			want, wantCanonical, err := analyzeFresh(t, pol, opts, text)
			if err != nil {
				t.Fatalf("%q: the template answers a text the analysis refuses: %v", text, err)
			}
			if !reflect.DeepEqual(got, want) || canonical != wantCanonical {
				t.Fatalf("%q (%s): the template's plan or canonical text differs from the analysis'", text, d.Name())
			}
		}
	})
}

// paramTemplateOf builds the template of an execution's shape the way the
// session does: the probes bound into the statement.
func paramTemplateOf(t testing.TB, pol *config.Policy, opts Options, sql string, values []any, types []sqltypes.Type) (*Template, *Shape, error) {
	t.Helper()
	parsed, err := ParseStatement(sql, PostgresFrontEnd)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	shape, ok := ParamShape(sql, parsed.Params, values, types)
	if !ok {
		return nil, nil, errNoShape
	}
	var texts []TemplateText
	for _, base := range ProbeBases {
		probe := shape.Probe(base)
		text, _, err := boundText(t, sql, shape.ProbeParams(values, probe), types)
		if err != nil {
			return nil, nil, err
		}
		text.Values = probe
		texts = append(texts, text)
	}
	tmpl, err := BuildTemplate(&shape, texts, pol, opts)
	return tmpl, &shape, err
}

// boundText parses sql and binds values into it, as ExecutePrepared does.
func boundText(t testing.TB, sql string, values []any, types []sqltypes.Type) (TemplateText, *Parsed, error) {
	t.Helper()
	parsed, err := ParseStatement(sql, PostgresFrontEnd)
	if err != nil || len(parsed.Stmts) != 1 {
		t.Fatalf("%s: %v", sql, err)
	}
	if err := BindParams(parsed.Stmts[0], parsed.Params, values, types); err != nil {
		return TemplateText{}, nil, err
	}
	var casts CastLookup
	if parsed.Casts != nil {
		casts = parsed.CastOf
	}
	return TemplateText{Stmt: parsed.Stmts[0], Casts: casts}, parsed, nil
}

// TestParamTemplateMatchesAnalysis is TestTemplateMatchesAnalysis for
// prepared statements: every query with slots, its slots made parameters
// ($n, one per class), executed with integer values (Go int64s, or text
// for parameters declared integers) gets from its execution's template
// what binding them and a full analysis give.
func TestParamTemplateMatchesAnalysis(t *testing.T) {
	queries := templateQueries
	for _, c := range readCases(t) {
		queries = append(queries, c.sql)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pol := testPolicy(t)
	templates := 0
	for _, d := range []Dialect{Postgres, MySQL} {
		opts := Options{Dialect: d, Epsilon: 1, BindConstants: true}
		for _, sql := range queries {
			shape, ok := PostgresShape(sql)
			if !ok {
				continue
			}
			var b strings.Builder
			for n, c := range shape.slotClass {
				b.WriteString(shape.pieces[n] + "$" + strconv.Itoa(c+1))
			}
			b.WriteString(shape.pieces[len(shape.pieces)-1])
			prepared := b.String()
			parsedPrepared, err := ParseStatement(prepared, PostgresFrontEnd)
			if err != nil {
				t.Fatalf("%s: %v", prepared, err)
			}
			// Half the executions send text for integer parameters.
			typed := func(values []int64, asText bool) ([]any, []sqltypes.Type) {
				out, types := make([]any, len(values)), make([]sqltypes.Type, len(values))
				for i, v := range values {
					out[i], types[i] = v, sqltypes.Int8
					if asText {
						out[i], types[i] = strconv.FormatInt(v, 10), sqltypes.Int4
					}
				}
				return out, types
			}
			for _, asText := range []bool{false, true} {
				values, types := typed(shape.Values, asText)
				tmpl, pshape, err := paramTemplateOf(t, pol, opts, prepared, values, types)
				if err != nil {
					continue
				}
				templates++
				for range 8 {
					values, types := typed(distinctValues(rng, len(shape.Values), shape.Values), asText)
					again, ok := ParamShape(prepared, parsedPrepared.Params, values, types)
					if !ok || again.Key != pshape.Key {
						t.Fatalf("%s with %v: another shape", prepared, values)
					}
					got, canonical, err := tmpl.Instantiate(&again)
					if err != nil {
						t.Fatal(err)
					}
					text, _, err := boundText(t, prepared, values, types)
					if err != nil {
						t.Fatal(err)
					}
					o := opts
					o.Casts = text.Casts
					want, err := Analyze(text.Stmt, pol, o)
					if err != nil {
						t.Fatalf("%s %v: the template answers what the analysis refuses: %v", prepared, values, err)
					}
					wantCanonical, _ := Canonical(text.Stmt)
					if !reflect.DeepEqual(got, want) || canonical != wantCanonical {
						t.Fatalf("[%s] %s %v: the template's plan differs from the analysis':\n%s\ncanonical %q\n     want %q", d.Name(), prepared, values, diffPlans(got.Plan, want.Plan), canonical, wantCanonical)
					}
				}
			}
		}
	}
	if templates < 50 {
		t.Fatalf("only %d templates: the test checks too little", templates)
	}
	t.Logf("%d templates checked", templates)
}

// TestParamShape pins which parameters are slots and what the key holds.
func TestParamShape(t *testing.T) {
	const sql = `SELECT COUNT(*) FROM t WHERE a = $1 AND b = $2 AND c = $1`
	i8, i4, txt := sqltypes.Int8, sqltypes.Int4, sqltypes.Text
	for _, c := range []struct {
		values []any
		types  []sqltypes.Type
		want   []int64 // class values; nil: no shape
		slots  []int
	}{
		{[]any{int64(5), int64(6)}, []sqltypes.Type{i8, i8}, []int64{5, 6}, []int{0, 1, 0}},
		{[]any{int64(5), int64(5)}, []sqltypes.Type{i8, i8}, []int64{5}, []int{0, 0, 0}},
		{[]any{"7", int64(1)}, []sqltypes.Type{i4, i8}, []int64{7}, []int{0, 0}},
		{[]any{"7", "8"}, []sqltypes.Type{txt, sqltypes.Unknown}, nil, nil},
		{[]any{int64(0), int64(-3)}, []sqltypes.Type{i8, i8}, nil, nil},
		{[]any{1.5, nil}, []sqltypes.Type{sqltypes.Float8, i8}, nil, nil},
	} {
		shape, ok := ParamShape(sql, []int{1, 2, 1}, c.values, c.types)
		if ok != (c.want != nil) || ok && (!reflect.DeepEqual(shape.Values, c.want) || !reflect.DeepEqual(shape.slotClass, c.slots)) {
			t.Errorf("%v: shape %v %v %v, want %v %v", c.values, ok, shape.Values, shape.slotClass, c.want, c.slots)
		}
	}
	// The key tells apart what binds differently: the other parameters'
	// values (quoted, so that none passes for another), the types, equal
	// slot values.
	key := func(values []any, types []sqltypes.Type) string {
		s, _ := ParamShape(sql, []int{1, 2, 1}, values, types)
		return s.Key
	}
	same := key([]any{int64(5), "x"}, []sqltypes.Type{i8, txt})
	for _, other := range []string{
		key([]any{int64(5), "y"}, []sqltypes.Type{i8, txt}),
		key([]any{int64(5), "x"}, []sqltypes.Type{i8, sqltypes.Unknown}),
		key([]any{"5", "x"}, []sqltypes.Type{i4, txt}),
		key([]any{int64(5), `x";s`}, []sqltypes.Type{i8, txt}),
	} {
		if other == same {
			t.Errorf("two executions that bind differently share the key %q", same)
		}
	}
	// Long values, long texts and many slots have no shape.
	if _, ok := ParamShape(sql, []int{1, 2, 1}, []any{int64(5), strings.Repeat("x", maxShapeText)}, []sqltypes.Type{i8, txt}); ok {
		t.Error("a parameter of 4 KiB has a shape")
	}
	if _, ok := PostgresShape("SELECT COUNT(*) FROM t WHERE a = 5 " + strings.Repeat(" ", maxShapeText)); ok {
		t.Error("a text over 4 KiB has a shape")
	}
	if _, ok := PostgresShape("SELECT COUNT(*) FROM t WHERE a IN (2" + strings.Repeat(", 3", maxSlots) + ")"); ok {
		t.Errorf("a text of %d slots has a shape", maxSlots+1)
	}
	if key([]any{int64(9), "x"}, []sqltypes.Type{i8, txt}) != same {
		t.Error("another slot value changed the key")
	}
	if key([]any{int64(5), int64(5)}, []sqltypes.Type{i8, i8}) == key([]any{int64(5), int64(6)}, []sqltypes.Type{i8, i8}) {
		t.Error("equal and distinct slot values share a key")
	}
}
