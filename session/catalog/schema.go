package catalog

import (
	"strings"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// Schema is what the catalog shows: the policy's view of the database.
// Nothing else is ever named by it.
type Schema struct {
	// Database is the database PostgreSQL clients see (datname).
	Database string
	// MySQLDatabase is the schema MySQL clients see the policy's tables
	// in (unless a table names its own schema); "" when it is whatever
	// database the session uses (the policy accepts any name).
	MySQLDatabase string
	// Tables are the policy's tables and dpproxy's views, in policy order.
	Tables []Table
}

// TableKind says how a table is shown.
type TableKind int

const (
	// Protected tables are shown with only their exposed columns, no
	// keys and no indexes.
	Protected TableKind = iota
	// Public tables are shown with their columns and primary key.
	Public
	// View is one of dpproxy's own views (dpproxy.budget, dpproxy.queries).
	View
)

// Table is one relation of the catalog.
type Table struct {
	// Schema is the table's schema as the policy names it; empty means
	// the front end's default ("public" for PostgreSQL clients, Database
	// for MySQL clients).
	Schema string
	Name   string
	Kind   TableKind
	// Columns in order.
	Columns []Column
	// PrimaryKey names the primary key's columns (public tables only).
	PrimaryKey []string
}

// Column is one column of a table.
type Column struct {
	Name string
	Type sqltypes.Type
	// Length is the declared length of a character column (0: none);
	// Precision and Scale those of a numeric column (0: unconstrained).
	Length, Precision, Scale int
	// NotNull marks a column declared NOT NULL.
	NotNull bool
}

// Session is what a catalog query may ask about the connection asking it.
type Session struct {
	// User is the analyst; the catalog shows one role, this one.
	User string
	// Database is the database the client connected to.
	Database string
	// ServerVersion is what version() returns.
	ServerVersion string
	// BackendPID is what pg_backend_pid() and CONNECTION_ID() return.
	BackendPID uint32
	// Setting returns a run-time parameter of the session (lower-case
	// name), for current_setting() and @@variables; nil knows none.
	Setting func(name string) (string, bool)
}

func (s *Session) setting(name string) (string, bool) {
	if s.Setting == nil {
		return "", false
	}
	return s.Setting(name)
}

// searchPath is the session's search_path as a list of schema names.
func (s *Session) searchPath() []string {
	path, ok := s.setting("search_path")
	if !ok {
		path = `"$user", public`
	}
	var out []string
	for _, p := range strings.Split(path, ",") {
		p = strings.Trim(strings.TrimSpace(p), `"`)
		if p == "$user" {
			continue
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (s *Session) currentSchema() string {
	if p := s.searchPath(); len(p) > 0 {
		return p[0]
	}
	return "public"
}

// The fixed object identifiers of the PostgreSQL catalog: the analyst is
// role 10 (the bootstrap superuser's OID, which every client expects to
// exist), the namespaces have PostgreSQL's numbers, and the policy's
// objects are numbered from 16384 (the first user OID) in policy order.
const (
	analystOID           = 10
	pgCatalogOID         = 11
	publicOID            = 2200
	informationSchemaOID = 13000
	databaseOID          = 16383
	firstUserOID         = 16384
)
