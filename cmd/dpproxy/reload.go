package main

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/dpproxy/dpproxy/admin"
	"github.com/dpproxy/dpproxy/config"
)

// Live reload (SIGHUP, or POST /reload on the admin listener): the policy
// file is read again and, when it is valid and the backend agrees with
// it, put in force for the statements that start from then on, without
// dropping a connection. Analysts, budgets, teams, windows, tables,
// columns, bounds and defaults change at once; the sections that hold
// running things — listen, backend, ledger, cache, admin, audit — keep
// their running values until a restart, and the reload says which of them
// changed.

// reloader re-reads the policy file and puts it in force.
type reloader struct {
	// load reads the policy file again (with the command line's
	// overrides); nil when there is no file (the demo).
	load func() (*config.Policy, error)
	rt   *runtime

	mu sync.Mutex // one reload at a time
}

// restartSections are the policy's sections a running dpproxy cannot
// change.
var restartSections = []struct {
	name string
	get  func(*config.Policy) any
	keep func(dst, src *config.Policy)
}{
	{"listen", func(p *config.Policy) any { return p.Listen }, func(d, s *config.Policy) { d.Listen = s.Listen }},
	{"backend", func(p *config.Policy) any { return p.Backend }, func(d, s *config.Policy) { d.Backend = s.Backend }},
	{"ledger", func(p *config.Policy) any { return p.Ledger }, func(d, s *config.Policy) { d.Ledger = s.Ledger }},
	{"cache", func(p *config.Policy) any { return p.Cache }, func(d, s *config.Policy) { d.Cache = s.Cache }},
	{"admin", func(p *config.Policy) any { return p.Admin }, func(d, s *config.Policy) { d.Admin = s.Admin }},
	{"audit", func(p *config.Policy) any { return p.Audit }, func(d, s *config.Policy) { d.Audit = s.Audit }},
}

// reload reads the policy again and puts it in force, or reports why not;
// the policy in force is unchanged unless Applied.
func (r *reloader) reload(ctx context.Context) admin.ReloadResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.load == nil {
		return admin.ReloadResult{Errors: []string{"this dpproxy runs the built-in demo policy: there is no policy file to read again"}}
	}
	pol, err := r.load()
	if err != nil {
		var res admin.ReloadResult
		var invalid *config.ValidationError
		if errors.As(err, &invalid) {
			for _, e := range invalid.Errors {
				res.Errors = append(res.Errors, e.Error())
			}
		} else {
			res.Errors = []string{err.Error()}
		}
		slog.Error("policy reload rejected: the policy in force is unchanged", "errors", strings.Join(res.Errors, "; "))
		return res
	}
	old := r.rt.engine.Policy()
	var res admin.ReloadResult
	for _, sec := range restartSections {
		if !reflect.DeepEqual(sec.get(old), sec.get(pol)) {
			res.RestartNeeded = append(res.RestartNeeded, sec.name)
		}
		sec.keep(pol, old)
	}
	acct := r.rt.engine.Accountant()
	if err := r.rt.server.Reload(ctx, pol, func() error { return configureAccountant(acct, pol) }); err != nil {
		res.Errors = []string{err.Error()}
		slog.Error("policy reload rejected: the policy in force is unchanged", "err", err)
		return res
	}
	res.Applied = true
	slog.Info("policy reloaded", "policy", pol.Path, "analysts", len(pol.Analysts), "protected_tables", len(pol.ProtectedTables),
		"restart_needed", strings.Join(res.RestartNeeded, ","))
	return res
}
