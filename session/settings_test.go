package session

import (
	"math"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/sqlerr"
)

func TestMatchSessionCommand(t *testing.T) {
	type want struct {
		kind      commandKind
		value     string
		isDefault bool
		query     string
	}
	for _, tc := range []struct {
		sql  string
		want *want       // nil: not a session command (goes to the parser)
		code sqlerr.Code // set: the command is malformed
	}{
		// SET
		{sql: "SET dpproxy.epsilon = 0.5", want: &want{kind: cmdSet, value: "0.5"}},
		{sql: "set DPPROXY.EPSILON to 0.5;", want: &want{kind: cmdSet, value: "0.5"}},
		{sql: "  SET dpproxy.epsilon=0.5 ;  ", want: &want{kind: cmdSet, value: "0.5"}},
		{sql: "SET SESSION dpproxy.epsilon = '0.25'", want: &want{kind: cmdSet, value: "0.25"}},
		{sql: "SET dpproxy.epsilon TO ' 1e-1 '", want: &want{kind: cmdSet, value: "1e-1"}},
		{sql: "SET dpproxy.epsilon = DEFAULT", want: &want{kind: cmdSet, isDefault: true}},
		{sql: "SET dpproxy.epsilon TO default;", want: &want{kind: cmdSet, isDefault: true}},
		{sql: "-- a comment\n/* and /* nested */ one */ SET dpproxy.epsilon = .5 -- trailing", want: &want{kind: cmdSet, value: ".5"}},
		{sql: "SET dpproxy.epsilon = NaN", want: &want{kind: cmdSet, value: "NaN"}},
		{sql: "SET dpproxy.epsilon = 0.5 + 1", want: &want{kind: cmdSet, value: "0.5 + 1"}},
		{sql: "SET dpproxy.epsilon = 0.5 0.6;", want: &want{kind: cmdSet, value: "0.5 0.6"}},
		{sql: "SET dpproxy.epsilon = DEFAULT 1", want: &want{kind: cmdSet, value: "DEFAULT 1"}},
		{sql: "SET dpproxy.epsilon = 0.5; SELECT 1", code: sqlerr.FeatureNotSupported},
		{sql: "SET dpproxy.epsilon 0.5", code: sqlerr.SyntaxError},
		{sql: "SET dpproxy.epsilon =", code: sqlerr.SyntaxError},
		{sql: "SET dpproxy.epsilon = '0.5", code: sqlerr.SyntaxError},
		{sql: "SET dpproxy.delta = 0.5", code: sqlerr.FeatureNotSupported},
		{sql: `SET "dpproxy.epsilon" = 0.5`, code: sqlerr.FeatureNotSupported},
		{sql: `SET "dpproxy"."epsilon" = 0.5`, code: sqlerr.FeatureNotSupported},
		{sql: "SET LOCAL dpproxy.epsilon = 0.5", code: sqlerr.FeatureNotSupported},
		{sql: "SET application_name = 'x'"},
		{sql: "SET extra_float_digits = 3"},
		{sql: "SET dpproxy_epsilon = 3"},
		{sql: "SETTINGS dpproxy.epsilon = 3"},
		{sql: "SET a = 1, dpproxy.epsilon = 2"}, // refused after parsing
		// RESET
		{sql: "RESET dpproxy.epsilon", want: &want{kind: cmdReset}},
		{sql: "reset Dpproxy.Epsilon;", want: &want{kind: cmdReset}},
		{sql: "RESET ALL", want: &want{kind: cmdReset}},
		{sql: "RESET dpproxy.epsilon extra", code: sqlerr.SyntaxError},
		{sql: "RESET dpproxy.nothing", code: sqlerr.FeatureNotSupported},
		{sql: "RESET search_path"},
		// SHOW
		{sql: "SHOW dpproxy.epsilon", want: &want{kind: cmdShow}},
		{sql: "show dpproxy.epsilon ;", want: &want{kind: cmdShow}},
		{sql: "SHOW dpproxy.epsilon, x", code: sqlerr.FeatureNotSupported},
		{sql: "SHOW dpproxy.other", code: sqlerr.FeatureNotSupported},
		{sql: "SHOW transaction_isolation"},
		{sql: "SHOW TABLES"},
		// EXPLAIN DP
		{sql: "EXPLAIN DP SELECT COUNT(*) FROM visits", want: &want{kind: cmdExplainDP, query: "SELECT COUNT(*) FROM visits"}},
		{sql: "explain dp\nselect 1;", want: &want{kind: cmdExplainDP, query: "select 1;"}},
		{sql: "/* x */ Explain Dp /* y */ SELECT 1", want: &want{kind: cmdExplainDP, query: "SELECT 1"}},
		{sql: "EXPLAIN DP", code: sqlerr.SyntaxError},
		{sql: "EXPLAIN DP  -- nothing", code: sqlerr.SyntaxError},
		{sql: "EXPLAIN SELECT 1"},
		{sql: "EXPLAIN dpx SELECT 1"},
		{sql: "EXPLAIN DP(SELECT 1)"},
		{sql: "EXPLAINDP SELECT 1"},
		// Everything else.
		{sql: "SELECT COUNT(*) FROM visits"},
		{sql: ""},
		{sql: "-- ping"},
		{sql: "/* unterminated"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			cmd, err := matchSessionCommand(tc.sql)
			if tc.code != "" {
				if e := sqlerr.As(err); err == nil || e.Code != tc.code {
					t.Fatalf("got %+v, %v; want an error %s", cmd, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if tc.want == nil {
				if cmd != nil {
					t.Fatalf("matched %+v; want it left to the parser", cmd)
				}
				return
			}
			if cmd == nil {
				t.Fatal("not matched")
			}
			got := want{kind: cmd.kind, value: cmd.value, isDefault: cmd.isDefault, query: cmd.query}
			if got != *tc.want {
				t.Fatalf("got %+v, want %+v", got, *tc.want)
			}
			if cmd.kind == cmdExplainDP && tc.sql[cmd.offset:] != cmd.query {
				t.Errorf("offset %d does not locate the query", cmd.offset)
			}
		})
	}
}

func TestParseEpsilon(t *testing.T) {
	for _, tc := range []struct {
		text string
		want float64 // NaN: refused
	}{
		{"0.5", 0.5}, {"1", 1}, {".25", 0.25}, {"1e-6", 1e-6}, {"+0.5", 0.5}, {"5E-1", 0.5}, {"1.", 1},
		{"0", math.NaN()}, {"-0.5", math.NaN()}, {"-0", math.NaN()}, {"1.0000001", math.NaN()}, {"2", math.NaN()},
		{"9.9e-7", math.NaN()}, {"1e-400", math.NaN()}, {"1e400", math.NaN()},
		{"NaN", math.NaN()}, {"nan", math.NaN()}, {"Infinity", math.NaN()}, {"-inf", math.NaN()}, {"+Inf", math.NaN()},
		{"0x1p-1", math.NaN()}, {"0_5", math.NaN()}, {"half", math.NaN()}, {"", math.NaN()}, {"0.5 + 1", math.NaN()}, {"1/2", math.NaN()},
	} {
		got, err := parseEpsilon(tc.text, 1)
		if math.IsNaN(tc.want) {
			if err == nil || sqlerr.As(err).Code != sqlerr.PrivacyParameterError {
				t.Errorf("parseEpsilon(%q) = %v, %v; want a %s error", tc.text, got, err, sqlerr.PrivacyParameterError)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseEpsilon(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
		}
	}
}

// SET dpproxy.epsilon changes what the next queries cost, as the ledger
// records; SHOW and RESET work; invalid values are refused with 22DP1 and
// change nothing.
func TestSessionEpsilon(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	show := func() string {
		t.Helper()
		res := exec(t, s, "SHOW dpproxy.epsilon")
		if len(res.Columns) != 1 || res.Columns[0].Name != "dpproxy.epsilon" || res.Tag != "SHOW" {
			t.Fatalf("SHOW result %+v", res)
		}
		return res.Rows[0][0].(string)
	}
	lastCharge := func() float64 {
		t.Helper()
		cs, err := acct.Charges(t.Context(), "ana", 1)
		if err != nil || len(cs) != 1 {
			t.Fatalf("ledger: %v %v", cs, err)
		}
		return cs[0].Cost.Epsilon
	}
	if got := show(); got != "0.5" {
		t.Fatalf("initial ε %s, want the policy default 0.5", got)
	}
	for i, tc := range []struct {
		set  string
		want float64
		tag  string
	}{
		{"SET dpproxy.epsilon = 0.25", 0.25, "SET"},
		{"SET dpproxy.epsilon TO 1", 1, "SET"},
		{"set session DPPROXY.epsilon to '0.125';", 0.125, "SET"},
		{"SET dpproxy.epsilon = 1e-3", 0.001, "SET"},
		{"SET dpproxy.epsilon TO DEFAULT", 0.5, "SET"},
		{"SET dpproxy.epsilon = 0.75", 0.75, "SET"},
		{"RESET dpproxy.epsilon", 0.5, "RESET"},
		{"SET dpproxy.epsilon = 0.0625", 0.0625, "SET"},
		{"RESET ALL", 0.5, "RESET"},
	} {
		if res := exec(t, s, tc.set); res.Tag != tc.tag || len(res.Columns) != 0 {
			t.Errorf("%s: result %+v, want tag %s", tc.set, res, tc.tag)
		}
		if got := s.Epsilon(); got != tc.want {
			t.Errorf("%s: session ε %v, want %v", tc.set, got, tc.want)
		}
		before := spent(t, acct, "ana")
		// A new query each time, so that the cache does not answer.
		exec(t, s, "SELECT COUNT(*) FROM visits WHERE n >= "+string(rune('0'+i)))
		if got := lastCharge(); got != tc.want {
			t.Errorf("%s: the next query was charged ε=%v, want %v", tc.set, got, tc.want)
		}
		if got := spent(t, acct, "ana") - before; math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: spent %v, want %v", tc.set, got, tc.want)
		}
	}

	exec(t, s, "SET dpproxy.epsilon = 0.25")
	for _, bad := range []string{
		"SET dpproxy.epsilon = NaN",
		"SET dpproxy.epsilon = 'nan'",
		"SET dpproxy.epsilon = Infinity",
		"SET dpproxy.epsilon TO '-Infinity'",
		"SET dpproxy.epsilon = -0.5",
		"SET dpproxy.epsilon = 0",
		"SET dpproxy.epsilon = 1.5",
		"SET dpproxy.epsilon = 1e400",
		"SET dpproxy.epsilon = 1e-7",
		"SET dpproxy.epsilon = lots",
		"SET dpproxy.epsilon = 0.5 + 1",
		"SET dpproxy.epsilon = ''",
	} {
		t.Run(bad, func(t *testing.T) {
			e := execErr(t, s, bad)
			if e.Code != sqlerr.PrivacyParameterError {
				t.Errorf("code %s, want %s", e.Code, sqlerr.PrivacyParameterError)
			}
			if !strings.Contains(e.Message, "dpproxy.epsilon must be a finite number from 1e-06 to 1") {
				t.Errorf("message %q does not state the allowed range", e.Message)
			}
			if got := s.Epsilon(); got != 0.25 {
				t.Errorf("a refused SET changed ε to %v", got)
			}
		})
	}
	for _, bad := range []struct {
		sql  string
		code sqlerr.Code
	}{
		{"SET @@dpproxy.epsilon = 1", sqlerr.FeatureNotSupported},
		{"SET a = 1, dpproxy.epsilon = 1", sqlerr.FeatureNotSupported},
		{"/*+ x */ SET dpproxy.epsilon = 0.5 + 1", sqlerr.PrivacyParameterError},
		{"SET LOCAL dpproxy.epsilon = 0.5", sqlerr.FeatureNotSupported},
		{"SET dpproxy.delta = 0.5", sqlerr.FeatureNotSupported},
		{"SHOW dpproxy.delta", sqlerr.FeatureNotSupported},
	} {
		if e := execErr(t, s, bad.sql); e.Code != bad.code {
			t.Errorf("%s: %s %q, want %s", bad.sql, e.Code, e.Message, bad.code)
		}
	}
	if got := show(); got != "0.25" {
		t.Errorf("after refusals ε is %s, want 0.25", got)
	}
	// The session is still usable, at the last valid ε.
	exec(t, s, "SELECT SUM(n) FROM visits")
	if got := lastCharge(); got != 0.25 {
		t.Errorf("charged ε=%v, want 0.25", got)
	}
	// Other SET statements are accepted and ignored.
	if res := exec(t, s, "SET application_name = 'psql'"); res.Tag != "SET" {
		t.Errorf("tag %q", res.Tag)
	}
	// A new session starts at the policy's default.
	if got := newSession(t, s.engine, "ana").Epsilon(); got != 0.5 {
		t.Errorf("new session ε %v", got)
	}
}
