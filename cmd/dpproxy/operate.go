package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/dpproxy/dpproxy/admin"
	"github.com/dpproxy/dpproxy/auditlog"
	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/session"
)

// operations is what serve runs for the people who operate dpproxy: the
// audit log and the admin listener, each off unless the policy sets it.
type operations struct {
	audit   *auditlog.Log
	admin   *admin.Server
	adminLn net.Listener
}

// startOperations opens the audit log and the admin listener the policy
// asks for and has every statement of rt's sessions reach them.
func startOperations(pol *config.Policy, rt *runtime, limits *netserver.Limits, throttle *auth.Throttle, reload func(context.Context) admin.ReloadResult) (*operations, error) {
	ops := &operations{}
	var observers []func(session.Statement)
	if pol.Audit.Path != "" {
		var err error
		if ops.audit, err = auditlog.Open(pol.Audit); err != nil {
			return nil, err
		}
		observers = append(observers, ops.audit.Record)
		slog.Info("audit log", "path", pol.Audit.Path, "fsync", pol.Audit.Fsync)
	}
	if pol.Admin.Listen != "" {
		verifier, _ := pol.Admin.Password.SCRAM() // checked by config
		src := admin.Sources{
			Policy:        rt.engine.Policy,
			Accountant:    rt.engine.Accountant(),
			Backend:       rt.backend,
			Connections:   limits.Counts,
			Active:        rt.server.Active,
			LoginFailures: throttle.Failures,
			TemplateHits:  rt.engine.TemplateHits,
		}
		if st, ok := rt.ledger.(interface{ Stats() budget.StoreStats }); ok {
			src.Ledger = st.Stats
		}
		if ops.audit != nil {
			src.AuditErrors = ops.audit.Errors
		}
		metrics := admin.NewMetrics(src)
		recent := admin.NewRecent(50)
		observers = append(observers, metrics.Observe, recent.Observe)
		ln, err := net.Listen("tcp", pol.Admin.Listen)
		if err != nil {
			ops.close()
			return nil, fmt.Errorf("admin.listen: %w", err)
		}
		ops.adminLn = ln
		ops.admin = admin.New(admin.Options{
			User: pol.Admin.User, Verifier: verifier, Throttle: throttle, Metrics: metrics,
			Ready:  func(ctx context.Context) error { return ready(ctx, rt) },
			Reload: reload,
			Policy: rt.engine.Policy, Accountant: rt.engine.Accountant(), Recent: recent,
		})
		go func() {
			if err := ops.admin.Serve(ln); err != nil {
				slog.Error("admin listener stopped", "err", err)
			}
		}()
		slog.Info("admin listening", "addr", ln.Addr().String())
	}
	switch len(observers) {
	case 0:
	case 1:
		rt.server.Observe(observers[0])
	default:
		rt.server.Observe(func(st session.Statement) {
			for _, o := range observers {
				o(st)
			}
		})
	}
	return ops, nil
}

// ready reports whether the backend and the ledger answer.
func ready(ctx context.Context, rt *runtime) error {
	var errs []error
	if _, err := rt.backend.Query(ctx, "SELECT 1"); err != nil {
		errs = append(errs, fmt.Errorf("backend: %w", err))
	}
	if _, err := rt.ledger.Charges(ctx, "", 1); err != nil {
		errs = append(errs, fmt.Errorf("ledger: %w", err))
	}
	return errors.Join(errs...)
}

// close stops the admin listener and closes the audit log, after the
// front ends have stopped.
func (o *operations) close() {
	if o.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o.admin.Shutdown(ctx)
	} else if o.adminLn != nil {
		o.adminLn.Close()
	}
	if o.audit != nil {
		if err := o.audit.Close(); err != nil {
			slog.Error("closing the audit log", "err", err)
		}
	}
}
