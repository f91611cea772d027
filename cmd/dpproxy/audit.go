package main

// This file holds `dpproxy audit`, the policy author's audits of the data
// itself: `dpproxy audit closeness` (author.Closeness).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpproxy/dpproxy/author"
	"github.com/dpproxy/dpproxy/config"
)

// errAuditFailed is an audit finding that the data fails it (exit status
// 1 after the report is printed).
var errAuditFailed = errors.New("the data fails the audit")

const auditUsage = `Usage:
  dpproxy audit closeness --config FILE --table [SCHEMA.]NAME | --csv FILE
                --quasi a,b --sensitive s --n N --epsilon E [--distance emd|variational|kl]
                check that every class of records sharing quasi-identifier values has
                a superset of N records whose sensitive values are within E of its own
                ((n, t)-closeness); exit 1 when a class fails

Run "dpproxy audit closeness -h" for its flags.
`

// runAudit runs one of the author's audits of the data.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return errUsage
	}
	switch args[0] {
	case "closeness":
		return runAuditCloseness(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, auditUsage)
		return errHelp
	}
	fmt.Fprintf(stderr, "dpproxy audit: unknown audit %q\n\n%s", args[0], auditUsage)
	return errUsage
}

// runAuditCloseness audits a table, read through a policy's backend or
// from a CSV file, for (n, ε)-closeness (author.Closeness).
func runAuditCloseness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("audit closeness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML): read --table through its backend connection")
	table := fs.String("table", "", "the table to audit, [SCHEMA.]NAME (with --config; unqualified, the schema the policy gives it)")
	csvPath := fs.String("csv", "", "a CSV file with a header row, instead of --config and --table (an empty field is NULL)")
	quasi := fs.String("quasi", "", "comma-separated quasi-identifier columns: records with the same values in them form a class (at most 12)")
	sensitive := fs.String("sensitive", "", "the sensitive column")
	n := fs.Int("n", 0, "a class passes with a superset of at least N records within ε of it (required, at least 1)")
	epsilon := fs.Float64("epsilon", 0, "the largest distance allowed, t of (n, t)-closeness (required, at least 0)")
	distance := fs.String("distance", string(author.EMD), "variational, kl or emd (emd: the ordered earth mover's distance on a numeric column, the variational distance on any other)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usage := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "dpproxy audit closeness: "+format+"\n", args...)
		return errUsage
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case *csvPath != "" && (*configPath != "" || *table != ""):
		return usage("give --csv FILE, or --config FILE and --table NAME, not both")
	case *csvPath == "" && (*configPath == "" || *table == ""):
		return usage("give --config FILE and --table NAME (or --csv FILE)")
	case !set["n"]:
		return usage("--n N is required")
	case !set["epsilon"]:
		return usage("--epsilon E is required")
	}
	d, err := author.ParseDistance(*distance)
	if err != nil {
		return usage("--distance: %v", err)
	}
	opts := author.ClosenessOptions{Sensitive: strings.TrimSpace(*sensitive), N: *n, Epsilon: *epsilon, Distance: d}
	for _, q := range strings.Split(*quasi, ",") {
		if q = strings.TrimSpace(q); q != "" {
			opts.Quasi = append(opts.Quasi, q)
		}
	}
	if err := opts.Validate(); err != nil {
		return usage("%v", err)
	}

	var tbl *author.ClosenessTable
	if *csvPath != "" {
		f, err := os.Open(*csvPath)
		if err != nil {
			return err
		}
		defer f.Close()
		if tbl, err = author.ReadClosenessCSV(f, filepath.Base(*csvPath), opts.Columns()); err != nil {
			return err
		}
	} else {
		pol, err := config.Load(*configPath)
		if err != nil {
			return err
		}
		schema, name := "", *table
		if s, t, ok := strings.Cut(name, "."); ok {
			schema, name = s, t
		} else if pt, pub := pol.LookupTable("", name); pt != nil {
			schema = pt.Schema
		} else if pub != nil {
			schema = pub.Schema
		}
		be, err := openBackend(ctx, pol.Backend.Kind, pol.Backend.DSN, pol.Backend.Path)
		if err != nil {
			return err
		}
		defer be.Close()
		if tbl, err = author.LoadClosenessTable(ctx, be, pol.Backend.Kind, schema, name, opts.Columns()); err != nil {
			return err
		}
	}
	report, err := author.Closeness(tbl, opts)
	if err != nil {
		return err
	}
	report.Write(stdout)
	if !report.Pass() {
		return errAuditFailed
	}
	return nil
}
