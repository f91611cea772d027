package session

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/mechanisms"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// The session commands below are recognized before the SQL parser, which
// cannot parse them (TiDB's parser knows neither `SET x TO v`, nor RESET,
// nor PostgreSQL's SHOW, nor EXPLAIN DP):
//
//	SET [SESSION] dpproxy.<name> { = | TO } { value | 'value' | DEFAULT } [;]
//	RESET dpproxy.<name> [;]
//	RESET ALL [;]
//	SHOW dpproxy.<name> [;]
//	EXPLAIN DP query
//
// for the settings named in settingNames.
//
// Keywords and the setting's name are case-insensitive; comments and white
// space may come before and between the words. Matching is strict: once a
// statement starts with SET, RESET or SHOW followed by a dpproxy.* name (or
// with EXPLAIN DP), anything malformed is an error rather than something
// passed on to the parser, so that a mistyped SET can never be ignored
// silently.

// SettingEpsilon is the name of the session setting holding the ε that the
// session's queries cost.
const SettingEpsilon = "dpproxy.epsilon"

// SettingIntervals is the name of the session setting that asks for the
// 95 % confidence intervals of DP answers: off (the default), notice (a
// NOTICE, or MySQL warning, per statement) or columns (two more columns,
// <name>_lo95 and <name>_hi95, after each aggregate).
const SettingIntervals = "dpproxy.intervals"

// settingNames are the dpproxy session settings.
var settingNames = []string{SettingEpsilon, SettingIntervals, SettingTargetError, SettingReportBias, SettingAutoBound}

// SettingAutoBound chooses how a table with max_rows_per_unit: auto gets
// its bound: quantile (the default: a DP quantile of people's rows,
// rewrite/autobound.go) or r2t (R2T for a count or sum without GROUP BY,
// rewrite/r2t.go; other queries keep the quantile).
const SettingAutoBound = "dpproxy.auto_bound"

// Values of SettingAutoBound.
const (
	autoBoundQuantile = "quantile"
	autoBoundR2T      = "r2t"
)

// parseAutoBound checks a SET dpproxy.auto_bound value.
func parseAutoBound(text string) (string, error) {
	switch v := strings.ToLower(text); v {
	case autoBoundQuantile, autoBoundR2T:
		return v, nil
	}
	return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", SettingAutoBound, text).
		WithHint("expected quantile (a DP quantile of people's rows, the default) or r2t (R2T for a count or sum without GROUP BY)")
}

// SettingReportBias asks for the bias report with each DP answer: DP
// estimates of the share of people bounding truncates and of values it
// clamps (rewrite/bias.go), for a tenth of the query's ε.
const SettingReportBias = "dpproxy.report_bias"

// parseOnOff reads a boolean setting.
func parseOnOff(name, text string) (bool, error) {
	switch strings.ToLower(text) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", name, text).
		WithHint("expected on or off")
}

// Values of SettingIntervals.
const (
	intervalsOff     = "off"
	intervalsNotice  = "notice"
	intervalsColumns = "columns"
)

// settingPrefix starts the name of every dpproxy session setting.
const settingPrefix = "dpproxy."

// commandKind is a session command recognized before parsing.
type commandKind int

const (
	cmdSet       commandKind = iota // SET dpproxy.epsilon = v
	cmdReset                        // RESET dpproxy.epsilon, RESET ALL
	cmdShow                         // SHOW dpproxy.epsilon
	cmdExplainDP                    // EXPLAIN DP query
)

// sessionCommand is a recognized session command.
type sessionCommand struct {
	kind commandKind
	// name is the setting (one of settingNames); "" for RESET ALL.
	name string
	// value is SET's value as written (quotes removed); "" with isDefault
	// for DEFAULT.
	value     string
	isDefault bool
	// query is EXPLAIN DP's query, starting at byte offset in the
	// original text.
	query  string
	offset int
}

// matchSessionCommand recognizes the session commands above. It returns
// nil, nil when sql is none of them (the parser then gets it), and an
// *sqlerr.Error when sql is one of them but malformed.
func matchSessionCommand(sql string) (*sessionCommand, error) {
	sc := &scanner{s: sql}
	sc.skip()
	switch strings.ToUpper(sc.word()) {
	case "SET":
		return matchSet(sc)
	case "RESET":
		return matchReset(sc)
	case "SHOW":
		return matchShow(sc)
	case "EXPLAIN":
		return matchExplainDP(sc)
	}
	return nil, nil
}

func matchSet(sc *scanner) (*sessionCommand, error) {
	sc.skip()
	mark := sc.pos
	local := false
	switch strings.ToUpper(sc.word()) {
	case "SESSION":
	case "LOCAL":
		local = true
	default:
		sc.pos = mark
	}
	sc.skip()
	written, ours := sc.settingName()
	if !ours {
		return nil, nil
	}
	name, err := checkSettingName(written)
	if err != nil {
		return nil, err
	}
	if local {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SET LOCAL %s is not supported: dpproxy has no transactions", name).
			WithHint("use SET %s = <value>, which lasts for the session", name)
	}
	sc.skip()
	switch {
	case sc.consume("="):
	case strings.EqualFold(sc.peekWord(), "TO"):
		sc.word()
	default:
		return nil, setSyntaxError(name, "expected = or TO after "+name)
	}
	sc.skip()
	cmd := &sessionCommand{kind: cmdSet, name: name}
	valueStart := sc.pos
	switch {
	case sc.peek() == '\'':
		v, ok := sc.quoted()
		if !ok {
			return nil, setSyntaxError(name, "unterminated quoted string")
		}
		cmd.value = strings.TrimSpace(v)
	case strings.EqualFold(sc.peekWord(), "DEFAULT"):
		sc.word()
		cmd.isDefault = true
	default:
		cmd.value = sc.token()
		if cmd.value == "" {
			return nil, setSyntaxError(name, "expected a value after "+name)
		}
	}
	sc.skip()
	if sc.pos < len(sc.s) && sc.peek() != ';' {
		// `SET dpproxy.epsilon = 0.5 + 1` and the like: the value is
		// everything up to the end, which the session refuses as not a
		// number (stating the allowed range).
		cmd.value = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sc.s[valueStart:]), ";"))
		cmd.isDefault = false
		return cmd, nil
	}
	if err := sc.end(); err != nil {
		return nil, err
	}
	return cmd, nil
}

func matchReset(sc *scanner) (*sessionCommand, error) {
	sc.skip()
	if strings.EqualFold(sc.peekWord(), "ALL") {
		sc.word()
		if err := sc.end(); err != nil {
			return nil, err
		}
		return &sessionCommand{kind: cmdReset}, nil
	}
	return matchNamed(sc, cmdReset)
}

func matchShow(sc *scanner) (*sessionCommand, error) {
	sc.skip()
	return matchNamed(sc, cmdShow)
}

// matchNamed reads the rest of RESET or SHOW: a dpproxy setting's name and
// the end of the statement.
func matchNamed(sc *scanner, kind commandKind) (*sessionCommand, error) {
	written, ours := sc.settingName()
	if !ours {
		return nil, nil
	}
	name, err := checkSettingName(written)
	if err != nil {
		return nil, err
	}
	if err := sc.end(); err != nil {
		return nil, err
	}
	return &sessionCommand{kind: kind, name: name}, nil
}

func matchExplainDP(sc *scanner) (*sessionCommand, error) {
	sc.skip()
	if !strings.EqualFold(sc.peekWord(), "DP") {
		return nil, nil
	}
	sc.word()
	if sc.pos < len(sc.s) && !sc.atSpaceOrComment() {
		return nil, nil // EXPLAIN DP( or EXPLAIN DP"x": not ours
	}
	sc.skip()
	if sc.pos == len(sc.s) {
		return nil, sqlerr.New(sqlerr.SyntaxError, "EXPLAIN DP needs a query to explain").
			WithHint("write EXPLAIN DP SELECT ...")
	}
	return &sessionCommand{kind: cmdExplainDP, query: sc.s[sc.pos:], offset: sc.pos}, nil
}

// checkSettingName returns the dpproxy setting a name written without
// quotes names, in its canonical spelling.
func checkSettingName(name string) (string, error) {
	for _, s := range settingNames {
		if strings.EqualFold(name, s) {
			return s, nil
		}
	}
	if strings.Contains(name, `"`) {
		return "", sqlerr.New(sqlerr.FeatureNotSupported, "write the setting name without quotes, got %s", name).
			WithHint("the dpproxy session settings are %s", strings.Join(settingNames, ", "))
	}
	return "", sqlerr.New(sqlerr.FeatureNotSupported, "unrecognized configuration parameter %q", name).
		WithHint("the dpproxy session settings are %s", strings.Join(settingNames, ", "))
}

func setSyntaxError(name, what string) error {
	example := "0.5"
	switch name {
	case SettingIntervals:
		example = "notice"
	case SettingTargetError:
		example = "50"
	case SettingReportBias:
		example = "on"
	case SettingAutoBound:
		example = "r2t"
	}
	return sqlerr.New(sqlerr.SyntaxError, "syntax error in SET %s: %s", name, what).
		WithHint("write SET %s = %s (or TO %s, or TO DEFAULT)", name, example, example)
}

// parseIntervals checks a SET dpproxy.intervals value.
func parseIntervals(text string) (string, error) {
	switch v := strings.ToLower(text); v {
	case intervalsOff, intervalsNotice, intervalsColumns:
		return v, nil
	case "on", "true":
		return intervalsNotice, nil
	case "false":
		return intervalsOff, nil
	}
	return "", sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", SettingIntervals, text).
		WithHint("expected off, notice (a NOTICE or MySQL warning with each answer's 95 %% intervals) or columns (interval columns after each aggregate)")
}

// plainNumber is a decimal number as SQL writes it; strconv.ParseFloat
// alone would also accept hexadecimal floats and underscores.
var plainNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// nonFinite are the spellings of NaN and ±∞ that PostgreSQL's float8
// input accepts; they are recognized so that the error says why they are
// refused.
var nonFinite = map[string]float64{
	"nan": math.NaN(), "inf": math.Inf(1), "+inf": math.Inf(1), "-inf": math.Inf(-1),
	"infinity": math.Inf(1), "+infinity": math.Inf(1), "-infinity": math.Inf(-1),
}

// parseEpsilon checks a SET dpproxy.epsilon value: a finite number in
// [mechanisms.MinEpsilon, maxEpsilon].
func parseEpsilon(text string, maxEpsilon float64) (float64, error) {
	var eps float64
	if f, ok := nonFinite[strings.ToLower(text)]; ok {
		eps = f
	} else if !plainNumber.MatchString(text) {
		return 0, epsilonValueError(text, "is not a number")
	} else {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, epsilonValueError(text, "is not a number")
		}
		eps = f // ±Inf or 0 when out of range: refused below
	}
	switch {
	case math.IsNaN(eps) || math.IsInf(eps, 0):
		return 0, epsilonValueError(text, "is not finite")
	case eps <= 0:
		return 0, epsilonValueError(text, "is not greater than 0")
	case eps < mechanisms.MinEpsilon:
		return 0, epsilonValueError(text, "is below the smallest ε the noise mechanisms accept")
	case eps > maxEpsilon:
		return 0, epsilonValueError(text, "is above the policy's max_epsilon_per_query")
	}
	return eps, nil
}

// epsilonValueError is the error for a refused SET dpproxy.epsilon value.
// The session adds the allowed range to its message (Session.parseEpsilon).
func epsilonValueError(text, why string) *sqlerr.Error {
	return &sqlerr.Error{
		Code:    sqlerr.PrivacyParameterError,
		Message: fmt.Sprintf("invalid value for parameter %q: %q %s", SettingEpsilon, text, why),
	}
}

// showSetting is the result of SHOW dpproxy.<name>: one text column, as
// PostgreSQL's SHOW gives.
func showSetting(name, value string) *sqltypes.Result {
	return &sqltypes.Result{
		Columns: []sqltypes.Column{{Name: name, Type: sqltypes.Text}},
		Rows:    [][]any{{value}},
		Tag:     "SHOW",
	}
}

// scanner reads the words of a session command.
type scanner struct {
	s   string
	pos int
}

// skip passes white space and comments (-- to end of line, /* ... */,
// nested as PostgreSQL nests them).
func (sc *scanner) skip() {
	for sc.pos < len(sc.s) {
		switch {
		case isSpace(sc.s[sc.pos]):
			sc.pos++
		case strings.HasPrefix(sc.s[sc.pos:], "--"):
			if i := strings.IndexByte(sc.s[sc.pos:], '\n'); i >= 0 {
				sc.pos += i + 1
			} else {
				sc.pos = len(sc.s)
			}
		case strings.HasPrefix(sc.s[sc.pos:], "/*"):
			depth := 0
			for sc.pos < len(sc.s) {
				if strings.HasPrefix(sc.s[sc.pos:], "/*") {
					depth++
					sc.pos += 2
				} else if strings.HasPrefix(sc.s[sc.pos:], "*/") {
					depth--
					sc.pos += 2
					if depth == 0 {
						break
					}
				} else {
					sc.pos++
				}
			}
		default:
			return
		}
	}
}

// atSpaceOrComment reports whether white space or a comment comes next.
func (sc *scanner) atSpaceOrComment() bool {
	rest := sc.s[sc.pos:]
	return rest != "" && (isSpace(rest[0]) || strings.HasPrefix(rest, "--") || strings.HasPrefix(rest, "/*"))
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// word reads an unquoted word ([A-Za-z0-9_]*) and returns it.
func (sc *scanner) word() string {
	start := sc.pos
	for sc.pos < len(sc.s) && isWordByte(sc.s[sc.pos]) {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// peekWord returns the next word without reading it.
func (sc *scanner) peekWord() string {
	mark := sc.pos
	w := sc.word()
	sc.pos = mark
	return w
}

func (sc *scanner) peek() byte {
	if sc.pos < len(sc.s) {
		return sc.s[sc.pos]
	}
	return 0
}

// consume reads prefix if it comes next.
func (sc *scanner) consume(prefix string) bool {
	if strings.HasPrefix(sc.s[sc.pos:], prefix) {
		sc.pos += len(prefix)
		return true
	}
	return false
}

// settingName reads a possibly qualified, possibly quoted name such as
// dpproxy.epsilon or "dpproxy"."epsilon", up to white space, '=', ';' or
// the end. ours reports whether it names a dpproxy setting (its first
// part, quotes removed, is "dpproxy" case-insensitively, and a dot
// follows); when it does not, the scanner has not moved.
func (sc *scanner) settingName() (name string, ours bool) {
	start := sc.pos
	end := start
	inQuotes := false
	for end < len(sc.s) {
		c := sc.s[end]
		if c == '"' {
			inQuotes = !inQuotes
		} else if !inQuotes && (isSpace(c) || c == '=' || c == ';' || c == '\'' || strings.HasPrefix(sc.s[end:], "--") || strings.HasPrefix(sc.s[end:], "/*")) {
			break
		}
		end++
	}
	name = sc.s[start:end]
	unquoted := strings.ToLower(strings.ReplaceAll(name, `"`, ""))
	if !strings.HasPrefix(unquoted, settingPrefix) {
		return "", false
	}
	sc.pos = end
	return name, true
}

// quoted reads a single-quoted string, in which a doubled quote stands
// for one quote.
func (sc *scanner) quoted() (string, bool) {
	var sb strings.Builder
	sc.pos++ // opening quote
	for sc.pos < len(sc.s) {
		c := sc.s[sc.pos]
		sc.pos++
		if c != '\'' {
			sb.WriteByte(c)
			continue
		}
		if sc.peek() == '\'' {
			sb.WriteByte('\'')
			sc.pos++
			continue
		}
		return sb.String(), true
	}
	return "", false
}

// token reads everything up to white space, ';' or a comment.
func (sc *scanner) token() string {
	start := sc.pos
	for sc.pos < len(sc.s) && !isSpace(sc.s[sc.pos]) && sc.s[sc.pos] != ';' &&
		!strings.HasPrefix(sc.s[sc.pos:], "--") && !strings.HasPrefix(sc.s[sc.pos:], "/*") {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// end accepts the end of the command: an optional ';', then only white
// space and comments.
func (sc *scanner) end() error {
	sc.skip()
	if sc.consume(";") {
		sc.skip()
		if sc.pos < len(sc.s) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "multiple statements in one query are not supported").
				WithHint("send one statement at a time")
		}
		return nil
	}
	if sc.pos < len(sc.s) {
		return sqlerr.New(sqlerr.SyntaxError, "syntax error at or near %q", firstWord(sc.s[sc.pos:])).
			WithHint("dpproxy session commands: SET %[1]s = <number>, SHOW %[1]s, RESET %[1]s", SettingEpsilon)
	}
	return nil
}

// firstWord is the start of s up to white space, for error messages.
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}
