package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// runExplain prints how a query would be answered, without spending
// budget; without connecting to the backend unless --backend asks to
// read what dpproxy serve reads from it first (key lists, primary keys).
func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML); the built-in demo policy when empty")
	epsilon := fs.Float64("epsilon", 0, "ε of the query (default: the policy's defaults.epsilon)")
	fromBackend := fs.Bool("backend", false, "read from the policy's database what dpproxy serve reads at start (key lists from public tables, primary keys), so that the plan is the one served")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, `usage: dpproxy explain [--config FILE] [--epsilon E] "SQL"`)
		return errUsage
	}
	var pol *config.Policy
	var err error
	if *configPath == "" {
		pol, err = demoPolicyIn(defaultDataDir())
	} else {
		pol, err = config.Load(*configPath)
	}
	if err != nil {
		return err
	}
	eps := *epsilon
	if eps == 0 {
		eps = pol.Defaults.Epsilon
	}
	dialect, err := dialectFor(pol.Backend.Kind)
	if err != nil {
		return err
	}
	if *fromBackend {
		be, err := openBackend(ctx, pol.Backend.Kind, pol.Backend.DSN, pol.Backend.Path)
		if err != nil {
			return err
		}
		err = session.CompletePolicy(ctx, pol, be, dialect)
		be.Close()
		if err != nil {
			return fmt.Errorf("reading the policy's database: %w", err)
		}
	}
	stmts, err := rewrite.Parse(fs.Arg(0), rewrite.PostgresFrontEnd)
	if err != nil {
		return explainError(err)
	}
	if len(stmts) != 1 {
		return fmt.Errorf("explain takes exactly one statement, got %d", len(stmts))
	}
	q, err := rewrite.Analyze(stmts[0], pol, rewrite.Options{Dialect: dialect, Epsilon: eps, FrontEnd: rewrite.PostgresFrontEnd, BindConstants: true})
	if err != nil {
		return explainError(err)
	}
	if q.Passthrough != nil {
		fmt.Fprintf(stdout, "public tables only: runs unchanged on the backend, no budget spent\n\nbackend SQL (%s):\n  %s\n", dialect.Name(), q.Passthrough.SQL)
		return nil
	}
	table, err := engine.Explain(q.Plan)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, engine.ExplainSummary(q.Plan))
	fmt.Fprintln(stdout, "\nrelational plan:")
	for _, op := range q.Plan.Relational() {
		fmt.Fprintf(stdout, "  %s\n", op)
	}
	fmt.Fprintf(stdout, "\nbackend SQL (%s):\n  %s\n\n", dialect.Name(), strings.Join(q.Plan.BackendQueries(), "\n  "))
	if b := q.Plan.Bound; b != nil {
		// What serve sends: one statement for every query that differs
		// only in its constants (pg_stat_statements shows it so).
		fmt.Fprintf(stdout, "sent with the constants as parameters:\n  %s\n  parameters: %s\n\n", b.SQL, boundArgs(b.Args))
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	var names []string
	for _, c := range table.Columns {
		names = append(names, c.Name)
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for _, row := range table.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			if f, ok := v.(float64); ok {
				cells[i] = fmt.Sprintf("%.6g", f)
			} else {
				cells[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// boundArgs lists a bound query's parameters as $1 = 'value', ...
func boundArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprintf("$%d = '%s'", i+1, strings.ReplaceAll(fmt.Sprint(a), "'", "''"))
	}
	return strings.Join(parts, ", ")
}

func explainError(err error) error {
	e := sqlerr.As(err)
	msg := fmt.Sprintf("ERROR %s: %s", e.Code, e.Message)
	if e.Hint != "" {
		msg += "\nHINT: " + e.Hint
	}
	return fmt.Errorf("%s", msg)
}
