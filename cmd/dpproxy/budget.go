package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
)

// runBudget prints every analyst's budget as the ledger records it.
func runBudget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML)")
	demoBudget := fs.Bool("demo", false, "the demo's budget (dpproxy demo)")
	dataDir := fs.String("data-dir", defaultDataDir(), "with --demo: the demo's data directory")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var pol *config.Policy
	var err error
	switch {
	case *demoBudget && *configPath != "":
		fmt.Fprintln(stderr, "dpproxy budget: --config and --demo exclude each other")
		return errUsage
	case *demoBudget:
		if pol, err = demoPolicyIn(*dataDir); err == nil {
			if _, serr := os.Stat(pol.Ledger.Path); errors.Is(serr, os.ErrNotExist) {
				return fmt.Errorf("no demo ledger in %s: the demo has not run there yet (start it with `dpproxy demo --data-dir %s`), so nothing is spent", *dataDir, *dataDir)
			}
		}
	case *configPath != "":
		pol, err = config.Load(*configPath)
	default:
		fmt.Fprintln(stderr, "dpproxy budget: --config FILE (or --demo) is required")
		return errUsage
	}
	if err != nil {
		return err
	}
	store, err := openLedger(ctx, pol.Ledger, true)
	if err != nil {
		return err
	}
	defer store.Close()
	acct, err := newAccountant(ctx, store, pol)
	if err != nil {
		return err
	}
	// A shared ledger's totals, every instance's holds included.
	if err := acct.Refresh(ctx); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "analyst\tε spent\tε limit\tε remaining\tδ spent\tδ limit\taccountant")
	for _, a := range pol.Analysts {
		st, _ := acct.Status(a.Name)
		// Spent is in (ε, δ) whatever the accountant; zCDP also in ρ.
		accountant := "basic"
		switch a.Budget.Accountant {
		case config.AccountantAdvanced:
			accountant = fmt.Sprintf("advanced (δ′ = %g)", a.Budget.DeltaPrime)
		case config.AccountantZCDP:
			accountant = fmt.Sprintf("zcdp (ρ = %.4g, δ′ = %g)", st.Rho, a.Budget.DeltaPrime)
		}
		fmt.Fprintf(tw, "%s\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%s\n", a.Name, st.Spent.Epsilon, st.Limit.Epsilon, st.Remaining.Epsilon, st.Spent.Delta, st.Limit.Delta, renewal(accountant, st, a.Budget))
	}
	// A team's spending is its members' together.
	for _, t := range pol.Teams {
		st, _ := acct.TeamStatus(t.Name)
		fmt.Fprintf(tw, "team %s (%s)\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%s\n", t.Name, strings.Join(t.Analysts, ", "), st.Spent.Epsilon, st.Limit.Epsilon, st.Remaining.Epsilon, st.Spent.Delta, st.Limit.Delta, renewal("basic", st, t.Budget))
	}
	// A table's spending is every analyst's queries that read it.
	for _, t := range pol.ProtectedTables {
		if st, ok := acct.TableStatus(t.Name); ok {
			fmt.Fprintf(tw, "table %s\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%s\n", t.Name, st.Spent.Epsilon, st.Limit.Epsilon, st.Remaining.Epsilon, st.Spent.Delta, st.Limit.Delta, renewal("basic", st, *t.Budget))
		}
	}
	return tw.Flush()
}

// renewal adds to an accountant's description when a budget renews
// (spent and remaining are then the window's) and its lifetime cap.
func renewal(accountant string, st budget.Status, b config.Budget) string {
	if b.Window == "" {
		return accountant
	}
	accountant += fmt.Sprintf(", renews: %s since %s", b.Window, st.WindowStart.Format("2006-01-02 15:04"))
	if l := b.Lifetime; l != nil {
		accountant += fmt.Sprintf(", lifetime ε %g", l.Epsilon)
	}
	return accountant
}
