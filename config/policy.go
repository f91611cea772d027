package config

// Policy is a loaded and validated policy file. Every field has been
// checked by Load; code that receives a *Policy may rely on the invariants
// documented on each field.
type Policy struct {
	// Path is the file the policy was loaded from ("" for built-in policies).
	Path string

	Listen   Listen
	Backend  Backend
	Ledger   Ledger
	Defaults Defaults

	Analysts        []Analyst
	ProtectedTables []ProtectedTable
	PublicTables    []PublicTable
}

// Listen holds the addresses the front ends listen on.
type Listen struct {
	// Postgres is host:port for the PostgreSQL wire front end ("" = off).
	Postgres string `yaml:"postgres"`
	// MySQL is host:port for the MySQL wire front end ("" = off).
	MySQL string `yaml:"mysql"`
}

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
	Kind BackendKind `yaml:"kind"`
	// DSN is the connection string for postgres and mysql backends.
	DSN string `yaml:"dsn"`
	// Path is the database file for the sqlite backend.
	Path string `yaml:"path"`
	// MaxConns bounds the connection pool (default 10).
	MaxConns int `yaml:"max_conns"`
}

// Ledger configures the durable privacy-budget ledger.
type Ledger struct {
	// Path of the embedded ledger file. Relative paths are resolved against
	// the policy file's directory.
	Path string `yaml:"path"`
}

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
	// Epsilon charged per query (> 0, ≤ MaxEpsilonPerQuery).
	Epsilon float64 `yaml:"epsilon"`
	// Delta charged per query when a mechanism needs it (0 ≤ Delta < 1).
	Delta float64 `yaml:"delta"`
	// MaxEpsilonPerQuery caps what a session may set (default = 10 × Epsilon).
	MaxEpsilonPerQuery float64 `yaml:"max_epsilon_per_query"`
	// MaxGroupsPerUnit is L0: the most GROUP BY groups one unit contributes to.
	MaxGroupsPerUnit int `yaml:"max_groups_per_unit"`
	// MaxRowsPerUnit is Linf: the most rows one unit contributes per group.
	MaxRowsPerUnit int `yaml:"max_rows_per_unit"`
	// Neighbouring definition (default add_remove).
	Neighbouring Neighbouring `yaml:"neighbouring"`
}

// Analyst is a person allowed to connect, with their credentials and budget.
type Analyst struct {
	Name     string    `yaml:"name"`
	Password Verifiers `yaml:"password"`
	Budget   Budget    `yaml:"budget"`
}

// Verifiers hold what the authentication methods need to check a password,
// never the password itself. `dpproxy passwd` prints them.
type Verifiers struct {
	// SCRAMSHA256 is PostgreSQL's stored form:
	// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64).
	SCRAMSHA256 string `yaml:"scram_sha_256"`
	// MySQLNativePassword is "*" + upper hex SHA1(SHA1(password)).
	MySQLNativePassword string `yaml:"mysql_native_password"`
	// CachingSHA2Password is hex SHA256(SHA256(password)), what the
	// caching_sha2_password fast path verifies against.
	CachingSHA2Password string `yaml:"caching_sha2_password"`
}

// Budget is an analyst's total privacy budget under basic composition.
type Budget struct {
	Epsilon float64 `yaml:"epsilon"`
	Delta   float64 `yaml:"delta"`
}

// RowPrivacyUnit is the PrivacyUnit value meaning "each row is one unit".
const RowPrivacyUnit = "row"

// ProtectedTable is a table whose rows never leave: only DP aggregates do.
type ProtectedTable struct {
	// Schema is optional; when set, a qualified reference must match it.
	Schema string `yaml:"schema"`
	Name   string `yaml:"name"`
	// PrivacyUnit is the column identifying the protected person, or "row".
	PrivacyUnit string `yaml:"privacy_unit"`
	// MaxGroupsPerUnit (L0) and MaxRowsPerUnit (Linf) override the defaults;
	// Load fills them from Defaults when absent. For "row" privacy both are 1.
	MaxGroupsPerUnit int `yaml:"max_groups_per_unit"`
	MaxRowsPerUnit   int `yaml:"max_rows_per_unit"`
	// Columns lists every column analysts may reference; others are unknown
	// to them.
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

// Integer reports whether the type holds whole numbers only.
func (t ColumnType) Integer() bool { return t == TypeInt || t == TypeBigint }

// Column is one column of a protected table.
type Column struct {
	Name string     `yaml:"name"`
	Type ColumnType `yaml:"type"`
	// Bounds are the clamp bounds [lo, hi] for SUM/AVG; required for any
	// numeric column that may be aggregated, absent otherwise. Lo ≤ Hi,
	// both finite.
	Bounds *Bounds `yaml:"bounds"`
	// GroupBy allows GROUP BY on this column.
	GroupBy bool `yaml:"group_by"`
	// Keys is the public list of group keys (as they print in text form).
	// When present, exactly these keys are released for GROUP BY on this
	// column. Without it, GROUP BY needs DP partition selection.
	Keys []string `yaml:"keys"`
}

// Bounds is a closed clamp interval.
type Bounds struct {
	Lo float64
	Hi float64
}

// PublicTable is a table that may be read directly.
type PublicTable struct {
	Schema string `yaml:"schema"`
	Name   string `yaml:"name"`
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
