package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/proxy"
	"github.com/dpproxy/dpproxy/proxy/backend"
	"github.com/dpproxy/dpproxy/proxy/pgwire"
	"github.com/dpproxy/dpproxy/rewrite"
)

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML)")
	pgAddr := fs.String("pg-addr", "", "PostgreSQL listen address (overrides listen.postgres)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "dpproxy serve: --config FILE is required")
		return errUsage
	}
	pol, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	if *pgAddr != "" {
		pol.Listen.Postgres = *pgAddr
	}
	return serve(ctx, pol, nil)
}

// dialectFor returns the SQL dialect of a backend kind.
func dialectFor(kind config.BackendKind) (rewrite.Dialect, error) {
	switch kind {
	case config.BackendPostgres:
		return rewrite.Postgres, nil
	case config.BackendSQLite:
		return rewrite.SQLite, nil
	case config.BackendMySQL:
		return rewrite.MySQL, nil
	}
	return nil, fmt.Errorf("unknown backend kind %q", kind)
}

// runtime is everything a running proxy holds open.
type runtime struct {
	engine  *engine.Engine
	backend backend.Backend
	catalog *backend.Postgres
	ledger  *budget.SQLiteStore
}

func (r *runtime) Close() {
	if r.backend != nil {
		r.backend.Close()
	}
	if r.catalog != nil {
		r.catalog.Close()
	}
	if r.ledger != nil {
		r.ledger.Close()
	}
}

// open builds the engine for a policy: backend pool, ledger, accountant.
func open(ctx context.Context, pol *config.Policy) (*runtime, error) {
	rt := &runtime{}
	dialect, err := dialectFor(pol.Backend.Kind)
	if err != nil {
		return nil, err
	}
	target := pol.Backend.DSN
	if pol.Backend.Kind == config.BackendSQLite {
		target = pol.Backend.Path
	}
	rt.backend, err = backend.Open(ctx, pol.Backend.Kind, target, pol.Backend.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("opening %s backend: %w", pol.Backend.Kind, err)
	}
	if pol.Backend.CatalogDSN != "" {
		if rt.catalog, err = openCatalog(ctx, pol); err != nil {
			rt.Close()
			return nil, err
		}
	}
	rt.ledger, err = budget.OpenSQLite(ctx, pol.Ledger.Path)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("opening ledger %s: %w", pol.Ledger.Path, err)
	}
	limits := make(map[string]budget.Cost, len(pol.Analysts))
	for _, a := range pol.Analysts {
		limits[a.Name] = budget.Cost{Epsilon: a.Budget.Epsilon, Delta: a.Budget.Delta}
	}
	acct, err := budget.NewAccountant(ctx, rt.ledger, limits)
	if err != nil {
		rt.Close()
		return nil, err
	}
	opts := engine.Options{Policy: pol, Backend: rt.backend, Dialect: dialect, Accountant: acct}
	if rt.catalog != nil {
		opts.Catalog = rt.catalog
	}
	rt.engine, err = engine.New(opts)
	if err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// openCatalog connects as the catalog role and refuses a role that could
// read a protected table.
func openCatalog(ctx context.Context, pol *config.Policy) (*backend.Postgres, error) {
	cat, err := backend.OpenPostgres(ctx, pol.Backend.CatalogDSN, pol.Backend.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("opening the catalog role's connection (backend.catalog_dsn): %w", err)
	}
	var tables []backend.ProtectedTable
	for _, t := range pol.ProtectedTables {
		tables = append(tables, backend.ProtectedTable{Schema: t.Schema, Name: t.Name})
	}
	if err := backend.VerifyCatalogRole(ctx, cat, tables); err != nil {
		cat.Close()
		return nil, fmt.Errorf("backend.catalog_dsn: %w", err)
	}
	return cat, nil
}

// serve runs the proxy until ctx is cancelled. ready, when set, is called
// with the listening address once clients can connect.
func serve(ctx context.Context, pol *config.Policy, ready func(addr net.Addr)) error {
	rt, err := open(ctx, pol)
	if err != nil {
		return err
	}
	defer rt.Close()
	ln, err := net.Listen("tcp", pol.Listen.Postgres)
	if err != nil {
		return fmt.Errorf("listening for PostgreSQL clients: %w", err)
	}
	opts := pgwire.Options{
		Logger:           slog.Default(),
		ServerVersion:    engine.ServerVersion,
		StatementTimeout: pol.Listen.StatementTimeout,
		IdleTimeout:      pol.Listen.IdleTimeout,
	}
	if pol.Listen.TLSCert != "" {
		if opts.TLS, err = pgwire.LoadTLS(pol.Listen.TLSCert, pol.Listen.TLSKey); err != nil {
			ln.Close()
			return fmt.Errorf("listen.tls_cert / tls_key: %w", err)
		}
	}
	srv := pgwire.NewServer(proxy.PostgresSessions{Engine: rt.engine}, opts)
	if ready != nil {
		ready(ln.Addr())
	}
	slog.Info("dpproxy listening", "protocol", "postgres", "addr", ln.Addr().String(), "backend", pol.Backend.Kind, "policy", pol.Path)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	case <-ctx.Done():
	}
	slog.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		slog.Warn("shutdown", "err", err)
	}
	<-errc
	return nil
}
