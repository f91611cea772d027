package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session/catalog"
)

// Server is what every session of one dpproxy shares: the engine and the
// virtual catalog built from the policy.
type Server struct {
	engine *engine.Engine
	// catalog is the virtual catalog of the policy in force (Reload
	// replaces it).
	catalog atomic.Pointer[catalog.Catalog]
	// observe, when set, is told of every statement (Observe); active
	// counts the statements running under it.
	observe func(Statement)
	active  atomic.Int64
}

// Active is the number of statements running now (counted while an
// observer is set).
func (s *Server) Active() int { return int(s.active.Load()) }

// Observe has f told of every statement every session of the server runs,
// when it ends, in the session's goroutine (f must be quick and safe for
// concurrent use). Call it before sessions open.
func (s *Server) Observe(f func(Statement)) { s.observe = f }

// NewServer checks the keys of the policy's privacy unit paths, marks the
// tables whose unit is their primary key and the columns declared NOT
// NULL (markDeclarations), reads the
// policy's key lists that come from public tables and
// the columns of public tables the policy does not list (for joins),
// builds the virtual catalog of e's policy — each table's columns as the
// backend declares them, read once — and returns the server sessions are
// opened on.
func NewServer(ctx context.Context, e *engine.Engine) (*Server, error) {
	cat, err := prepareCatalog(ctx, e.Policy(), e)
	if err != nil {
		return nil, err
	}
	srv := &Server{engine: e}
	srv.catalog.Store(cat)
	return srv, nil
}

// prepareCatalog completes pol from the backend (CompletePolicy) and
// builds its virtual catalog.
func prepareCatalog(ctx context.Context, pol *config.Policy, e *engine.Engine) (*catalog.Catalog, error) {
	if err := CompletePolicy(ctx, pol, e.Backend(), e.Dialect()); err != nil {
		return nil, err
	}
	schema, err := CatalogSchema(ctx, pol, e.Backend())
	if err != nil {
		return nil, err
	}
	return catalog.New(ctx, schema)
}

// CompletePolicy completes pol from the database, as dpproxy does at
// start and on reload, before any plan is made: the key lists read from
// public tables, the unit paths' keys checked, the tables whose unit is
// their primary key and the columns declared NOT NULL marked, the columns
// of public tables read.
func CompletePolicy(ctx context.Context, pol *config.Policy, b backend.Backend, d rewrite.Dialect) error {
	if err := loadKeyLists(ctx, pol, b, d); err != nil {
		return err
	}
	if err := checkUnitKeys(ctx, pol, b); err != nil {
		return err
	}
	if err := markDeclarations(ctx, pol, b); err != nil {
		return err
	}
	if err := describePublicTables(ctx, pol, b); err != nil {
		return err
	}
	return loadPublicKeyLists(ctx, pol, b, d)
}

// Reload puts pol in force for the statements that start from now on,
// without closing any session: pol is completed and checked against the
// backend and its catalog built as NewServer does; then apply (the
// caller's part, such as the accountant's budgets) runs; then the engine
// and the catalog switch to pol. An error from any step before the switch
// leaves everything as it was. The old catalog is closed once statements
// that may still read it have ended (graceAfterReload).
func (srv *Server) Reload(ctx context.Context, pol *config.Policy, apply func() error) error {
	cat, err := prepareCatalog(ctx, pol, srv.engine)
	if err != nil {
		return err
	}
	if apply != nil {
		if err := apply(); err != nil {
			cat.Close()
			return err
		}
	}
	srv.engine.SetPolicy(pol)
	old := srv.catalog.Swap(cat)
	time.AfterFunc(graceAfterReload(pol), func() { old.Close() })
	return nil
}

// graceAfterReload is how long a replaced catalog stays open: longer than
// any statement may run.
func graceAfterReload(pol *config.Policy) time.Duration {
	return pol.Listen.StatementTimeout + 10*time.Second
}

// Engine returns the server's engine.
func (srv *Server) Engine() *engine.Engine { return srv.engine }

// Close releases the catalog.
func (srv *Server) Close() error { return srv.catalog.Load().Close() }

// CatalogSchema is the policy's view of the database: protected tables with
// their exposed columns only, public tables with all their columns and
// their primary key, and dpproxy's views. Column types come from the
// backend (the policy's declared type when the backend does not know the
// table); a public table the backend does not have is an error, since it
// could not be queried either.
func CatalogSchema(ctx context.Context, pol *config.Policy, b backend.Backend) (catalog.Schema, error) {
	s := catalog.Schema{Database: catalogDatabase(pol), MySQLDatabase: MySQLDatabase(pol)}
	for _, pt := range pol.ProtectedTables {
		info, err := b.DescribeTable(ctx, pt.Schema, pt.Name)
		if err != nil && !errors.Is(err, backend.ErrNoSuchTable) {
			return s, fmt.Errorf("describing protected table %s: %w", pt.Name, err)
		}
		t := catalog.Table{Schema: pt.Schema, Name: pt.Name, Kind: catalog.Protected}
		for _, pc := range pt.Columns {
			col := catalog.Column{Name: pc.Name, Type: pc.Type.SQLType()}
			if info != nil {
				for _, bc := range info.Columns {
					if strings.EqualFold(bc.Name, pc.Name) {
						col = catalogColumn(bc)
						col.Name = pc.Name
					}
				}
			}
			t.Columns = append(t.Columns, col)
		}
		s.Tables = append(s.Tables, t)
	}
	for _, pub := range pol.PublicTables {
		info, err := b.DescribeTable(ctx, pub.Schema, pub.Name)
		if err != nil {
			return s, fmt.Errorf("describing public table %s: %w", pub.Name, err)
		}
		t := catalog.Table{Schema: pub.Schema, Name: pub.Name, Kind: catalog.Public, PrimaryKey: info.PrimaryKey}
		for _, bc := range info.Columns {
			t.Columns = append(t.Columns, catalogColumn(bc))
		}
		s.Tables = append(s.Tables, t)
	}
	for _, v := range virtualViews {
		t := catalog.Table{Schema: VirtualSchema, Name: v.name, Kind: catalog.View}
		for _, c := range v.columns {
			t.Columns = append(t.Columns, catalog.Column{Name: c.Name, Type: c.Type})
		}
		s.Tables = append(s.Tables, t)
	}
	return s, nil
}

func catalogColumn(c backend.ColumnInfo) catalog.Column {
	return catalog.Column{Name: c.Name, Type: c.Type, Length: c.Length, Precision: c.Precision, Scale: c.Scale, NotNull: c.NotNull}
}

// catalogDatabase is the database the catalog shows: the backend's
// database name as MySQLDatabase reads it from the policy (the MySQL DSN's
// database, the SQLite file's base name, the PostgreSQL DSN's dbname),
// else "dpproxy".
func catalogDatabase(pol *config.Policy) string {
	if name := MySQLDatabase(pol); name != "" {
		return name
	}
	return "dpproxy"
}

// catalogSession is what the catalog may ask about a session.
func (s *Session) catalogSession() *catalog.Session {
	version := ServerVersion
	if s.frontEnd == rewrite.MySQLFrontEnd {
		version = MySQLServerVersion
	}
	database := s.database
	if database == "" {
		database = catalogDatabase(s.engine.Policy())
	}
	return &catalog.Session{
		User: s.analyst, Database: database, ServerVersion: version, BackendPID: s.id,
		Setting: s.catalogSetting,
	}
}

// catalogSetting is a run-time parameter for current_setting() and
// @@variables.
func (s *Session) catalogSetting(name string) (string, bool) {
	if s.frontEnd == rewrite.MySQLFrontEnd {
		return s.mysqlVariable(name)
	}
	return s.setting(name)
}

// describePublicTables fills in the columns of the public tables whose
// columns the policy does not list, as the backend declares them: what a
// query joining one to a protected table may use (rewrite).
func describePublicTables(ctx context.Context, pol *config.Policy, b backend.Backend) error {
	for i := range pol.PublicTables {
		pub := &pol.PublicTables[i]
		if len(pub.Columns) > 0 {
			continue
		}
		info, err := b.DescribeTable(ctx, pub.Schema, pub.Name)
		if err != nil {
			return fmt.Errorf("describing public table %s: %w", pub.Name, err)
		}
		for _, c := range info.Columns {
			pub.Columns = append(pub.Columns, config.PublicColumn{Name: c.Name, Type: config.ColumnTypeOf(c.Type)})
		}
	}
	return nil
}
