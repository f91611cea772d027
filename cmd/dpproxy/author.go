package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dpproxy/dpproxy/author"
	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
)

// errCheckFailed is `dpproxy check` finding errors (exit status 1 after
// the report is printed).
var errCheckFailed = errors.New("the policy does not match its database")

// runInit drafts a policy from a live schema (author.Draft).
func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", "", "the database, as dpproxy's backend role will reach it: postgres://... or a MySQL DSN user:password@tcp(host:port)/db")
	sqlitePath := fs.String("sqlite", "", "a SQLite database file instead of --dsn")
	schema := fs.String("schema", "", "the schema to draft (default: the connection's)")
	public := fs.String("public", "", "comma-separated tables to mark public (read in full); every other table is protected")
	analyst := fs.String("analyst", "analyst", "the first analyst's name")
	out := fs.String("out", "", "write the policy to this file (default: standard output); never overwrites one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	opts := author.DraftOptions{Schema: *schema, Analyst: *analyst}
	switch {
	case (*dsn == "") == (*sqlitePath == ""):
		fmt.Fprintln(stderr, "dpproxy init: give --dsn or --sqlite (one of them)")
		return errUsage
	case *sqlitePath != "":
		opts.Kind, opts.Path = config.BackendSQLite, *sqlitePath
	case strings.HasPrefix(*dsn, "postgres://") || strings.HasPrefix(*dsn, "postgresql://"):
		opts.Kind, opts.DSN = config.BackendPostgres, *dsn
	default:
		opts.Kind, opts.DSN = config.BackendMySQL, *dsn
	}
	for _, t := range strings.Split(*public, ",") {
		if t = strings.TrimSpace(t); t != "" {
			opts.Public = append(opts.Public, t)
		}
	}
	// A random password for the first analyst, shown once.
	secret := make([]byte, 15)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	password := base64.RawURLEncoding.EncodeToString(secret)
	var err error
	if opts.Verifiers, err = config.NewVerifiers(password); err != nil {
		return err
	}
	be, err := openBackend(ctx, opts.Kind, opts.DSN, opts.Path)
	if err != nil {
		return err
	}
	defer be.Close()
	draft, err := author.Draft(ctx, be, opts)
	if err != nil {
		return err
	}
	// The draft must load as it is.
	if _, err := config.Parse([]byte(draft), "draft"); err != nil {
		return fmt.Errorf("the draft does not load (a bug in dpproxy init): %w", err)
	}
	if *out == "" {
		fmt.Fprint(stdout, draft)
	} else {
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(draft); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", *out)
	}
	fmt.Fprintf(stderr, "analyst %q's password (shown once; the policy keeps only its verifiers): %s\n", *analyst, password)
	return nil
}

// runCheck checks a policy against its database (author.Check).
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "dpproxy check: --config FILE is required")
		return errUsage
	}
	pol, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	be, err := openBackend(ctx, pol.Backend.Kind, pol.Backend.DSN, pol.Backend.Path)
	if err != nil {
		return err
	}
	defer be.Close()
	report, err := author.Check(ctx, pol, be)
	if err != nil {
		return err
	}
	report.Write(stdout)
	if report.Count(author.Error) > 0 {
		return errCheckFailed
	}
	return nil
}

// openBackend reaches a database as dpproxy serve would.
func openBackend(ctx context.Context, kind config.BackendKind, dsn, path string) (backend.Backend, error) {
	be, err := backend.Open(ctx, config.Backend{Kind: kind, DSN: dsn, Path: path, MaxConns: 2})
	if err != nil {
		return nil, fmt.Errorf("opening the %s database: %w", kind, err)
	}
	return be, nil
}
