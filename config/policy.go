package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Policy is a loaded and validated policy file. Every field has been
// checked by Load (or Parse) and defaults have been filled in; code that
// receives a *Policy from them may rely on the invariants documented on
// each field.
//
// Marshalling a loaded Policy with gopkg.in/yaml.v3 produces a file that
// Parse accepts and that loads to the same policy (the effective policy,
// with defaults and resolved paths written out).
type Policy struct {
	// Path is the file the policy was loaded from, as given to Load ("" for
	// Parse and for built-in policies).
	Path string `yaml:"-"`

	Listen   Listen   `yaml:"listen"`
	Backend  Backend  `yaml:"backend"`
	Ledger   Ledger   `yaml:"ledger"`
	Defaults Defaults `yaml:"defaults"`
	Cache    Cache    `yaml:"cache"`
	Admin    Admin    `yaml:"admin,omitempty"`
	Audit    Audit    `yaml:"audit,omitempty"`

	// Analysts have unique, non-empty names.
	Analysts []Analyst `yaml:"analysts"`
	// Teams are budgets several analysts draw on together (optional).
	Teams []Team `yaml:"teams,omitempty"`
	// ProtectedTables and PublicTables together have unique table names
	// (case-insensitively, regardless of schema).
	ProtectedTables []ProtectedTable `yaml:"protected_tables"`
	PublicTables    []PublicTable    `yaml:"public_tables"`
}

// Listen holds the addresses the front ends listen on. At least one is set,
// and each set address is host:port with a numeric port.
type Listen struct {
	// Postgres is host:port for the PostgreSQL wire front end ("" = off).
	// It defaults to DefaultPostgresListen when the key is absent; write
	// `postgres: ""` to turn the front end off.
	Postgres string `yaml:"postgres"`
	// MySQL is host:port for the MySQL wire front end ("" = off, the
	// default).
	MySQL string `yaml:"mysql"`
	// TLSCert and TLSKey are PEM files (both or neither; relative paths are
	// resolved against the policy file's directory). With them, clients
	// that ask for TLS get it; without them, TLS requests are declined.
	TLSCert string `yaml:"tls_cert,omitempty"`
	TLSKey  string `yaml:"tls_key,omitempty"`
	// TLS is TLSOptional (the default: clients that ask for TLS get it,
	// others may connect in plaintext) or TLSRequired (plaintext
	// connections are refused on both protocols; needs TLSCert and TLSKey).
	TLS TLSMode `yaml:"tls,omitempty"`
	// StatementTimeout cancels a statement that runs longer, sending its
	// result included (default 5m).
	StatementTimeout time.Duration `yaml:"statement_timeout,omitempty"`
	// IdleTimeout closes a connection idle for longer (default 1h).
	IdleTimeout time.Duration `yaml:"idle_timeout,omitempty"`
	// WriteTimeout closes a connection whose client does not read what is
	// sent to it for this long (default 1m).
	WriteTimeout time.Duration `yaml:"write_timeout,omitempty"`
	// MaxMessageSize is the largest message (PostgreSQL) or packet
	// (MySQL) a logged-in client may send, and so the longest statement,
	// in bytes (default 1 MiB; before login much smaller fixed limits
	// apply).
	MaxMessageSize int `yaml:"max_message_size,omitempty"`
	// MaxResultRows and MaxResultBytes cap one result: a statement whose
	// result grows past either ends with an error and the connection stays
	// usable (defaults 1,000,000 rows and 256 MiB).
	MaxResultRows  int   `yaml:"max_result_rows,omitempty"`
	MaxResultBytes int64 `yaml:"max_result_bytes,omitempty"`
	// MaxConnections caps client connections over both protocols,
	// MaxConnectionsPerAnalyst those of one analyst, and MaxHandshakes
	// those not yet logged in (defaults 1000, 100, 200).
	MaxConnections           int `yaml:"max_connections,omitempty"`
	MaxConnectionsPerAnalyst int `yaml:"max_connections_per_analyst,omitempty"`
	MaxHandshakes            int `yaml:"max_handshakes,omitempty"`
	// LoginBackoff is the delay after a failed login, doubled for each
	// further failure of the same analyst name or client address, up to
	// LoginBackoffMax (defaults 250ms and 30s).
	LoginBackoff    time.Duration `yaml:"login_backoff,omitempty"`
	LoginBackoffMax time.Duration `yaml:"login_backoff_max,omitempty"`
	// DirectIO makes the small reads and writes of every client and
	// backend socket raw system calls while the process is busy (package
	// directio): less CPU per query under load on virtualized machines.
	// Default true; set false to use the Go runtime's ordinary calls
	// always. Read at start.
	DirectIO *bool `yaml:"direct_io,omitempty"`
	// Processors fixes how many processors Go's scheduler runs dpproxy's
	// goroutines on (GOMAXPROCS). 0, "auto" in the file (the default):
	// one while dpproxy's load fits in one core and rarely waits in a
	// system call, all of them otherwise (package procs), unless the
	// GOMAXPROCS environment variable fixes the count. Read at start.
	Processors int `yaml:"processors,omitempty"`
}

// DirectIOEnabled is DirectIO with its default (true).
func (l Listen) DirectIOEnabled() bool { return l.DirectIO == nil || *l.DirectIO }

// TLSMode says whether clients must use TLS.
type TLSMode string

const (
	// TLSOptional gives TLS to clients that ask for it (when a
	// certificate is configured) and accepts plaintext from the others.
	TLSOptional TLSMode = "optional"
	// TLSRequired refuses plaintext connections.
	TLSRequired TLSMode = "required"
)

// BackendKind names a supported backend database.
type BackendKind string

const (
	BackendPostgres BackendKind = "postgres"
	BackendSQLite   BackendKind = "sqlite"
	BackendMySQL    BackendKind = "mysql"
)

// Backend says where the data lives and how dpproxy connects to it. The
// credentials are dpproxy's own, never an analyst's.
type Backend struct {
	// Kind is one of BackendPostgres, BackendSQLite, BackendMySQL.
	Kind BackendKind `yaml:"kind"`
	// DSN is the connection string for postgres and mysql backends (set for
	// them, empty for sqlite).
	DSN string `yaml:"dsn,omitempty"`
	// Path is the database file for the sqlite backend (set for it, empty
	// otherwise). Load resolves a relative path against the policy file's
	// directory; ":memory:" and "file:" URIs are left as written.
	Path string `yaml:"path,omitempty"`
	// MaxConns bounds the connection pool: 1 ≤ MaxConns ≤ MaxMaxConns
	// (default DefaultMaxConns).
	MaxConns int `yaml:"max_conns"`
	// PipelineLanes (postgres and mysql), when set, is how many batches
	// of concurrent short statements (public-table statements; on
	// PostgreSQL also DP queries' backend SQL) run at once, each
	// pipelined on one connection, and as many again while those lanes
	// are stalled (spare lanes, backend/combine.go); 0 sends every
	// statement on a connection of its own. Unset, dpproxy picks one per
	// processor it starts on (one unless listen.processors or GOMAXPROCS
	// fixes more), at most half of MaxConns.
	PipelineLanes *int `yaml:"pipeline_lanes,omitempty"`
}

// Ledger configures the durable privacy-budget ledger.
type Ledger struct {
	// Path of the embedded ledger file (default DefaultLedgerPath, never
	// empty). Load resolves a relative path against the policy file's
	// directory; Parse leaves it relative to the working directory.
	Path string `yaml:"path"`
	// Postgres, when set, is the DSN of a PostgreSQL database holding a
	// ledger several dpproxy instances share (Path is then unused).
	Postgres string `yaml:"postgres,omitempty"`
	// Schema is the shared ledger's schema (default DefaultLedgerSchema).
	Schema string `yaml:"schema,omitempty"`
	// HoldLease is how long the shared ledger keeps the reservations of
	// an instance that stopped renewing them (default
	// DefaultHoldLease; 3 s to 10 min).
	HoldLease time.Duration `yaml:"hold_lease,omitempty"`
}

// Shared reports whether the ledger is a shared PostgreSQL one.
func (l Ledger) Shared() bool { return l.Postgres != "" }

// Neighbouring is the neighbouring-database definition the guarantees use.
type Neighbouring string

const (
	// AddRemove: neighbours differ by adding or removing one privacy unit.
	AddRemove Neighbouring = "add_remove"
	// Replace: neighbours differ by replacing one privacy unit's data.
	Replace Neighbouring = "replace"
)

// Defaults apply to every query unless a table or session overrides them.
type Defaults struct {
	// Epsilon charged per query (finite, > 0, ≤ MaxEpsilonPerQuery;
	// default DefaultEpsilon).
	Epsilon float64 `yaml:"epsilon"`
	// Delta charged per query when a mechanism needs it (0 ≤ Delta < 1;
	// default DefaultDelta).
	Delta float64 `yaml:"delta"`
	// MaxEpsilonPerQuery caps what a session may set (finite, ≥ Epsilon;
	// default max(1, Epsilon)).
	MaxEpsilonPerQuery float64 `yaml:"max_epsilon_per_query"`
	// MaxGroupsPerUnit is L0: the most GROUP BY groups one unit contributes
	// to (1 ≤ L0 ≤ MaxContribution; default 1).
	MaxGroupsPerUnit int `yaml:"max_groups_per_unit"`
	// MaxRowsPerUnit is Linf: the most rows one unit contributes per group
	// (1 ≤ Linf ≤ MaxContribution; default 1).
	MaxRowsPerUnit int `yaml:"max_rows_per_unit"`
	// Neighbouring definition, AddRemove or Replace (default AddRemove).
	Neighbouring Neighbouring `yaml:"neighbouring"`
	// Mechanism chooses the noise of measurements: MechanismLaplace
	// (default), MechanismGaussian when the query has δ > 0, or
	// MechanismAuto, whichever has the smaller 95 % error bound per
	// measurement.
	Mechanism Mechanism `yaml:"mechanism,omitempty"`
	// MinMaxQuantiles are the quantile levels MIN and MAX are answered as
	// (a DP quantile, see rewrite): [0, 1] by default. A level just inside
	// (such as [0.01, 0.99]) is far more accurate: the 0 quantile is any
	// value between the lower bound and the true minimum. In YAML a pair
	// `min_max_quantiles: [0.01, 0.99]`.
	MinMaxQuantiles Bounds `yaml:"min_max_quantiles"`
	// Accountant and DeltaPrime are the accountant of every analyst whose
	// budget names none and does not renew (see Budget.Accountant); an
	// analyst whose delta leaves no room for DeltaPrime adds up by basic
	// composition.
	Accountant string  `yaml:"accountant,omitempty"`
	DeltaPrime float64 `yaml:"delta_prime,omitempty"`
}

// Cache configures the result cache: an analyst who repeats a query (the
// same parsed statement at the same ε and δ) gets the answer already
// released, at no further cost, instead of a fresh noisy answer that could
// be averaged with the first.
type Cache struct {
	// Size is the most answers kept, over all analysts: 0 ≤ Size ≤
	// MaxCacheSize (default DefaultCacheSize). 0 turns the cache off, so
	// every repetition is charged again.
	Size int `yaml:"size"`
	// TTL is how long an answer stays in the cache (> 0, at most
	// MaxCacheTTL; default DefaultCacheTTL). After it, the same query is
	// answered afresh and charged again. In YAML it is a Go duration
	// string such as "1h", "30m" or "90s".
	TTL time.Duration `yaml:"ttl"`
}

// Analyst is a person allowed to connect, with their credentials and budget.
type Analyst struct {
	// Name is the login name (non-empty, unique within the policy).
	Name string `yaml:"name"`
	// Password has at least one verifier, and every one set parses.
	Password Verifiers `yaml:"password"`
	Budget   Budget    `yaml:"budget"`
}

// Team is a named group of analysts drawing on one budget: every charge of
// a member counts against the team's budget as well as the member's own,
// and a query is refused when either is exhausted, so that the team's
// analysts together cannot spend more on the same people.
type Team struct {
	// Name is non-empty and unique among teams.
	Name string `yaml:"name"`
	// Analysts are the members, each an analyst of the policy; an analyst
	// may belong to several teams.
	Analysts []string `yaml:"analysts"`
	Budget   Budget   `yaml:"budget"`
}

// Verifiers hold what the authentication methods need to check a password,
// never the password itself. `dpproxy passwd` prints them (see
// NewVerifiers). An empty string means the method is not available for the
// analyst.
//
// Load parses every verifier once and keeps the parsed form; use the SCRAM,
// MySQLNative and CachingSHA2 methods rather than parsing the strings.
type Verifiers struct {
	// SCRAMSHA256 is PostgreSQL's stored form:
	// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64).
	SCRAMSHA256 string `yaml:"scram_sha_256,omitempty"`
	// MySQLNativePassword is "*" + upper hex SHA1(SHA1(password)).
	MySQLNativePassword string `yaml:"mysql_native_password,omitempty"`
	// CachingSHA2Password is hex SHA256(SHA256(password)), what the
	// caching_sha2_password fast path verifies against.
	CachingSHA2Password string `yaml:"caching_sha2_password,omitempty"`

	// parsed caches the decoded verifiers; nil when the Verifiers were
	// built as a literal. Shared, never modified after it is built.
	parsed *parsedVerifiers
}

// Budget is an analyst's total privacy budget under basic composition.
type Budget struct {
	// Epsilon is finite and > 0.
	Epsilon float64 `yaml:"epsilon"`
	// Delta is in [0, 1) (default 0).
	Delta float64 `yaml:"delta"`
	// Accountant is how an analyst's charges add up: AccountantBasic (the
	// default: ε and δ add up), AccountantAdvanced (advanced composition)
	// or AccountantZCDP (zero-concentrated DP), the last two with
	// DeltaPrime, which must fit in Delta (budget.Composition). Only
	// analysts' budgets take it.
	Accountant string  `yaml:"accountant,omitempty"`
	DeltaPrime float64 `yaml:"delta_prime,omitempty"`
	// Window makes an analyst's budget renew: "day", "week", "month"
	// (calendar periods in UTC) or a rolling duration up to 31 days ("7d",
	// "36h"); Lifetime then optionally caps all charges (budget.Window).
	// A windowed budget adds up by basic composition.
	Window   string  `yaml:"window,omitempty"`
	Lifetime *Budget `yaml:"lifetime,omitempty"`
}

// RollingWindow reads a rolling window ("7d", "36h"); ok is false for a
// calendar period or anything else.
func RollingWindow(s string) (d time.Duration, ok bool) {
	if days, found := strings.CutSuffix(s, "d"); found {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 366 { // no overflow when multiplied
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

// Accountants of a budget.
const (
	AccountantBasic    = "basic"
	AccountantAdvanced = "advanced"
	AccountantZCDP     = "zcdp"
)

// UnitReference is the table and column a unit foreign key references.
type UnitReference struct {
	Schema, Table, Column string
}

// String writes the reference as the policy does: [schema.]table.column.
func (r *UnitReference) String() string {
	if r.Schema != "" {
		return r.Schema + "." + r.Table + "." + r.Column
	}
	return r.Table + "." + r.Column
}

// UnitHop is one join a table's rows need to reach their privacy unit:
// the unit column so far equals Table's Key column, whose row carries the
// unit further (Table.PrivacyUnit).
type UnitHop struct {
	Table *ProtectedTable
	// Key is the referenced column of Table: a key of it (a single-column
	// primary key, checked when dpproxy starts), so that a row references
	// at most one row of Table and so belongs to at most one person.
	Key string
}

// UnitHops lists the joins that lead from t's rows to their privacy
// unit, following t's unit path: a reference to another table's privacy
// unit needs no join (the values are the units), a reference to another
// column of that table (a key) needs one. nil when t's unit column holds
// the unit. The unit is the last hop's table's PrivacyUnit column (t's own
// when there is no hop). The policy must be loaded (paths validated).
func (p *Policy) UnitHops(t *ProtectedTable) []UnitHop {
	var hops []UnitHop
	seen := map[*ProtectedTable]bool{t: true}
	for cur := t; cur.UnitPath != nil; {
		next, _ := p.LookupTable(cur.UnitPath.Schema, cur.UnitPath.Table)
		if next == nil || seen[next] {
			break // not a loaded policy
		}
		if !equalFold(next.PrivacyUnit, cur.UnitPath.Column) {
			hops = append(hops, UnitHop{Table: next, Key: cur.UnitPath.Column})
		}
		seen[next] = true
		cur = next
	}
	return hops
}

// RowPrivacyUnit is the PrivacyUnit value meaning "each row is one unit".
const RowPrivacyUnit = "row"

// ProtectedTable is a table whose rows never leave: only DP aggregates do.
type ProtectedTable struct {
	// Schema is optional; when set, a qualified reference must match it.
	Schema string `yaml:"schema,omitempty"`
	// Name is the unqualified table name (non-empty, no '.').
	Name string `yaml:"name"`
	// PrivacyUnit is the column identifying the protected person, or "row"
	// (RowPrivacyUnit). When it names a column, Load rewrites it to that
	// column's Name exactly as declared in Columns.
	PrivacyUnit string `yaml:"privacy_unit"`
	// UnitPath, when set, says the unit column is a foreign key to another
	// protected table: in YAML `privacy_unit: {via: patient_id,
	// references: patients.patient_id}`. PrivacyUnit is then the via
	// column. When the referenced column is not that table's privacy unit
	// but a key (`{via: visit_id, references: visits.visit_id}`), each
	// row belongs to the person the referenced row belongs to: the path
	// continues from there (UnitHops). Load checks that the path ends at
	// a table with a privacy unit column, without cycles.
	UnitPath *UnitReference `yaml:"-"`
	// UnitIsKey is set when dpproxy starts (session), never from YAML:
	// the database declares the privacy unit column this table's primary
	// key, alone, so that no two rows share a unit and none has a NULL
	// one. Each unit is then exactly one row: a query that reads this
	// table alone needs no per-unit bounding step (rewrite.Plan's
	// OneRowPerUnit).
	UnitIsKey bool `yaml:"-"`
	// UnitNotNull is set when dpproxy starts (session), never from YAML:
	// the database declares the privacy unit column (a unit path's via
	// column) NOT NULL.
	UnitNotNull bool `yaml:"-"`
	// MaxGroupsPerUnit (L0) and MaxRowsPerUnit (Linf) override the defaults;
	// Load fills them from Defaults when absent, so both are in
	// [1, MaxContribution]. For "row" privacy both are 1.
	MaxGroupsPerUnit int `yaml:"max_groups_per_unit"`
	MaxRowsPerUnit   int `yaml:"max_rows_per_unit"`
	// MaxTotalRowsPerUnit (C), when not 0, bounds the rows one unit
	// contributes over all groups together: a unit with more (after the
	// per-group bound) has each of its rows weighted by C/total, so a
	// grouped count moves by at most C in all instead of L0·Linf. Not for
	// "row" privacy; in [1, MaxContribution].
	MaxTotalRowsPerUnit int `yaml:"max_total_rows_per_unit,omitempty"`
	// Budget, when set, is the table's own budget (a privacy domain):
	// every query that reads the table, whoever asks, draws on it as well
	// as on the analyst's (and team's) budget.
	Budget *Budget `yaml:"budget,omitempty"`
	// Columns lists every column analysts may reference; others are unknown
	// to them. Names are unique case-insensitively. The privacy unit column
	// has neither GroupBy nor Bounds.
	Columns []Column `yaml:"columns"`
}

// ColumnType is the SQL type of a column as the policy declares it.
type ColumnType string

const (
	TypeInt       ColumnType = "int"     // 32-bit integer (PostgreSQL integer)
	TypeBigint    ColumnType = "bigint"  // 64-bit integer
	TypeFloat     ColumnType = "float"   // double precision
	TypeNumeric   ColumnType = "numeric" // exact decimal
	TypeText      ColumnType = "text"
	TypeDate      ColumnType = "date"
	TypeTimestamp ColumnType = "timestamp"
	TypeBool      ColumnType = "bool"
)

// Numeric reports whether the type can be summed and averaged.
func (t ColumnType) Numeric() bool {
	switch t {
	case TypeInt, TypeBigint, TypeFloat, TypeNumeric:
		return true
	}
	return false
}

// SQLType is the result type of a column of this type.
func (t ColumnType) SQLType() sqltypes.Type {
	switch t {
	case TypeInt:
		return sqltypes.Int4
	case TypeBigint:
		return sqltypes.Int8
	case TypeFloat:
		return sqltypes.Float8
	case TypeNumeric:
		return sqltypes.Numeric
	case TypeDate:
		return sqltypes.Date
	case TypeTimestamp:
		return sqltypes.Timestamp
	case TypeBool:
		return sqltypes.Bool
	}
	return sqltypes.Text
}

// Integer reports whether the type holds whole numbers only.
func (t ColumnType) Integer() bool { return t == TypeInt || t == TypeBigint }

// Column is one column of a protected table.
type Column struct {
	// Name is non-empty.
	Name string `yaml:"name"`
	// Type is one of the Type* constants.
	Type ColumnType `yaml:"type"`
	// Bounds are the clamp bounds [lo, hi] for SUM/AVG; required for any
	// numeric column that may be aggregated, absent otherwise. Only numeric
	// columns have bounds; Lo ≤ Hi, both finite.
	Bounds *Bounds `yaml:"bounds,omitempty"`
	// GroupBy allows GROUP BY on this column.
	GroupBy bool `yaml:"group_by,omitempty"`
	// Keys is the public list of group keys (as they print in text form).
	// When present, exactly these keys are released for GROUP BY on this
	// column. Without it, GROUP BY needs DP partition selection. Keys is
	// only set when GroupBy is, and is then non-empty with unique entries.
	Keys []string `yaml:"keys,omitempty"`
	// KeysFrom, instead of Keys, names a column of a public table whose
	// distinct values are the public key list, read from the backend when
	// dpproxy starts (KeySource.Load). In YAML
	// `keys_from: public.diagnoses(code)` or `keys_from: diagnoses(code)`.
	KeysFrom *KeySource `yaml:"keys_from,omitempty"`
	// KeysAuto is set on a public table's column whose Keys were read
	// without group_keys (PublicTable.AutoKeys): a query may release its
	// keys through partition selection instead when they are too many.
	KeysAuto bool `yaml:"-"`
	// NotNull is set when dpproxy starts (session), never from YAML: the
	// database declares the column NOT NULL. The bounding query then
	// counts its values with COUNT(*) where the column is read from the
	// table itself (never from the NULL side of an outer join).
	NotNull bool `yaml:"-"`
}

// KeySource is a public table's column whose distinct values are a
// column's key list.
type KeySource struct {
	Schema, Table, Column string
}

// String writes the source as the policy does: schema.table(column).
func (k *KeySource) String() string {
	t := k.Table
	if k.Schema != "" {
		t = k.Schema + "." + t
	}
	return t + "(" + k.Column + ")"
}

// parseKeySource reads "schema.table(column)" or "table(column)".
func parseKeySource(s string) (*KeySource, bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") {
		return nil, false
	}
	table, column := strings.TrimSpace(s[:open]), strings.TrimSpace(s[open+1:len(s)-1])
	k := &KeySource{Table: table, Column: column}
	if schema, name, ok := strings.Cut(table, "."); ok {
		k.Schema, k.Table = schema, name
	}
	if k.Table == "" || k.Column == "" || strings.ContainsAny(k.Table+k.Column+k.Schema, ".(), ") {
		return nil, false
	}
	return k, true
}

// RowsAuto is max_rows_per_unit: auto — each query chooses Linf from the
// data under DP (rewrite's auto bounds).
const RowsAuto = -1

// AutoRows reports whether the table's rows per unit per group are chosen
// per query (max_rows_per_unit: auto).
func (t *ProtectedTable) AutoRows() bool { return t.MaxRowsPerUnit == RowsAuto }

// Bounds is a closed clamp interval. In YAML it is written as a two-element
// list of numbers, [lo, hi].
type Bounds struct {
	Lo float64
	Hi float64
}

// PublicTable is a table that may be read directly. In YAML it is written
// either as a mapping {schema, name} or as a string "name" or
// "schema.name".
type PublicTable struct {
	// Schema is optional, as for ProtectedTable.
	Schema string `yaml:"schema,omitempty"`
	// Name is the unqualified table name (non-empty, no '.').
	Name string `yaml:"name"`
	// Columns are the table's columns and types, which queries joining it
	// to a protected table may use. The policy may list them (`columns:
	// [{name, type}]`); otherwise dpproxy reads them from the backend when
	// it starts (Describe).
	Columns []PublicColumn `yaml:"columns,omitempty"`
	// GroupKeys names columns whose distinct values, read from the backend
	// when dpproxy starts, are public key lists: a query that joins the
	// table and groups by one of them releases exactly those keys, with no
	// partition selection (`group_keys: [city]`). Without it, the text and
	// integer columns of a table of at most 100,000 rows get theirs, each
	// of at most 1,000 values (AutoKeys).
	GroupKeys []string `yaml:"group_keys,omitempty"`
	// Keys holds the loaded key lists by lower-case column name.
	Keys map[string][]string `yaml:"-"`
	// AutoKeys marks the key lists read without group_keys: when the
	// policy names none, every text and integer column of a small table
	// gets its distinct values as a key list (session/keys.go).
	AutoKeys map[string]bool `yaml:"-"`
}

// PublicColumn is a column of a public table.
type PublicColumn struct {
	Name string     `yaml:"name"`
	Type ColumnType `yaml:"type"`
}

// Column returns the public table's column with the given name
// (case-insensitive).
func (t *PublicTable) Column(name string) (*PublicColumn, bool) {
	for i := range t.Columns {
		if equalFold(t.Columns[i].Name, name) {
			return &t.Columns[i], true
		}
	}
	return nil, false
}

// ColumnTypeOf is the policy type of a database type: integers, floats,
// exact numbers, dates, timestamps, booleans, and text for the rest.
func ColumnTypeOf(t sqltypes.Type) ColumnType {
	switch t {
	case sqltypes.Int2, sqltypes.Int4:
		return TypeInt
	case sqltypes.Int8:
		return TypeBigint
	case sqltypes.Float4, sqltypes.Float8:
		return TypeFloat
	case sqltypes.Numeric:
		return TypeNumeric
	case sqltypes.Date:
		return TypeDate
	case sqltypes.Timestamp, sqltypes.Timestamptz:
		return TypeTimestamp
	case sqltypes.Bool:
		return TypeBool
	}
	return TypeText
}

// Analyst returns the analyst with the given name.
func (p *Policy) Analyst(name string) (*Analyst, bool) {
	for i := range p.Analysts {
		if p.Analysts[i].Name == name {
			return &p.Analysts[i], true
		}
	}
	return nil, false
}

// Column returns the column with the given name (case-insensitive, as SQL
// identifiers are when unquoted).
func (t *ProtectedTable) Column(name string) (*Column, bool) {
	for i := range t.Columns {
		if equalFold(t.Columns[i].Name, name) {
			return &t.Columns[i], true
		}
	}
	return nil, false
}

// IsRowPrivacy reports whether each row is its own privacy unit.
func (t *ProtectedTable) IsRowPrivacy() bool { return t.PrivacyUnit == RowPrivacyUnit }

// LookupTable finds a table by optional schema and name. It returns either a
// protected or a public table, or neither.
func (p *Policy) LookupTable(schema, name string) (*ProtectedTable, *PublicTable) {
	for i := range p.ProtectedTables {
		t := &p.ProtectedTables[i]
		if equalFold(t.Name, name) && schemaMatches(t.Schema, schema) {
			return t, nil
		}
	}
	for i := range p.PublicTables {
		t := &p.PublicTables[i]
		if equalFold(t.Name, name) && schemaMatches(t.Schema, schema) {
			return nil, t
		}
	}
	return nil, nil
}

// schemaMatches reports whether a reference qualified with schema used (""
// when unqualified) names a table declared in schema declared ("" = the
// backend's default schema). A qualified reference must name the declared
// schema exactly, so that "other.visits" never resolves to the policy's
// "visits" while the backend reads a different table.
func schemaMatches(declared, used string) bool {
	if used == "" {
		return true
	}
	if declared == "" {
		return equalFold(used, "public") || equalFold(used, "main")
	}
	return equalFold(declared, used)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// Mechanism names the noise mechanism of measurements.
type Mechanism string

// Mechanisms a policy may choose.
const (
	MechanismLaplace  Mechanism = "laplace"
	MechanismGaussian Mechanism = "gaussian"
	MechanismAuto     Mechanism = "auto"
)
