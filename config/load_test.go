package config

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"gopkg.in/yaml.v3"
)

// Verifiers for the password "correct horse", as in testdata/good.yaml.
const (
	testPassword = "correct horse"
	testSCRAM    = "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$yERwYmHlx0VrpoYfOn54hMTjBUKWnmK42IDjnWgQWkk=:RQZr9F8QCYmmp35tAVzp0VB/kDwY283N+s24jDDliG4="
	testNative   = "*0E8F21E4240F5AD5A07D088F9C93890D13D78A4E"
	testSHA2     = "bf7ffba958c798f80e3cf8ebea1cbc781495cadb8880a7f2bbc73d530712b52d"
)

// badCases maps each file in testdata/bad to the one error it must produce,
// as printed: "file:line:col: field: message" (a prefix of the message is
// enough).
var badCases = []struct {
	file string
	want string
}{
	// Structure and YAML.
	{"unknown_top_key", `unknown_top_key.yaml:19:1: ledgr: unknown key "ledgr" (did you mean "ledger"?); valid keys here are listen, backend, ledger, defaults, cache, admin, audit, analysts, teams, protected_tables, public_tables`},
	{"unknown_nested_key", `unknown_nested_key.yaml:2:3: defaults.epsilom: unknown key "epsilom" (did you mean "epsilon"?); valid keys here are epsilon, delta, max_epsilon_per_query,`},
	{"unknown_column_key", `unknown_column_key.yaml:16:9: protected_tables[0].columns[0].groupby: unknown key "groupby" (did you mean "group_by"?); valid keys here are name, type, bounds, group_by, keys`},
	{"duplicate_key", `duplicate_key.yaml:3:3: defaults.epsilon: key "epsilon" is repeated (first set at line 2)`},
	{"not_a_mapping", `not_a_mapping.yaml:1:1: expected a mapping with keys listen, backend, ledger, defaults, cache, admin, audit, analysts, teams, protected_tables, public_tables; got a list`},
	{"listen_scalar", `listen_scalar.yaml:1:9: listen: expected a mapping with keys postgres, mysql, tls, tls_cert, tls_key, statement_timeout, idle_timeout, write_timeout, max_message_size, max_result_rows, max_result_bytes, max_connections, max_connections_per_analyst, max_handshakes, login_backoff, login_backoff_max, direct_io, processors; got the number 5433`},
	{"not_a_number", `not_a_number.yaml:2:12: defaults.epsilon: expected a number; got the string "lots"`},
	{"not_whole_number", `not_whole_number.yaml:2:22: defaults.max_rows_per_unit: expected a whole number; got the number 2.5`},
	{"not_a_bool", `not_a_bool.yaml:19:19: protected_tables[0].columns[1].group_by: expected true or false; got the string "yes"`},
	{"syntax_error", `syntax_error.yaml:18: invalid YAML: did not find expected ',' or ']'`},
	{"bad_indent", `bad_indent.yaml:21: invalid YAML: did not find expected key`},
	{"tab_indent", `tab_indent.yaml:20: invalid YAML: found character that cannot start any token`},
	{"unknown_anchor", `unknown_anchor.yaml:20:9: invalid YAML: unknown anchor 'ledger_path' referenced`},
	{"multiple_documents", `multiple_documents.yaml:19:1: a second YAML document starts here; expected the policy to be a single document`},
	{"empty", `empty.yaml: the policy file is empty; expected a mapping with keys listen, backend,`},

	// listen
	{"listen_bad_address", `listen_bad_address.yaml:2:13: listen.postgres: "5433" is not a host:port address with a numeric port; expected e.g. "127.0.0.1:5433", or "" to turn this front end off`},
	{"listen_none", `listen_none.yaml:2:3: listen: no front end is enabled; set listen.postgres or listen.mysql`},
	{"listen_same", `listen_same.yaml:3:10: listen.mysql: "127.0.0.1:5433" is also listen.postgres; expected a different address for each front end`},

	// backend and ledger
	{"backend_missing", `backend_missing.yaml:1:1: backend: required; expected a mapping with kind (postgres, sqlite, mysql) and dsn or path`},
	{"backend_unknown_kind", `backend_unknown_kind.yaml:2:9: backend.kind: unknown backend kind "oracle"; expected one of postgres, sqlite, mysql`},
	{"backend_postgres_no_dsn", `backend_postgres_no_dsn.yaml:2:3: backend.dsn: required for kind postgres; expected a connection string such as "postgres://`},
	{"backend_mysql_path", `backend_mysql_path.yaml:4:9: backend.path: only used with kind sqlite; a mysql backend is reached through dsn`},
	{"backend_sqlite_no_path", `backend_sqlite_no_path.yaml:2:3: backend.path: required for kind sqlite; expected the database file's path`},
	{"backend_sqlite_dsn", `backend_sqlite_dsn.yaml:4:8: backend.dsn: not used with kind sqlite; expected path to name the database file`},
	{"max_conns_zero", `max_conns_zero.yaml:4:14: backend.max_conns: must be between 1 and 1000, got 0`},
	{"max_conns_huge", `max_conns_huge.yaml:4:14: backend.max_conns: must be between 1 and 1000, got 100000`},
	{"pipeline_lanes_sqlite", `pipeline_lanes_sqlite.yaml:4:19: backend.pipeline_lanes: only used with kind postgres or mysql: a sqlite backend runs each statement in the process; remove it`},
	{"pipeline_lanes_many", `pipeline_lanes_many.yaml:5:19: backend.pipeline_lanes: must be between 0 (off) and backend.max_conns (4), got 5`},
	{"ledger_path_and_postgres", `ledger_path_and_postgres.yaml:20:9: ledger.path: a ledger is a file (path) or a shared PostgreSQL database (postgres), not both; remove one`},
	{"ledger_postgres_not_url", `ledger_postgres_not_url.yaml:20:13: ledger.postgres: expected the URL (scheme postgres or postgresql) of the database the shared ledger lives in, got "host=db dbname=ledger"`},
	{"ledger_schema_bad", `ledger_schema_bad.yaml:21:11: ledger.schema: expected a lower-case SQL identifier (letters, digits, _), got "My-Ledger"`},
	{"ledger_lease_short", `ledger_lease_short.yaml:21:15: ledger.hold_lease: must be between 3s and 10m, got 1s`},
	{"ledger_lease_without_postgres", `ledger_lease_without_postgres.yaml:20:15: ledger.hold_lease: applies only to a shared ledger (ledger.postgres); remove it or add ledger.postgres`},
	{"defaults_accountant_unknown", `defaults_accountant_unknown.yaml:22:15: defaults.accountant: unknown accountant "renyi"; expected basic, advanced or zcdp`},
	{"defaults_delta_prime_missing", `defaults_delta_prime_missing.yaml:22:3: defaults.delta_prime: required with accountant: zcdp`},
	{"admin_listen_no_port", `admin_listen_no_port.yaml:19:11: admin.listen: "127.0.0.1" is not a host:port address; expected e.g. "127.0.0.1:9187"`},
	{"admin_no_user", `admin_no_user.yaml:19:3: admin: admin.user is required: every admin request logs in (HTTP basic authentication)`},
	{"admin_plaintext_password", `admin_plaintext_password.yaml:21:13: admin.password: looks like a plaintext password; the policy stores verifiers, never passwords: run` + " `dpproxy passwd` " + `and paste its scram_sha_256 line`},
	{"admin_mysql_verifier", `admin_mysql_verifier.yaml:22:28: admin.password.mysql_native_password: the admin listener logs in over HTTP with a scram_sha_256 verifier only; remove this key`},
	{"audit_no_path", `audit_no_path.yaml:19:3: audit: audit.path is required: the file the audit log is written to; leave audit out to turn it off`},
	{"audit_fsync_unknown", `audit_fsync_unknown.yaml:20:10: audit.fsync: unknown fsync policy "sometimes"; expected never or always`},
	{"audit_size_zero", `audit_size_zero.yaml:20:16: audit.max_size_mb: must be a whole number from 1 to 1048576, got 0`},
	{"ledger_empty_path", `ledger_empty_path.yaml:20:9: ledger.path: must not be empty; expected a file path, or leave the key out for dpproxy-ledger.db next to the policy file`},

	// defaults
	{"epsilon_negative", `epsilon_negative.yaml:2:12: defaults.epsilon: must be a finite number greater than 0, got -1`},
	{"epsilon_infinite", `epsilon_infinite.yaml:2:12: defaults.epsilon: must be a finite number greater than 0, got +Inf`},
	{"delta_out_of_range", `delta_out_of_range.yaml:2:10: defaults.delta: must be at least 0 and less than 1, got 1.5`},
	{"max_epsilon_below_epsilon", `max_epsilon_below_epsilon.yaml:3:26: defaults.max_epsilon_per_query: 0.1 is less than defaults.epsilon (0.5); expected max_epsilon_per_query ≥ epsilon`},
	{"l0_zero", `l0_zero.yaml:2:24: defaults.max_groups_per_unit: must be a whole number from 1 to 1000, got 0`},
	{"neighbouring_unknown", `neighbouring_unknown.yaml:2:17: defaults.neighbouring: unknown neighbouring definition "swap"; expected add_remove or replace`},

	// cache
	{"cache_size_negative", `cache_size_negative.yaml:5:9: cache.size: must be a whole number from 0 (cache off) to 1000000, got -1`},
	{"cache_ttl_not_duration", `cache_ttl_not_duration.yaml:6:8: cache.ttl: expected a duration with a unit, such as 1h, 30m or 90s; got the string "forever"`},
	{"cache_ttl_bare_number", `cache_ttl_bare_number.yaml:4:14: cache.ttl: expected a duration with a unit, such as 1h, 30m or 90s; got the number 3600`},
	{"tls_cert_without_key", `tls_cert_without_key.yaml:2:13: listen.tls_cert: tls_cert and tls_key go together`},
	{"statement_timeout_negative", `statement_timeout_negative.yaml:2:22: listen.statement_timeout: must be a duration greater than 0`},
	{"tls_required_without_cert", `tls_required_without_cert.yaml:2:8: listen.tls: required needs a certificate; set listen.tls_cert and listen.tls_key`},
	{"tls_unknown_mode", `tls_unknown_mode.yaml:2:8: listen.tls: unknown TLS mode "Required" (write it in lower case: required); expected optional or required`},
	{"max_message_size_small", `max_message_size_small.yaml:2:21: listen.max_message_size: must be a whole number from 4096 to 67108864, got 100`},
	{"max_connections_zero", `max_connections_zero.yaml:2:20: listen.max_connections: must be a whole number from 1 to 100000, got 0`},
	{"max_result_bytes_small", `max_result_bytes_small.yaml:2:21: listen.max_result_bytes: must be a whole number of bytes from 1024 to 1099511627776, got 10`},
	{"direct_io_not_bool", `direct_io_not_bool.yaml:2:14: listen.direct_io: expected true or false; got the string "maybe"`},
	{"processors_not_number", `processors_not_number.yaml:2:15: listen.processors: expected a whole number or auto; got the string "many"`},
	{"processors_zero", `processors_zero.yaml:2:15: listen.processors: must be a whole number from 1 to 1024, or auto; got 0`},
	{"login_backoff_max_short", `login_backoff_max_short.yaml:3:22: listen.login_backoff_max: 1s is shorter than listen.login_backoff (2s); expected at least as long`},
	{"mechanism_unknown", `mechanism_unknown.yaml:7:14: defaults.mechanism: unknown mechanism "gauss"`},
	{"mechanism_gaussian_no_delta", `mechanism_gaussian_no_delta.yaml:7:14: defaults.mechanism: gaussian needs defaults.delta > 0`},
	{"min_max_quantiles_inverted", `min_max_quantiles_inverted.yaml:7:22: defaults.min_max_quantiles: expected [min level, max level] with 0 ≤ min level ≤ 0.5 ≤ max level ≤ 1, such as [0.01, 0.99]; got [0.6, 0.99]`},
	{"min_max_quantiles_single", `min_max_quantiles_single.yaml:7:22: defaults.min_max_quantiles: expected [lo, hi], a list of two numbers; got a list of 1`},
	{"accountant_delta_prime_too_big", `accountant_delta_prime_too_big.yaml:12:20: analysts[0].budget.delta_prime: must be greater than 0 and at most the budget's delta (1e-06), got 1e-05`},
	{"accountant_unknown", `accountant_unknown.yaml:10:19: analysts[0].budget.accountant: unknown accountant "renyi"; expected basic, advanced or zcdp`},
	{"team_window_bad", `team_window_bad.yaml:18:34: teams[0].budget.window: expected day, week, month or a rolling duration such as 7d or 36h; got "fortnight"`},
	{"team_lifetime_no_window", `team_lifetime_no_window.yaml:18:36: teams[0].budget.lifetime: a lifetime cap needs a window`},
	{"accountant_on_team", `accountant_on_team.yaml:18:38: teams[0].budget.accountant: only an analyst's budget takes an accountant`},
	{"window_unknown", `window_unknown.yaml:10:15: analysts[0].budget.window: expected day, week, month or a rolling duration such as 7d or 36h; got "fortnight"`},
	{"lifetime_without_window", `lifetime_without_window.yaml:10:17: analysts[0].budget.lifetime: a lifetime cap needs a window`},
	{"window_with_zcdp", `window_with_zcdp.yaml:13:15: analysts[0].budget.window: a budget that renews adds up by basic composition; drop accountant: zcdp or the window`},
	{"table_budget_no_epsilon", `table_budget_no_epsilon.yaml:18:13: protected_tables[0].budget.epsilon: required; expected the table's total epsilon`},
	{"team_unknown_analyst", `team_unknown_analyst.yaml:17:23: teams[0].analysts[1]: "carol" is not an analyst of the policy`},
	{"team_duplicate", `team_duplicate.yaml:19:11: teams[1].name: team "growth" is already defined at line 16 (teams[0])`},
	{"team_no_budget", `team_no_budget.yaml:16:5: teams[0].budget: required`},
	{"team_member_twice", `team_member_twice.yaml:17:23: teams[0].analysts[1]: analyst "alice" is listed twice`},
	{"unit_path_unknown_table", `unit_path_unknown_table.yaml:16:19: protected_tables[0].privacy_unit: visits references people.patient_id, which is not a protected table of the policy`},
	{"unit_path_cycle", `unit_path_cycle.yaml:16:19: protected_tables[0].privacy_unit: the privacy unit path of a comes back to a: a cycle`},
	{"unit_path_syntax", `unit_path_syntax.yaml:16:49: protected_tables[0].privacy_unit.references: "patient_id" is not a column reference; expected table.column`},
	{"public_group_keys_unknown", `public_group_keys_unknown.yaml:23:18: public_tables[0].group_keys[0]: "town" is not a column of clinics; group_keys lists columns of the table`},
	{"keys_from_not_public", `keys_from_not_public.yaml:26:20: protected_tables[0].columns[2].keys_from: diagnoses(code) is not a public table of the policy; key lists may only come from public_tables`},
	{"keys_from_syntax", `keys_from_syntax.yaml:26:20: protected_tables[0].columns[2].keys_from: expected a public table's column as table(column) or schema.table(column)`},
	{"keys_from_without_group_by", `keys_from_without_group_by.yaml:25:20: protected_tables[0].columns[2].keys_from: keys_from is only allowed together with group_by: true`},
	{"keys_from_with_keys", `keys_from_with_keys.yaml:27:20: protected_tables[0].columns[2].keys_from: keys and keys_from are alternatives; keep one`},
	{"rows_auto_row_privacy", `rows_auto_row_privacy.yaml:13:24: protected_tables[0].max_rows_per_unit: must be 1 (or left out) when privacy_unit is "row": each row is its own unit, so it contributes one row to one group; got auto`},
	{"rows_per_unit_word", `rows_per_unit_word.yaml:13:24: protected_tables[0].max_rows_per_unit: expected a whole number or auto; got the string "lots"`},
	{"catalog_dsn_retired", `catalog_dsn_retired.yaml:4:16: backend.catalog_dsn: was retired: dpproxy answers catalog queries`},
	{"cache_ttl_zero", `cache_ttl_zero.yaml:5:8: cache.ttl: must be a duration greater than 0 and at most 168h, got 0s; to turn the cache off, set cache.size to 0`},

	// analysts
	{"plaintext_password", "plaintext_password.yaml:6:15: analysts[0].password: looks like a plaintext password; the policy stores verifiers, never passwords: run `dpproxy passwd`"},
	{"password_missing", "password_missing.yaml:5:5: analysts[0].password: required; expected at least one of scram_sha_256, mysql_native_password, caching_sha2_password, as printed by `dpproxy passwd`"},
	{"password_no_verifier", "password_no_verifier.yaml:6:15: analysts[0].password: has no verifier; expected at least one of scram_sha_256,"},
	{"verifier_empty", "verifier_empty.yaml:7:22: analysts[0].password.scram_sha_256: must not be empty; expected the verifier printed by `dpproxy passwd`, or leave the key out"},
	{"bad_scram", "bad_scram.yaml:7:22: analysts[0].password.scram_sha_256: not a SCRAM-SHA-256 verifier (missing ':' separator)"},
	{"bad_mysql_native", `bad_mysql_native.yaml:7:30: analysts[0].password.mysql_native_password: not a mysql_native_password verifier; expected "*" followed by 40 hex digits`},
	{"bad_caching_sha2", "bad_caching_sha2.yaml:7:30: analysts[0].password.caching_sha2_password: not a caching_sha2_password verifier; expected 64 hex digits"},
	{"analyst_duplicate", `analyst_duplicate.yaml:10:11: analysts[1].name: analyst "alice" is already defined at line 5 (analysts[0]); names must be unique`},
	{"analyst_no_name", `analyst_no_name.yaml:5:5: analysts[0].name: required; expected the user name the analyst logs in with`},
	{"budget_missing", `budget_missing.yaml:5:5: analysts[0].budget: required; expected a mapping with epsilon (and optionally delta)`},
	{"budget_epsilon_zero", `budget_epsilon_zero.yaml:9:16: analysts[0].budget.epsilon: must be a finite number greater than 0, got 0`},
	{"budget_delta_one", `budget_delta_one.yaml:10:14: analysts[0].budget.delta: must be at least 0 and less than 1, got 1`},

	// tables
	{"table_duplicate", `table_duplicate.yaml:21:5: public_tables[1]: table "VISITS" is already declared at line 11 (protected_tables[0]); table names must be unique across protected_tables and public_tables, even in different schemas`},
	{"table_name_dot", `table_name_dot.yaml:11:11: protected_tables[0].name: "clinic.visits" contains '.'; write the schema separately, as schema: clinic and name: visits`},
	{"public_bad_name", `public_bad_name.yaml:20:5: public_tables[0]: "a.b.c" is not a table name; expected "table" or "schema.table"`},
	{"schema_reserved", `schema_reserved.yaml:20:5: public_tables[0].schema: schema "dpproxy" is reserved for dpproxy's own views (dpproxy.budget, dpproxy.queries); expected another schema`},
	{"public_no_name", `public_no_name.yaml:20:5: public_tables[0].name: required; expected the table's name`},
	{"privacy_unit_missing", `privacy_unit_missing.yaml:11:5: protected_tables[0].privacy_unit: required; expected "row" (each row is a person) or the name of the column identifying the person`},
	{"privacy_unit_unknown", `privacy_unit_unknown.yaml:12:19: protected_tables[0].privacy_unit: privacy unit "person_id" is not a column of the table (its columns are patient_id, cost); expected "row" or one of the listed columns`},
	{"row_with_l0", `row_with_l0.yaml:13:26: protected_tables[0].max_groups_per_unit: must be 1 (or left out) when privacy_unit is "row"`},
	{"table_linf_too_big", `table_linf_too_big.yaml:13:24: protected_tables[0].max_rows_per_unit: must be a whole number from 1 to 1000, got 5000`},
	{"column_duplicate", `column_duplicate.yaml:19:15: protected_tables[0].columns[2].name: column "Cost" is already defined at line 16 (protected_tables[0].columns[1]); column names must be unique (case-insensitively)`},
	{"column_no_type", `column_no_type.yaml:19:9: protected_tables[0].columns[2].type: required; expected one of int, bigint, float, numeric, text, date, timestamp, bool`},
	{"column_type_unknown", `column_type_unknown.yaml:20:15: protected_tables[0].columns[2].type: unknown column type "integer" (for integer, write int); expected one of int, bigint,`},
	{"bounds_on_text", `bounds_on_text.yaml:21:17: protected_tables[0].columns[2].bounds: bounds are only allowed on numeric columns (int, bigint, float, numeric); this column is text`},
	{"bounds_lo_gt_hi", `bounds_lo_gt_hi.yaml:18:17: protected_tables[0].columns[1].bounds: lo (500) is greater than hi (10); expected [lo, hi] with lo ≤ hi`},
	{"bounds_not_pair", `bounds_not_pair.yaml:18:17: protected_tables[0].columns[1].bounds: expected [lo, hi], a list of two numbers; got a list of 3`},
	{"bounds_scalar", `bounds_scalar.yaml:18:17: protected_tables[0].columns[1].bounds: expected [lo, hi], a list of two numbers; got the number 500`},
	{"bounds_string", `bounds_string.yaml:18:17: protected_tables[0].columns[1].bounds: expected [lo, hi], a list of two numbers; hi is the string "lots"`},
	{"bounds_infinite", `bounds_infinite.yaml:18:17: protected_tables[0].columns[1].bounds: lo (-Inf) is not finite; expected [lo, hi] with finite numbers`},
	{"keys_without_group_by", `keys_without_group_by.yaml:21:15: protected_tables[0].columns[2].keys: keys are only allowed together with group_by: true`},
	{"keys_duplicate", `keys_duplicate.yaml:22:30: protected_tables[0].columns[2].keys[2]: key "north" is listed twice (also keys[0]); keys must be unique`},
	{"keys_empty", `keys_empty.yaml:22:15: protected_tables[0].columns[2].keys: must not be an empty list; expected the public group keys`},
	{"unit_group_by", `unit_group_by.yaml:16:19: protected_tables[0].columns[0].group_by: the privacy unit column "patient_id" must not have group_by`},
	{"unit_bounds", `unit_bounds.yaml:16:17: protected_tables[0].columns[0].bounds: the privacy unit column "patient_id" must not have bounds`},
}

// defaultListen is the listen section with every default but the
// addresses.
func defaultListen(postgres, mysql string) Listen {
	return Listen{
		Postgres: postgres, MySQL: mysql, TLS: TLSOptional,
		StatementTimeout: DefaultStatementTimeout, IdleTimeout: DefaultIdleTimeout, WriteTimeout: DefaultWriteTimeout,
		MaxMessageSize: DefaultMaxMessageSize, MaxResultRows: DefaultMaxResultRows, MaxResultBytes: DefaultMaxResultBytes,
		MaxConnections: DefaultMaxConnections, MaxConnectionsPerAnalyst: DefaultMaxConnectionsPerAnalyst, MaxHandshakes: DefaultMaxHandshakes,
		LoginBackoff: DefaultLoginBackoff, LoginBackoffMax: DefaultLoginBackoffMax,
	}
}

func TestBadPolicies(t *testing.T) {
	for _, tc := range badCases {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", tc.file+".yaml")
			p, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want an error", path, p)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load(%s) error is %T (%v), want *ValidationError", path, err, err)
			}
			if len(ve.Errors) != 1 {
				t.Errorf("got %d errors, want exactly 1:\n%v", len(ve.Errors), err)
			}
			want := filepath.Join("testdata", "bad", tc.want)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, want)
			}
			for _, fe := range ve.Errors {
				if fe.File != path {
					t.Errorf("FieldError.File = %q, want %q", fe.File, path)
				}
			}
		})
	}
}

// TestBadPoliciesCovered keeps testdata/bad and badCases in step.
func TestBadPoliciesCovered(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tc := range badCases {
		if listed[tc.file] {
			t.Errorf("badCases lists %s twice", tc.file)
		}
		listed[tc.file] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !listed[name] {
			t.Errorf("%s has no entry in badCases", f)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("badCases lists %s, which is not in testdata/bad", name)
	}
}

func TestLoadGood(t *testing.T) {
	path := filepath.Join("testdata", "good.yaml")
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	checkGood(t, p, dir)
	if p.Path != path {
		t.Errorf("Path = %q, want %q", p.Path, path)
	}
}

// checkGood checks testdata/good.yaml as loaded with relative paths
// resolved against dir.
func checkGood(t *testing.T, p *Policy, dir string) {
	t.Helper()
	if want := (defaultListen("0.0.0.0:5433", "127.0.0.1:3307")); p.Listen != want {
		t.Errorf("Listen = %+v, want %+v", p.Listen, want)
	}
	wantBackend := Backend{Kind: BackendSQLite, Path: filepath.Join(dir, "data", "clinic.db"), MaxConns: 4}
	if p.Backend != wantBackend {
		t.Errorf("Backend = %+v, want %+v", p.Backend, wantBackend)
	}
	if want := filepath.Join(dir, "state", "ledger.db"); p.Ledger.Path != want {
		t.Errorf("Ledger.Path = %q, want %q", p.Ledger.Path, want)
	}
	wantDefaults := Defaults{Epsilon: 0.5, Delta: 1e-7, MaxEpsilonPerQuery: 2, MaxGroupsPerUnit: 3, MaxRowsPerUnit: 2, Neighbouring: Replace, Mechanism: MechanismLaplace, MinMaxQuantiles: Bounds{Lo: 0, Hi: 1}}
	if p.Defaults != wantDefaults {
		t.Errorf("Defaults = %+v, want %+v", p.Defaults, wantDefaults)
	}

	if want := (Cache{Size: 250, TTL: 90 * time.Minute}); p.Cache != want {
		t.Errorf("Cache = %+v, want %+v", p.Cache, want)
	}

	if len(p.Analysts) != 2 {
		t.Fatalf("got %d analysts, want 2", len(p.Analysts))
	}
	alice, ok := p.Analyst("alice")
	if !ok {
		t.Fatal("no analyst alice")
	}
	if want := (Budget{Epsilon: 10, Delta: 1e-5, Accountant: AccountantAdvanced, DeltaPrime: 1e-6}); alice.Budget != want {
		t.Errorf("alice.Budget = %+v, want %+v", alice.Budget, want)
	}
	checkVerifiers(t, alice.Password, testPassword)
	bob, ok := p.Analyst("bob")
	if !ok {
		t.Fatal("no analyst bob")
	}
	if want := (Budget{Epsilon: 2.5, Window: "month", Lifetime: &Budget{Epsilon: 20}}); !reflect.DeepEqual(bob.Budget, want) {
		t.Errorf("bob.Budget = %+v, want %+v", bob.Budget, want)
	}
	if _, ok := bob.Password.SCRAM(); ok {
		t.Error("bob has a SCRAM verifier; the file gives none")
	}
	if _, ok := bob.Password.CachingSHA2(); ok {
		t.Error("bob has a caching_sha2_password verifier; the file gives none")
	}
	if _, ok := bob.Password.MySQLNative(); !ok {
		t.Error("bob has no mysql_native_password verifier")
	}

	if len(p.ProtectedTables) != 2 {
		t.Fatalf("got %d protected tables, want 2", len(p.ProtectedTables))
	}
	visits, public := p.LookupTable("clinic", "visits")
	if visits == nil || public != nil {
		t.Fatal("clinic.visits is not a protected table")
	}
	if visits.PrivacyUnit != "patient_id" {
		t.Errorf("visits.PrivacyUnit = %q, want it normalised to the column's name patient_id", visits.PrivacyUnit)
	}
	if visits.IsRowPrivacy() {
		t.Error("visits has row privacy")
	}
	if visits.MaxGroupsPerUnit != 3 || visits.MaxRowsPerUnit != 5 {
		t.Errorf("visits L0, Linf = %d, %d; want 3 (from defaults), 5 (from the table)", visits.MaxGroupsPerUnit, visits.MaxRowsPerUnit)
	}
	wantCols := []Column{
		{Name: "patient_id", Type: TypeBigint},
		{Name: "clinic", Type: TypeText, GroupBy: true, Keys: []string{"north", "south", "east"}},
		{Name: "cost", Type: TypeNumeric, Bounds: &Bounds{0, 500}},
		{Name: "age", Type: TypeInt, Bounds: &Bounds{0, 120}, GroupBy: true},
		{Name: "visited_on", Type: TypeDate},
		{Name: "admitted_at", Type: TypeTimestamp},
		{Name: "urgent", Type: TypeBool, GroupBy: true, Keys: []string{"true", "false"}},
		{Name: "weight", Type: TypeFloat, Bounds: &Bounds{-0.5, 350}},
	}
	if !reflect.DeepEqual(visits.Columns, wantCols) {
		t.Errorf("visits.Columns =\n%+v\nwant\n%+v", visits.Columns, wantCols)
	}
	if c, ok := visits.Column("COST"); !ok || c.Name != "cost" {
		t.Errorf(`Column("COST") = %v, %v`, c, ok)
	}

	survey := &p.ProtectedTables[1]
	if !survey.IsRowPrivacy() || survey.MaxGroupsPerUnit != 1 || survey.MaxRowsPerUnit != 1 {
		t.Errorf("survey: row privacy %v, L0 %d, Linf %d; want row privacy with L0 = Linf = 1 despite defaults 3, 2",
			survey.IsRowPrivacy(), survey.MaxGroupsPerUnit, survey.MaxRowsPerUnit)
	}

	wantPublic := []PublicTable{{Name: "clinics"}, {Schema: "public", Name: "regions"}, {Schema: "ref", Name: "icd10"}}
	if !reflect.DeepEqual(p.PublicTables, wantPublic) {
		t.Errorf("PublicTables = %+v, want %+v", p.PublicTables, wantPublic)
	}
	if _, pub := p.LookupTable("", "CLINICS"); pub == nil {
		t.Error("CLINICS is not a public table")
	}
	if prot, pub := p.LookupTable("other", "visits"); prot != nil || pub != nil {
		t.Error("other.visits resolves; the policy declares clinic.visits")
	}
}

// checkVerifiers checks that v's parsed verifiers accept password.
func checkVerifiers(t *testing.T, v Verifiers, password string) {
	t.Helper()
	s, ok := v.SCRAM()
	if !ok {
		t.Fatal("no SCRAM verifier")
	}
	salted, err := pbkdf2.Key(sha256.New, password, s.Salt, s.Iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, salted)
	mac.Write([]byte("Client Key"))
	stored := sha256.Sum256(mac.Sum(nil))
	if !bytes.Equal(stored[:], s.StoredKey) {
		t.Error("SCRAM verifier does not match the password")
	}
	native, ok := v.MySQLNative()
	if !ok || len(native) != 20 || "*"+strings.ToUpper(fmt.Sprintf("%x", native)) != auth.MySQLNativeVerifier(password) {
		t.Errorf("MySQLNative() = %x, %v; does not match the password", native, ok)
	}
	sha2, ok := v.CachingSHA2()
	if !ok || !auth.VerifyCachingSHA2Full(sha2, password) {
		t.Errorf("CachingSHA2() = %x, %v; does not match the password", sha2, ok)
	}
}

func TestLoadDefaults(t *testing.T) {
	p, err := Load(filepath.Join("testdata", "minimal.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if want := (defaultListen("127.0.0.1:5433", "")); p.Listen != want {
		t.Errorf("Listen = %+v, want %+v", p.Listen, want)
	}
	wantBackend := Backend{Kind: BackendPostgres, DSN: "postgres://dpproxy@localhost:5432/clinic", MaxConns: 10}
	if p.Backend != wantBackend {
		t.Errorf("Backend = %+v, want %+v", p.Backend, wantBackend)
	}
	if want := filepath.Join(dir, "dpproxy-ledger.db"); p.Ledger.Path != want {
		t.Errorf("Ledger.Path = %q, want %q", p.Ledger.Path, want)
	}
	wantDefaults := Defaults{Epsilon: 0.1, Delta: 1e-6, MaxEpsilonPerQuery: 1, MaxGroupsPerUnit: 1, MaxRowsPerUnit: 1, Neighbouring: AddRemove, Mechanism: MechanismLaplace, MinMaxQuantiles: Bounds{Lo: 0, Hi: 1}}
	if p.Defaults != wantDefaults {
		t.Errorf("Defaults = %+v, want %+v", p.Defaults, wantDefaults)
	}
	if want := (Cache{Size: 1000, TTL: time.Hour}); p.Cache != want {
		t.Errorf("Cache = %+v, want %+v", p.Cache, want)
	}
}

const miniPolicy = `
backend: {kind: sqlite, path: clinic.db}
analysts:
  - name: alice
    password: {caching_sha2_password: ` + testSHA2 + `}
    budget: {epsilon: 1}
`

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		check func(t *testing.T, p *Policy)
	}{
		{"relative paths stay relative", "", func(t *testing.T, p *Policy) {
			if p.Ledger.Path != DefaultLedgerPath || p.Backend.Path != "clinic.db" {
				t.Errorf("ledger %q, sqlite %q; want both left relative", p.Ledger.Path, p.Backend.Path)
			}
			if p.Path != "" {
				t.Errorf("Path = %q, want empty", p.Path)
			}
		}},
		{"max_epsilon_per_query follows a large epsilon", "defaults: {epsilon: 3}", func(t *testing.T, p *Policy) {
			if p.Defaults.MaxEpsilonPerQuery != 3 {
				t.Errorf("MaxEpsilonPerQuery = %v, want 3", p.Defaults.MaxEpsilonPerQuery)
			}
		}},
		{"cache off, ttl default", "cache: {size: 0}", func(t *testing.T, p *Policy) {
			if p.Cache != (Cache{Size: 0, TTL: DefaultCacheTTL}) {
				t.Errorf("Cache = %+v, want size 0 (off) with the default TTL", p.Cache)
			}
		}},
		{"cache ttl in any unit", "cache: {size: 5, ttl: 1h30m}", func(t *testing.T, p *Policy) {
			if p.Cache != (Cache{Size: 5, TTL: 90 * time.Minute}) {
				t.Errorf("Cache = %+v", p.Cache)
			}
		}},
		{"null cache takes defaults", "cache:", func(t *testing.T, p *Policy) {
			if p.Cache != (Cache{Size: DefaultCacheSize, TTL: DefaultCacheTTL}) {
				t.Errorf("Cache = %+v", p.Cache)
			}
		}},
		{"postgres off, mysql on", "listen: {postgres: \"\", mysql: \":3307\"}", func(t *testing.T, p *Policy) {
			if p.Listen != (defaultListen("", ":3307")) {
				t.Errorf("Listen = %+v", p.Listen)
			}
		}},
		{"tls and timeouts", "listen: {tls_cert: certs/server.crt, tls_key: certs/server.key, statement_timeout: 30s, idle_timeout: 10m}", func(t *testing.T, p *Policy) {
			if p.Listen.StatementTimeout != 30*time.Second || p.Listen.IdleTimeout != 10*time.Minute || !strings.HasSuffix(p.Listen.TLSCert, "certs/server.crt") {
				t.Errorf("Listen = %+v", p.Listen)
			}
		}},
		{"shared ledger", "ledger: {postgres: \"postgres://ledger@db/ledger\"}", func(t *testing.T, p *Policy) {
			if !p.Ledger.Shared() || p.Ledger.Schema != DefaultLedgerSchema || p.Ledger.HoldLease != DefaultHoldLease {
				t.Errorf("Ledger = %+v", p.Ledger)
			}
		}},
		{"null sections take defaults", "listen:\nledger:\ndefaults:\nprotected_tables:\npublic_tables:", func(t *testing.T, p *Policy) {
			if p.Listen.Postgres != DefaultPostgresListen || p.Defaults.Epsilon != DefaultEpsilon || p.Ledger.Path != DefaultLedgerPath {
				t.Errorf("defaults not applied: %+v %+v %+v", p.Listen, p.Defaults, p.Ledger)
			}
		}},
		{"table L0 and Linf from defaults", `
defaults: {max_groups_per_unit: 4, max_rows_per_unit: 6}
protected_tables:
  - name: t1
    privacy_unit: pid
    columns: [{name: pid, type: int}]
  - name: t2
    privacy_unit: pid
    max_groups_per_unit: 2
    columns: [{name: pid, type: int}]
  - name: t3
    privacy_unit: row
    max_rows_per_unit: 1`, func(t *testing.T, p *Policy) {
			got := [][2]int{}
			for _, tb := range p.ProtectedTables {
				got = append(got, [2]int{tb.MaxGroupsPerUnit, tb.MaxRowsPerUnit})
			}
			if want := [][2]int{{4, 6}, {2, 6}, {1, 1}}; !reflect.DeepEqual(got, want) {
				t.Errorf("L0, Linf = %v, want %v", got, want)
			}
		}},
		{"anchors and aliases", `
protected_tables:
  - name: t1
    privacy_unit: pid
    columns:
      - &pid {name: pid, type: int}
      - {name: cost, type: float, bounds: &b [0, 10]}
  - name: t2
    privacy_unit: pid
    columns:
      - *pid
      - {name: cost, type: float, bounds: *b}`, func(t *testing.T, p *Policy) {
			if b := p.ProtectedTables[1].Columns[1].Bounds; b == nil || *b != (Bounds{0, 10}) {
				t.Errorf("aliased bounds = %v", b)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(miniPolicy+tc.extra), "inline.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, p)
		})
	}
}

// The policy's accountant is every analyst's whose budget names none and
// does not renew.
func TestDefaultAccountant(t *testing.T) {
	policy := "backend: {kind: sqlite, path: clinic.db}\ndefaults: {accountant: zcdp, delta_prime: 1e-7}\nanalysts:\n" +
		"  - {name: a, password: {caching_sha2_password: " + testSHA2 + "}, budget: {epsilon: 5, delta: 1e-5}}\n" +
		"  - {name: b, password: {caching_sha2_password: " + testSHA2 + "}, budget: {epsilon: 5, accountant: basic}}\n" +
		"  - {name: c, password: {caching_sha2_password: " + testSHA2 + "}, budget: {epsilon: 5, window: day}}\n"
	p, err := Parse([]byte(policy), "inline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Analyst("a")
	b, _ := p.Analyst("b")
	c, _ := p.Analyst("c")
	if a.Budget.Accountant != AccountantZCDP || a.Budget.DeltaPrime != 1e-7 || b.Budget.Accountant != AccountantBasic || c.Budget.Accountant != "" {
		t.Errorf("accountants %q (δ′ %g), %q, %q; want zcdp inherited, basic kept, none for a renewing budget", a.Budget.Accountant, a.Budget.DeltaPrime, b.Budget.Accountant, c.Budget.Accountant)
	}
}

// A rolling window of too many days is refused, not wrapped around.
func TestRollingWindowOverflow(t *testing.T) {
	for _, w := range []string{"202163959358895d", "400d", "0d", "-3d"} {
		if d, ok := RollingWindow(w); ok {
			t.Errorf("RollingWindow(%q) = %v, want refused", w, d)
		}
	}
	if d, ok := RollingWindow("31d"); !ok || d != 31*24*time.Hour {
		t.Errorf("RollingWindow(31d) = %v, %v", d, ok)
	}
}

func TestLoadResolvesOnlyFilePaths(t *testing.T) {
	for _, path := range []string{":memory:", "file:clinic.db?mode=ro"} {
		src := strings.Replace(miniPolicy, "path: clinic.db", fmt.Sprintf("path: %q", path), 1)
		d := &decoder{file: "x", pos: map[string]*yaml.Node{}, bad: map[string]bool{}}
		root := d.document([]byte(src))
		p := &Policy{}
		d.policy(root, p)
		d.validate(p, "/policies")
		if err := d.result(); err != nil {
			t.Fatal(err)
		}
		if p.Backend.Path != path {
			t.Errorf("Backend.Path = %q, want %q left alone", p.Backend.Path, path)
		}
		if want := filepath.Join("/policies", DefaultLedgerPath); p.Ledger.Path != want {
			t.Errorf("Ledger.Path = %q, want %q", p.Ledger.Path, want)
		}
	}
}

func TestPlaintextPasswordNotEchoed(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "bad", "plaintext_password.yaml"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v repeats the plaintext password", err)
	}
}

func TestManyErrorsSortedAndPositioned(t *testing.T) {
	src := `protected_tables:
  - name: t
    privacy_unit: pid
    columns:
      - {name: pid, type: int}
      - {name: x, type: text, bounds: [0, 1]}
defaults:
  epsilon: 0
backend: {kind: nosql}
`
	_, err := Parse([]byte(src), "multi.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	want := []FieldError{
		{File: "multi.yaml", Line: 6, Column: 39, Field: "protected_tables[0].columns[1].bounds"},
		{File: "multi.yaml", Line: 8, Column: 12, Field: "defaults.epsilon"},
		{File: "multi.yaml", Line: 9, Column: 17, Field: "backend.kind"},
	}
	if len(ve.Errors) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(ve.Errors), len(want), err)
	}
	for i, w := range want {
		got := ve.Errors[i]
		got.Message = ""
		if got != w {
			t.Errorf("error %d at %+v, want %+v", i, got, w)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "multi.yaml:9:17: backend.kind: unknown backend kind \"nosql\"") {
		t.Errorf("Error() =\n%v", err)
	}
}

func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("backend: {kind: sqlite, path: x.db}\nanalysts:\n")
	for i := 0; i < 25; i++ {
		b.WriteString("  - {budget: {epsilon: 1}}\n") // no name, no password
	}
	_, err := Parse([]byte(b.String()), "many.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if len(ve.Errors) != MaxErrors || ve.Omitted != 50-MaxErrors {
		t.Errorf("got %d errors and %d omitted, want %d and %d", len(ve.Errors), ve.Omitted, MaxErrors, 50-MaxErrors)
	}
	if !strings.HasSuffix(err.Error(), "\n... and 30 more errors") {
		t.Errorf("Error() does not end with the omitted count:\n%v", err)
	}
	if ve.Errors[0].Line != 3 || ve.Errors[MaxErrors-1].Line != 12 {
		t.Errorf("errors not sorted by line: first %d, last %d", ve.Errors[0].Line, ve.Errors[MaxErrors-1].Line)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "no-such-policy.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		t.Error("a missing file is reported as a ValidationError")
	}
}

func TestFieldErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "p.yaml", Line: 3, Column: 7, Field: "a.b", Message: "bad"}, "p.yaml:3:7: a.b: bad"},
		{FieldError{File: "p.yaml", Line: 3, Message: "bad"}, "p.yaml:3: bad"},
		{FieldError{File: "p.yaml", Message: "bad"}, "p.yaml: bad"},
		{FieldError{Field: "a", Message: "bad"}, "a: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestMarshalRoundTrip checks that the effective policy, written back out
// with yaml.v3, loads to the same policy.
func TestMarshalRoundTrip(t *testing.T) {
	for _, name := range []string{"good.yaml", "minimal.yaml"} {
		t.Run(name, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			q, err := Parse(out, "marshalled.yaml")
			if err != nil {
				t.Fatalf("Parse(Marshal(policy)): %v\n%s", err, out)
			}
			q.Path = p.Path
			if !reflect.DeepEqual(p, q) {
				t.Errorf("round trip changed the policy:\n%s", out)
			}
		})
	}
}

func TestBoundsYAML(t *testing.T) {
	var b Bounds
	if err := yaml.Unmarshal([]byte("[-1.5, 2e3]"), &b); err != nil || b != (Bounds{-1.5, 2000}) {
		t.Errorf("Unmarshal = %+v, %v", b, err)
	}
	for _, bad := range []string{"[3, 1]", "[1]", "{lo: 1, hi: 2}", "[a, 2]", "[.nan, 1]"} {
		var b Bounds
		if err := yaml.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("Unmarshal(%s) = %+v, want an error", bad, b)
		}
	}
	out, err := yaml.Marshal(struct {
		B *Bounds `yaml:"b"`
	}{&Bounds{0, 1e6}})
	if err != nil || string(out) != "b: [0, 1e+06]\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}

func TestNewVerifiers(t *testing.T) {
	v, err := NewVerifiers(testPassword)
	if err != nil {
		t.Fatal(err)
	}
	checkVerifiers(t, v, testPassword)
	if v.MySQLNativePassword != testNative || v.CachingSHA2Password != testSHA2 {
		t.Errorf("NewVerifiers = %+v; want the unsalted verifiers of testdata/good.yaml", v)
	}
	w, err := NewVerifiers(testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if v.SCRAMSHA256 == w.SCRAMSHA256 {
		t.Error("two SCRAM verifiers for the same password share a salt")
	}
	// What NewVerifiers prints, a policy accepts.
	src := strings.Replace(miniPolicy, "{caching_sha2_password: "+testSHA2+"}",
		fmt.Sprintf("{scram_sha_256: %q, mysql_native_password: %q}", v.SCRAMSHA256, v.MySQLNativePassword), 1)
	if _, err := Parse([]byte(src), "passwd.yaml"); err != nil {
		t.Errorf("policy with NewVerifiers output: %v", err)
	}
	if _, err := NewVerifiers(""); err == nil {
		t.Error("NewVerifiers(\"\") succeeded")
	}
}

func TestVerifiersWithoutCache(t *testing.T) {
	// Built as a literal: parsed on demand.
	v := Verifiers{SCRAMSHA256: testSCRAM, MySQLNativePassword: testNative, CachingSHA2Password: testSHA2}
	checkVerifiers(t, v, testPassword)
	if _, ok := (Verifiers{MySQLNativePassword: "*nothex"}).MySQLNative(); ok {
		t.Error("an unparseable verifier reports ok")
	}
	if !(Verifiers{}).Empty() || v.Empty() {
		t.Error("Empty is wrong")
	}

	// A cached Verifiers whose string is then replaced answers for the new
	// string, not from the stale cache.
	v2, err := NewVerifiers("other password")
	if err != nil {
		t.Fatal(err)
	}
	v2.CachingSHA2Password = testSHA2
	if sha2, ok := v2.CachingSHA2(); !ok || !auth.VerifyCachingSHA2Full(sha2, testPassword) {
		t.Error("CachingSHA2 answered from a stale cache")
	}
}

func TestInfiniteBudgetRejected(t *testing.T) {
	src := strings.Replace(miniPolicy, "budget: {epsilon: 1}", "budget: {epsilon: .inf}", 1)
	_, err := Parse([]byte(src), "inf.yaml")
	if err == nil || !strings.Contains(err.Error(), "inf.yaml:6:23: analysts[0].budget.epsilon: must be a finite number greater than 0, got +Inf") {
		t.Errorf("err = %v", err)
	}
}

// A privacy unit reached through a foreign key: the via column is the
// table's unit, and the path is kept for explain.
func TestUnitPath(t *testing.T) {
	p, err := Parse([]byte(`
backend: {kind: sqlite, path: x.db}
analysts:
  - name: alice
    password:
      scram_sha_256: "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$yERwYmHlx0VrpoYfOn54hMTjBUKWnmK42IDjnWgQWkk=:RQZr9F8QCYmmp35tAVzp0VB/kDwY283N+s24jDDliG4="
    budget: {epsilon: 1}
protected_tables:
  - name: patients
    privacy_unit: patient_id
    columns: [{name: patient_id, type: int}]
  - name: visits
    privacy_unit: {via: PATIENT_ID, references: patients.patient_id}
    columns: [{name: patient_id, type: int}]
  - name: prescriptions
    privacy_unit: {via: visit_id, references: visits.visit_id}
    columns: [{name: visit_id, type: int}]
  - name: doses
    privacy_unit: {via: prescription_id, references: prescriptions.prescription_id}
    columns: [{name: prescription_id, type: int}]
`), "path.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v := &p.ProtectedTables[1]
	if v.PrivacyUnit != "patient_id" || v.UnitPath == nil || v.UnitPath.String() != "patients.patient_id" {
		t.Fatalf("visits: unit %q, path %+v", v.PrivacyUnit, v.UnitPath)
	}
	// The hops: none where the path references units, one join per key.
	hops := func(t *ProtectedTable) string {
		var s []string
		for _, h := range p.UnitHops(t) {
			s = append(s, h.Table.Name+"."+h.Key+"→"+h.Table.PrivacyUnit)
		}
		return strings.Join(s, " ")
	}
	for i, want := range []string{"", "", "visits.visit_id→patient_id", "prescriptions.prescription_id→visit_id visits.visit_id→patient_id"} {
		if got := hops(&p.ProtectedTables[i]); got != want {
			t.Errorf("%s: hops %q, want %q", p.ProtectedTables[i].Name, got, want)
		}
	}
}

// The admin listener and the audit log parse with their defaults; a
// relative audit path is resolved against the policy's directory.
func TestAdminAndAudit(t *testing.T) {
	dir := t.TempDir()
	base, err := os.ReadFile("testdata/bad/ledger_lease_short.yaml")
	if err != nil {
		t.Fatal(err)
	}
	policy := strings.Join(strings.Split(string(base), "\n")[:17], "\n") + `
admin:
  listen: 127.0.0.1:9187
  user: ops
  password:
    scram_sha_256: "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$yERwYmHlx0VrpoYfOn54hMTjBUKWnmK42IDjnWgQWkk=:RQZr9F8QCYmmp35tAVzp0VB/kDwY283N+s24jDDliG4="
audit:
  path: logs/audit.jsonl
`
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Admin.Password.SCRAM(); p.Admin.Listen != "127.0.0.1:9187" || p.Admin.User != "ops" || !ok {
		t.Errorf("admin %+v", p.Admin)
	}
	want := Audit{Path: filepath.Join(dir, "logs/audit.jsonl"), MaxSizeMB: DefaultAuditMaxSizeMB, MaxFiles: DefaultAuditMaxFiles, Fsync: AuditFsyncNever}
	if p.Audit != want {
		t.Errorf("audit %+v, want %+v", p.Audit, want)
	}
}

// TestPipelineLanes: unset, the backend picks; a number, including 0
// (off), is kept.
func TestPipelineLanes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want *int
	}{
		{"", nil},
		{"  pipeline_lanes: 0\n", ptr(0)},
		{"  pipeline_lanes: 3\n", ptr(3)},
	} {
		text := strings.Replace(string(data), "backend:\n", "backend:\n"+tc.line, 1)
		p, err := Parse([]byte(text), "lanes.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		got := p.Backend.PipelineLanes
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%q: PipelineLanes = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// loadMinimalWith loads testdata/minimal.yaml with head (whole sections)
// before it.
func loadMinimalWith(t *testing.T, head string) *Policy {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	minimal, err := os.ReadFile(filepath.Join("testdata", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte(head), minimal...), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	return p
}

func TestProcessorsSetting(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   int
	}{
		{"", 0},
		{"listen:\n  processors: auto\n", 0},
		{"listen:\n  processors: 1\n", 1},
		{"listen:\n  processors: 8\n", 8},
		{"listen:\n  processors:\n", 0},
	} {
		p := loadMinimalWith(t, tc.listen)
		if got := p.Listen.Processors; got != tc.want {
			t.Errorf("%q: Processors = %d, want %d", tc.listen, got, tc.want)
		}
	}
}

func TestDirectIOSetting(t *testing.T) {
	for _, tc := range []struct {
		listen string
		want   bool
	}{
		{"", true},
		{"listen:\n  direct_io: true\n", true},
		{"listen:\n  direct_io: false\n", false},
		{"listen:\n  direct_io:\n", true},
	} {
		p := loadMinimalWith(t, tc.listen)
		if got := p.Listen.DirectIOEnabled(); got != tc.want {
			t.Errorf("%q: DirectIOEnabled() = %v, want %v", tc.listen, got, tc.want)
		}
	}
}
