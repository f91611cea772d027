package rewrite

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestBindableConstants(t *testing.T) {
	for _, c := range []struct {
		sql   string
		value string
		cast  string
		ok    bool
	}{
		{"42", "42", "::integer", true},
		{"-5", "-5", "::integer", true},
		// PostgreSQL 15 types -2147483648 integer, 2147483648 bigint.
		{"-2147483648", "-2147483648", "::integer", true},
		{"2147483648", "2147483648", "::bigint", true},
		{"-9223372036854775808", "-9223372036854775808", "::bigint", true},
		{"9223372036854775808", "9223372036854775808", "::numeric", true},
		{"1.50", "1.50", "::numeric", true},
		{".5", ".5", "::numeric", true},
		{"1e+06", "1e+06", "::numeric", true},
		{"2E-3", "2E-3", "::numeric", true},
		{"'J06'", "J06", "", true},
		{"''", "", "", true},
		{"'it''s'", "it's", "", true},
		{"''''", "'", "", true},
		// Not constants the emitter writes alone: kept as written.
		{"NULL", "", "", false},
		{"TRUE", "", "", false},
		{"'a' || 'b'", "", "", false},
		{"'a'b'", "", "", false},
		{"1e", "", "", false},
		{"-", "", "", false},
		{".", "", "", false},
		{"+Inf", "", "", false},
		{"0x1F", "", "", false},
		{`"dp_u"`, "", "", false},
	} {
		got, ok := bindable(c.sql)
		if ok != c.ok || ok && (got.value != c.value || got.cast != c.cast) {
			t.Errorf("bindable(%s) = %+v, %v; want {%s %s}, %v", c.sql, got, ok, c.value, c.cast, c.ok)
		}
	}
}

func TestConstantTableInlineAndBind(t *testing.T) {
	var tab constantTable
	age, name, again := tab.mark("18"), tab.mark("'it''s'"), tab.mark("18")
	if age != again {
		t.Errorf("the same constant got two markers, %q and %q", age, again)
	}
	if tab.mark("NULL") != "NULL" {
		t.Error("NULL was marked")
	}
	sql := "SELECT 1 FROM t WHERE (a > " + age + ") AND (b = " + name + ") AND (c < " + again + ")"
	if got, want := tab.inline(sql), "SELECT 1 FROM t WHERE (a > 18) AND (b = 'it''s') AND (c < 18)"; got != want {
		t.Errorf("inline:\n got %s\nwant %s", got, want)
	}
	// Numbered in order of appearance in this SQL, one per occurrence:
	// each takes its type from its own context, as a literal does.
	bound, args := tab.bind("WHERE (b = " + name + ") AND (a > " + age + ") AND (c < " + again + ")")
	if want := "WHERE (b = $1) AND (a > $2::integer) AND (c < $3::integer)"; bound != want {
		t.Errorf("bind:\n got %s\nwant %s", bound, want)
	}
	if !reflect.DeepEqual(args, []any{"it's", "18", "18"}) {
		t.Errorf("bind args = %q", args)
	}
	// A SQL without markers is returned as it is, with no arguments.
	if got, args := tab.bind("SELECT 1"); got != "SELECT 1" || args != nil {
		t.Errorf("bind without markers = %q, %q", got, args)
	}
	// What is no marker of this table stays, so the statement fails
	// rather than run with another constant.
	for _, odd := range []string{"a \x007\x00 b", "a \x00x\x00 b", "a \x000"} {
		if got := tab.inline(odd); got != odd {
			t.Errorf("inline(%q) = %q", odd, got)
		}
	}
}

// Every golden query, planned with its constants bound: no marker is left
// in anything the plan holds, BackendSQL is what the golden files show, and
// Bound numbers its parameters densely, one argument each.
func TestBoundConstantsLeaveNoMarker(t *testing.T) {
	pol := testPolicy(t)
	placeholder := regexp.MustCompile(`\$(\d+)`)
	bound := 0
	for _, c := range readCases(t) {
		sql := c.sql
		for strings.HasPrefix(sql, "-- ") {
			_, sql, _ = strings.Cut(sql, "\n")
		}
		stmts, err := Parse(sql, PostgresFrontEnd)
		if err != nil || len(stmts) != 1 {
			continue
		}
		plain, perr := Analyze(stmts[0], pol, Options{Dialect: Postgres, Epsilon: 1})
		stmts, _ = Parse(sql, PostgresFrontEnd)
		q, err := Analyze(stmts[0], pol, Options{Dialect: Postgres, Epsilon: 1, BindConstants: true})
		if (err == nil) != (perr == nil) {
			t.Errorf("%s: binding changed the outcome: %v against %v", c.name, err, perr)
			continue
		}
		if err != nil {
			if strings.IndexByte(err.Error(), 0) >= 0 {
				t.Errorf("%s: the error holds a marker: %q", c.name, err.Error())
			}
			continue
		}
		if path := findNUL(reflect.ValueOf(q), "query", map[uintptr]bool{}); path != "" {
			t.Errorf("%s: a marker is left in %s", c.name, path)
		}
		if q.Plan == nil {
			continue
		}
		if q.Plan.BackendSQL != plain.Plan.BackendSQL {
			t.Errorf("%s: BackendSQL changed with binding:\n%s\n%s", c.name, q.Plan.BackendSQL, plain.Plan.BackendSQL)
		}
		if q.Plan.Bound == nil {
			continue
		}
		bound++
		seen := map[int]bool{}
		for _, m := range placeholder.FindAllStringSubmatch(q.Plan.Bound.SQL, -1) {
			n, _ := strconv.Atoi(m[1])
			seen[n] = true
		}
		if len(seen) != len(q.Plan.Bound.Args) {
			t.Errorf("%s: %d parameters for %d arguments: %s", c.name, len(seen), len(q.Plan.Bound.Args), q.Plan.Bound.SQL)
		}
		for n := 1; n <= len(q.Plan.Bound.Args); n++ {
			if !seen[n] {
				t.Errorf("%s: $%d is missing: %s", c.name, n, q.Plan.Bound.SQL)
			}
		}
	}
	if bound < 10 {
		t.Errorf("only %d golden queries had constants to bind", bound)
	}
}

// findNUL returns the path to the first string holding a NUL byte in v, or
// "" when there is none.
func findNUL(v reflect.Value, path string, seen map[uintptr]bool) string {
	switch v.Kind() {
	case reflect.String:
		if strings.IndexByte(v.String(), 0) >= 0 {
			return path
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		if v.Kind() == reflect.Pointer {
			if seen[v.Pointer()] {
				return ""
			}
			seen[v.Pointer()] = true
		}
		return findNUL(v.Elem(), path, seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if p := findNUL(v.Field(i), path+"."+v.Type().Field(i).Name, seen); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p := findNUL(v.Index(i), path+"["+strconv.Itoa(i)+"]", seen); p != "" {
				return p
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if p := findNUL(v.MapIndex(k), path+"["+k.String()+"]", seen); p != "" {
				return p
			}
		}
	}
	return ""
}
