package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"github.com/dpproxy/dpproxy/directio"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/procs"
	"github.com/dpproxy/dpproxy/proxy"
	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/proxy/pgwire"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
)

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML)")
	pgAddr := fs.String("pg-addr", "", "PostgreSQL listen address (overrides listen.postgres)")
	mysqlAddr := fs.String("mysql-addr", "", "MySQL listen address (overrides listen.mysql)")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	if *mysqlAddr != "" {
		pol.Listen.MySQL = *mysqlAddr
	}
	// A reload reads the file again, with the same overrides.
	load := func() (*config.Policy, error) {
		p, err := config.Load(*configPath)
		if err != nil {
			return nil, err
		}
		if *pgAddr != "" {
			p.Listen.Postgres = *pgAddr
		}
		if *mysqlAddr != "" {
			p.Listen.MySQL = *mysqlAddr
		}
		return p, nil
	}
	setProcessors(ctx, pol.Listen.Processors)
	return serve(ctx, pol, load, nil)
}

// setProcessors applies listen.processors: a fixed count (over the
// GOMAXPROCS environment variable), or (auto, the default) the count
// sized to the load until ctx ends, unless the variable fixes it.
func setProcessors(ctx context.Context, n int) {
	if n > 0 {
		goruntime.GOMAXPROCS(n)
		return
	}
	procs.Start(ctx)
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
	server  *session.Server
	backend backend.Backend
	ledger  budget.Store
}

func (r *runtime) Close() {
	if r.server != nil {
		r.server.Close()
	}
	if r.backend != nil {
		r.backend.Close()
	}
	if r.ledger != nil {
		r.ledger.Close()
		// Group commit at work: bench/ledger.sh reads this line.
		if st, ok := r.ledger.(interface{ Stats() budget.StoreStats }); ok {
			s := st.Stats()
			slog.Info("ledger closed", "charges", s.Charges, "transactions", s.Transactions, "transaction_time", s.TransactionTime)
		}
	}
}

// open builds the engine for a policy: backend pool, ledger, accountant.
func open(ctx context.Context, pol *config.Policy) (*runtime, error) {
	rt := &runtime{}
	directio.SetEnabled(pol.Listen.DirectIOEnabled())
	dialect, err := dialectFor(pol.Backend.Kind)
	if err != nil {
		return nil, err
	}
	rt.backend, err = backend.Open(ctx, pol.Backend)
	if err != nil {
		return nil, fmt.Errorf("opening %s backend: %w", pol.Backend.Kind, err)
	}
	rt.ledger, err = openLedger(ctx, pol.Ledger, false)
	if err != nil {
		rt.Close()
		return nil, err
	}
	acct, err := newAccountant(ctx, rt.ledger, pol)
	if err != nil {
		rt.Close()
		return nil, err
	}
	opts := engine.Options{Policy: pol, Backend: rt.backend, Dialect: dialect, Accountant: acct}
	if shared, ok := rt.ledger.(*budget.PostgresStore); ok {
		opts.SharedReleases = shared // the result cache, across instances
	}
	rt.engine, err = engine.New(opts)
	if err != nil {
		rt.Close()
		return nil, err
	}
	// The virtual catalog clients see, built once from the policy and the
	// backend's declarations of its tables.
	rt.server, err = session.NewServer(ctx, rt.engine)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("building the catalog: %w", err)
	}
	return rt, nil
}

// frontEnd is one protocol's server as serve runs it.
type frontEnd struct {
	protocol string
	ln       net.Listener
	serve    func(context.Context, net.Listener) error
	shutdown func(context.Context) error
}

// serve runs the proxy until ctx is cancelled. load, when set, reads the
// policy file again for a reload (SIGHUP, or the admin listener's POST
// /reload). ready, when set, is called once clients can connect, with the
// listening address of each protocol ("postgres", "mysql").
func serve(ctx context.Context, pol *config.Policy, load func() (*config.Policy, error), ready func(addrs map[string]net.Addr)) error {
	rt, err := open(ctx, pol)
	if err != nil {
		return err
	}
	defer rt.Close()
	var tlsConfig *tls.Config
	if pol.Listen.TLSCert != "" {
		if tlsConfig, err = pgwire.LoadTLS(pol.Listen.TLSCert, pol.Listen.TLSKey); err != nil {
			return fmt.Errorf("listen.tls_cert / tls_key: %w", err)
		}
	}
	// One set of connection limits and one login throttle for both front
	// ends; the server secret keeps unknown users' SCRAM salts stable
	// across restarts.
	limits := &netserver.Limits{MaxConns: pol.Listen.MaxConnections, MaxHandshakes: pol.Listen.MaxHandshakes}
	throttle := &auth.Throttle{Base: pol.Listen.LoginBackoff, Max: pol.Listen.LoginBackoffMax}
	secret, err := serverSecret(ctx, pol, rt.ledger)
	if err != nil {
		return err
	}
	reloads := &reloader{load: load, rt: rt}
	ops, err := startOperations(pol, rt, limits, throttle, reloads.reload)
	if err != nil {
		return err
	}
	defer ops.close()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				if res := reloads.reload(ctx); !res.Applied && load == nil {
					slog.Warn("SIGHUP ignored", "reason", strings.Join(res.Errors, "; "))
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	var fronts []frontEnd
	defer func() {
		for _, f := range fronts {
			f.ln.Close()
		}
	}()
	if pol.Listen.Postgres != "" {
		ln, err := net.Listen("tcp", pol.Listen.Postgres)
		if err != nil {
			return fmt.Errorf("listening for PostgreSQL clients: %w", err)
		}
		srv := pgwire.NewServer(proxy.PostgresSessions{Server: rt.server}, pgwire.Options{
			Logger:           slog.Default(),
			ServerVersion:    session.ServerVersion,
			StatementTimeout: pol.Listen.StatementTimeout,
			IdleTimeout:      pol.Listen.IdleTimeout,
			WriteTimeout:     pol.Listen.WriteTimeout,
			MaxMessageSize:   pol.Listen.MaxMessageSize,
			TLS:              tlsConfig,
			RequireTLS:       pol.Listen.TLS == config.TLSRequired,
			Limits:           limits,
			Throttle:         throttle,
			MockSecret:       secret,
		})
		fronts = append(fronts, frontEnd{"postgres", ln, srv.Serve, srv.Shutdown})
	}
	if pol.Listen.MySQL != "" {
		ln, err := net.Listen("tcp", pol.Listen.MySQL)
		if err != nil {
			return fmt.Errorf("listening for MySQL clients: %w", err)
		}
		srv := mysqlwire.NewServer(proxy.MySQLSessions{Server: rt.server}, mysqlwire.Options{
			Logger:           slog.Default(),
			ServerVersion:    session.MySQLServerVersion,
			StatementTimeout: pol.Listen.StatementTimeout,
			IdleTimeout:      pol.Listen.IdleTimeout,
			WriteTimeout:     pol.Listen.WriteTimeout,
			MaxPacketSize:    pol.Listen.MaxMessageSize,
			TLS:              tlsConfig,
			RequireTLS:       pol.Listen.TLS == config.TLSRequired,
			Limits:           limits,
			Throttle:         throttle,
		})
		fronts = append(fronts, frontEnd{"mysql", ln, srv.Serve, srv.Shutdown})
	}
	if len(fronts) == 0 {
		return errors.New("no front end to listen on: set listen.postgres or listen.mysql")
	}
	if ready != nil {
		addrs := make(map[string]net.Addr, len(fronts))
		for _, f := range fronts {
			addrs[f.protocol] = f.ln.Addr()
		}
		ready(addrs)
	}
	errc := make(chan error, len(fronts))
	for _, f := range fronts {
		slog.Info("dpproxy listening", "protocol", f.protocol, "addr", f.ln.Addr().String(), "backend", pol.Backend.Kind, "policy", pol.Path)
		go func() { errc <- f.serve(ctx, f.ln) }()
	}
	var serveErr error
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) {
			serveErr = err
		}
	case <-ctx.Done():
	}
	slog.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range fronts {
		if err := f.shutdown(shutdownCtx); err != nil {
			slog.Warn("shutdown", "protocol", f.protocol, "err", err)
		}
	}
	return serveErr
}

// openLedger opens the policy's ledger: the embedded SQLite file, or the
// PostgreSQL database several instances share; readOnly for status
// commands while proxies run.
func openLedger(ctx context.Context, l config.Ledger, readOnly bool) (budget.Store, error) {
	if l.Shared() {
		s, err := budget.OpenPostgres(ctx, l.Postgres, budget.PostgresOptions{Schema: l.Schema, Lease: l.HoldLease, ReadOnly: readOnly})
		if err != nil {
			return nil, fmt.Errorf("opening the shared ledger (schema %s): %w", l.Schema, err)
		}
		return s, nil
	}
	open := budget.OpenSQLite
	if readOnly {
		open = budget.OpenSQLiteReadOnly
	}
	s, err := open(ctx, l.Path)
	if err != nil {
		return nil, fmt.Errorf("opening ledger %s: %w", l.Path, err)
	}
	return s, nil
}

// serverSecret is the secret unknown users' SCRAM salts derive from: in
// the shared ledger, so that every instance answers alike, or in the file
// beside the embedded one.
func serverSecret(ctx context.Context, pol *config.Policy, ledger budget.Store) ([]byte, error) {
	if shared, ok := ledger.(*budget.PostgresStore); ok {
		return shared.ServerSecret(ctx)
	}
	return auth.LoadOrCreateSecret(pol.Ledger.Path + ".secret")
}

// newAccountant is the accountant of a policy's analysts, teams and
// tables with budgets of their own over a ledger.
func newAccountant(ctx context.Context, ledger budget.Store, pol *config.Policy) (*budget.Accountant, error) {
	acct, err := budget.NewAccountant(ctx, ledger, analystLimits(pol))
	if err != nil {
		return nil, err
	}
	if err := configureAccountant(acct, pol); err != nil {
		return nil, err
	}
	return acct, nil
}

func analystLimits(pol *config.Policy) map[string]budget.Cost {
	limits := make(map[string]budget.Cost, len(pol.Analysts))
	for _, a := range pol.Analysts {
		limits[a.Name] = budget.Cost{Epsilon: a.Budget.Epsilon, Delta: a.Budget.Delta}
	}
	return limits
}

// configureAccountant gives acct the budgets of pol, replacing any it had
// (at start, or on a policy reload): every analyst's limit, window and
// composition, the teams, and the tables' own budgets and windows. The
// ledger's charges are kept.
func configureAccountant(acct *budget.Accountant, pol *config.Policy) error {
	if err := acct.SetLimits(analystLimits(pol)); err != nil {
		return err
	}
	for _, a := range pol.Analysts {
		w, lifetime := windowOf(a.Budget)
		if err := acct.SetWindow(a.Name, w, lifetime); err != nil {
			return err
		}
		var comp budget.Composition
		if a.Budget.Accountant == config.AccountantAdvanced || a.Budget.Accountant == config.AccountantZCDP {
			comp = budget.Composition{DeltaPrime: a.Budget.DeltaPrime, ZCDP: a.Budget.Accountant == config.AccountantZCDP}
		}
		if err := acct.SetComposition(a.Name, comp); err != nil {
			return err
		}
	}
	teams := make(map[string]budget.Team, len(pol.Teams))
	for _, t := range pol.Teams {
		w, lifetime := windowOf(t.Budget)
		teams[t.Name] = budget.Team{Limit: budget.Cost{Epsilon: t.Budget.Epsilon, Delta: t.Budget.Delta}, Members: t.Analysts, Window: w, Lifetime: lifetime}
	}
	if err := acct.SetTeams(teams); err != nil {
		return err
	}
	tables := map[string]budget.Cost{}
	for _, t := range pol.ProtectedTables {
		if t.Budget != nil {
			tables[t.Name] = budget.Cost{Epsilon: t.Budget.Epsilon, Delta: t.Budget.Delta}
		}
	}
	if err := acct.SetTableLimits(tables); err != nil {
		return err
	}
	// A table without a budget of its own has no limit, whatever window
	// an earlier policy gave it.
	for _, t := range pol.ProtectedTables {
		if t.Budget == nil {
			continue
		}
		w, lifetime := windowOf(*t.Budget)
		if err := acct.SetTableWindow(t.Name, w, lifetime); err != nil {
			return err
		}
	}
	return nil
}

// windowOf is how a policy budget renews (none: the zero Window) and its
// lifetime cap.
func windowOf(b config.Budget) (budget.Window, *budget.Cost) {
	if b.Window == "" {
		return budget.Window{}, nil
	}
	w := budget.Window{Period: b.Window}
	if d, rolling := config.RollingWindow(b.Window); rolling {
		w = budget.Window{Rolling: d}
	}
	var lifetime *budget.Cost
	if b.Lifetime != nil {
		lifetime = &budget.Cost{Epsilon: b.Lifetime.Epsilon, Delta: b.Lifetime.Delta}
	}
	return w, lifetime
}
