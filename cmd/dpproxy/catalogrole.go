package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// runCatalogRole prints the SQL that creates the catalog role for a
// policy: a login role that can read the catalogs and the public tables,
// and sees the protected tables' exposed columns by name only (REFERENCES),
// never their rows.
func runCatalogRole(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("catalog-role", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "policy file (YAML)")
	role := fs.String("role", "dpproxy_catalog", "name of the role to create")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "dpproxy catalog-role: --config FILE is required")
		return errUsage
	}
	pol, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, catalogRoleSQL(pol, *role))
	return nil
}

func catalogRoleSQL(pol *config.Policy, role string) string {
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	table := func(schema, name string) string {
		if schema == "" {
			schema = "public"
		}
		return q(schema) + "." + q(name)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "-- The catalog role of dpproxy: set a password, then put its connection\n-- string in backend.catalog_dsn. It must never get SELECT on a protected table.\n")
	fmt.Fprintf(&sb, "CREATE ROLE %s LOGIN NOSUPERUSER NOINHERIT NOCREATEDB NOCREATEROLE NOBYPASSRLS;\n", q(role))
	fmt.Fprintf(&sb, "ALTER ROLE %s SET default_transaction_read_only = on;\n", q(role))
	schemas := map[string]bool{}
	for _, t := range pol.PublicTables {
		schemas[t.Schema] = true
	}
	for _, t := range pol.ProtectedTables {
		schemas[t.Schema] = true
	}
	for s := range schemas {
		if s == "" {
			s = "public"
		}
		fmt.Fprintf(&sb, "GRANT USAGE ON SCHEMA %s TO %s;\n", q(s), q(role))
	}
	for _, t := range pol.PublicTables {
		fmt.Fprintf(&sb, "GRANT SELECT ON %s TO %s;\n", table(t.Schema, t.Name), q(role))
	}
	for _, t := range pol.ProtectedTables {
		var cols []string
		for _, c := range t.Columns {
			cols = append(cols, q(c.Name))
		}
		fmt.Fprintf(&sb, "REVOKE ALL ON %s FROM %s;\n", table(t.Schema, t.Name), q(role))
		fmt.Fprintf(&sb, "GRANT REFERENCES (%s) ON %s TO %s; -- names visible in information_schema, no rows\n", strings.Join(cols, ", "), table(t.Schema, t.Name), q(role))
	}
	return sb.String()
}
