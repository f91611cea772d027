package session

import (
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// PostgreSQL clients set and read run-time parameters ("GUCs") before
// their first real query: pgjdbc sets extra_float_digits and
// application_name and asks for the transaction isolation; Metabase sets
// the time zone; SQLAlchemy reads standard_conforming_strings. dpproxy
// answers these itself, from the session's own copy of the settings: the
// backend connection is shared and is never changed by a client.

// ServerVersion is the PostgreSQL version dpproxy presents itself as.
const ServerVersion = "15.0 (dpproxy)"

// defaultSettings are the values SHOW and current_setting() report until
// the client changes them. Names are lower case.
var defaultSettings = map[string]string{
	"server_version":                      ServerVersion,
	"server_version_num":                  "150000",
	"server_encoding":                     "UTF8",
	"client_encoding":                     "UTF8",
	"datestyle":                           "ISO, MDY",
	"intervalstyle":                       "postgres",
	"timezone":                            "UTC",
	"integer_datetimes":                   "on",
	"standard_conforming_strings":         "on",
	"application_name":                    "",
	"is_superuser":                        "off",
	"search_path":                         `"$user", public`,
	"transaction_isolation":               "read committed",
	"default_transaction_isolation":       "read committed",
	"transaction_read_only":               "on",
	"default_transaction_read_only":       "on",
	"extra_float_digits":                  "1",
	"max_identifier_length":               "63",
	"bytea_output":                        "hex",
	"lc_messages":                         "C",
	"lc_collate":                          "C",
	"lc_ctype":                            "C",
	"statement_timeout":                   "0",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"escape_string_warning":               "on",
	"backslash_quote":                     "safe_encoding",
	"default_transaction_deferrable":      "off",
	"synchronous_commit":                  "on",
	"block_size":                          "8192",
	"max_connections":                     "100",
}

// fixedSettings may be read but not changed: dpproxy's SQL handling
// depends on them (string literals are read with standard conforming
// strings, text is exchanged in UTF8, the session is read-only).
var fixedSettings = map[string]string{
	"standard_conforming_strings":   "on",
	"client_encoding":               "UTF8",
	"server_encoding":               "UTF8",
	"transaction_read_only":         "on",
	"default_transaction_read_only": "on",
	"server_version":                ServerVersion,
	"server_version_num":            "150000",
	"integer_datetimes":             "on",
	"is_superuser":                  "off",
}

// settingAliases map the SQL-standard spellings to parameter names.
var settingAliases = map[string]string{
	"time zone":                   "timezone",
	"names":                       "client_encoding",
	"transaction isolation level": "transaction_isolation",
	"session authorization":       "session_authorization",
}

// setting reads a run-time parameter of the session.
func (s *Session) setting(name string) (string, bool) {
	name = strings.ToLower(name)
	if v, ok := s.gucs[name]; ok {
		return v, true
	}
	if name == "session_authorization" {
		return s.analyst, true
	}
	v, ok := defaultSettings[name]
	return v, ok
}

// gucCommand is a PostgreSQL SET, RESET or SHOW of an ordinary parameter.
type gucCommand struct {
	kind  commandKind // cmdSet, cmdReset or cmdShow
	name  string      // lower case; "" with cmdReset for RESET ALL
	value string      // SET's value, quotes removed; "" for DEFAULT
}

// matchPostgresSetting recognizes SET/RESET/SHOW of ordinary parameters in
// PostgreSQL's syntax, which TiDB's parser does not read. It returns nil
// for anything else.
func matchPostgresSetting(sql string) (*gucCommand, error) {
	sc := &scanner{s: sql}
	sc.skip()
	verb := strings.ToUpper(sc.word())
	if verb != "SET" && verb != "RESET" && verb != "SHOW" {
		return nil, nil
	}
	sc.skip()
	rest := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sc.s[sc.pos:]), ";"))
	lower := strings.ToLower(rest)
	if verb == "SET" {
		for _, prefix := range []string{"session ", "local "} {
			if strings.HasPrefix(lower, prefix) && !strings.HasPrefix(lower, "session characteristics") && !strings.HasPrefix(lower, "session authorization") {
				rest, lower = strings.TrimSpace(rest[len(prefix):]), strings.TrimSpace(lower[len(prefix):])
			}
		}
		if strings.HasPrefix(lower, "transaction") || strings.HasPrefix(lower, "session characteristics") {
			return &gucCommand{kind: cmdSet}, nil // transaction modes: read-only anyway
		}
	}
	name := ""
	for alias, canonical := range settingAliases {
		if strings.HasPrefix(lower, alias) && (len(lower) == len(alias) || lower[len(alias)] == ' ' || lower[len(alias)] == '\'') {
			name, rest = canonical, strings.TrimSpace(rest[len(alias):])
		}
	}
	if name == "" {
		end := strings.IndexAny(rest, " =\t\n'")
		if end < 0 {
			end = len(rest)
		}
		name, rest = strings.ToLower(strings.Trim(rest[:end], `"`)), strings.TrimSpace(rest[end:])
	}
	if name == "" || strings.ContainsAny(name, "@,()") || strings.HasPrefix(name, settingPrefix) {
		return nil, nil // not a plain PostgreSQL parameter: leave it to the parser
	}
	switch verb {
	case "SHOW":
		if rest != "" {
			return nil, nil
		}
		return &gucCommand{kind: cmdShow, name: name}, nil
	case "RESET":
		if rest != "" {
			return nil, nil
		}
		if name == "all" {
			name = ""
		}
		return &gucCommand{kind: cmdReset, name: name}, nil
	}
	switch {
	case strings.HasPrefix(rest, "="):
		rest = strings.TrimSpace(rest[1:])
	case len(rest) > 2 && strings.EqualFold(rest[:2], "to") && (rest[2] == ' ' || rest[2] == '\''):
		rest = strings.TrimSpace(rest[2:])
	case name == "timezone" || name == "client_encoding" || name == "session_authorization" || name == "role":
		// SET TIME ZONE 'UTC', SET NAMES 'UTF8': no = or TO.
	default:
		return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error in SET %s: expected = or TO", name)
	}
	if rest == "" {
		return nil, sqlerr.New(sqlerr.SyntaxError, "SET %s needs a value", name)
	}
	if strings.Contains(strings.ToLower(rest), settingPrefix) {
		return nil, nil // several assignments, one of ours: the parser path refuses it
	}
	value := rest
	if strings.EqualFold(value, "DEFAULT") {
		value = ""
	} else if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
		value = strings.ReplaceAll(value[1:len(value)-1], "''", "'")
	}
	if (name == "role" || name == "session_authorization") && value != "" && !strings.EqualFold(value, "none") {
		// Accepting it would pretend the session changed whose budget
		// and permissions apply; it cannot.
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SET %s is not supported: a dpproxy session always acts as the analyst who logged in", strings.ToUpper(strings.ReplaceAll(name, "_", " "))).
			WithHint("connect as the other analyst instead")
	}
	return &gucCommand{kind: cmdSet, name: name, value: value}, nil
}

// runSetting applies a SET, RESET or SHOW of an ordinary parameter.
func (s *Session) runSetting(cmd *gucCommand) (*sqltypes.Result, error) {
	switch cmd.kind {
	case cmdShow:
		if cmd.name == "all" {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SHOW ALL is not supported").WithHint("SHOW one parameter by name")
		}
		v, ok := s.setting(cmd.name)
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", cmd.name)
		}
		return &sqltypes.Result{Columns: []sqltypes.Column{{Name: cmd.name, Type: sqltypes.Text}}, Rows: [][]any{{v}}, Tag: "SHOW"}, nil
	case cmdReset:
		if cmd.name == "" {
			s.gucs = map[string]string{}
			for k, v := range s.startupSettings {
				s.gucs[k] = v
			}
		} else {
			delete(s.gucs, cmd.name)
			if v, ok := s.startupSettings[cmd.name]; ok {
				s.gucs[cmd.name] = v
			}
		}
		return &sqltypes.Result{Tag: "RESET"}, nil
	}
	if cmd.name == "" {
		return &sqltypes.Result{Tag: "SET"}, nil
	}
	if fixed, ok := fixedSettings[cmd.name]; ok {
		if cmd.value == "" || strings.EqualFold(strings.ReplaceAll(cmd.value, "-", ""), strings.ReplaceAll(fixed, "-", "")) {
			return &sqltypes.Result{Tag: "SET"}, nil
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "parameter %q cannot be changed through dpproxy: it is %s", cmd.name, fixed)
	}
	if cmd.value == "" {
		delete(s.gucs, cmd.name)
	} else {
		s.gucs[cmd.name] = cmd.value
	}
	return &sqltypes.Result{Tag: "SET"}, nil
}

// SetStartupParameters records the parameters a client sent when it
// connected (database, application_name, DateStyle, ...): SHOW and
// current_setting() report them, and RESET returns to them.
func (s *Session) SetStartupParameters(database string, params map[string]string) {
	s.database = database
	for k, v := range params {
		k = strings.ToLower(k)
		if _, fixed := fixedSettings[k]; fixed || k == "user" || k == "database" || k == "options" || k == "replication" {
			continue
		}
		s.startupSettings[k] = v
		s.gucs[k] = v
	}
}
