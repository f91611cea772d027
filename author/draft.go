package author

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
)

// DraftOptions say what to draft a policy for.
type DraftOptions struct {
	// Kind, and DSN (postgres, mysql) or Path (sqlite), reach the
	// database as dpproxy's backend role will.
	Kind      config.BackendKind
	DSN, Path string
	// Schema is the schema whose tables are drafted ("" the default one).
	Schema string
	// Public names the tables to mark public (read in full by analysts);
	// every other table is protected.
	Public []string
	// Analyst is the first analyst's name, Verifiers its password's.
	Analyst   string
	Verifiers config.Verifiers
}

// unitNames are column names that usually identify a person, in order of
// preference, for the draft's guess of a table's privacy unit.
var unitNames = []string{"patient_id", "person_id", "user_id", "customer_id", "client_id", "member_id", "employee_id", "student_id", "subject_id", "account_id", "owner_id"}

// Draft writes a policy for the database's tables as YAML with comments:
// every table protected unless named public, each column with its type,
// the privacy unit guessed (and marked CHECK), no bounds and no GROUP BY
// (so that nothing is answered until the author allows it). The draft
// loads as it is; what it lets analysts ask is little, on purpose.
func Draft(ctx context.Context, be backend.Backend, opts DraftOptions) (string, error) {
	tables, err := listTables(ctx, be, opts.Kind, opts.Schema)
	if err != nil {
		return "", err
	}
	if len(tables) == 0 {
		return "", errors.New("the database has no table to protect (is the schema right, and can dpproxy's role see it?)")
	}
	for _, p := range opts.Public {
		if !slices.Contains(tables, p) {
			return "", fmt.Errorf("--public %s: no such table (the tables are %s)", p, strings.Join(tables, ", "))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# A first policy drafted by `dpproxy init` on %s.\n", time.Now().UTC().Format("2006-01-02"))
	b.WriteString("# Read every line marked CHECK, then run `dpproxy check --config` on it.\n")
	b.WriteString("# Every table is protected unless it was named with --public. Numeric\n")
	b.WriteString("# columns have no bounds and no column allows GROUP BY: add `bounds` and\n")
	b.WriteString("# `group_by` (with `keys` where the values are public) for what analysts need.\n\n")
	b.WriteString("backend:\n")
	fmt.Fprintf(&b, "  kind: %s\n", opts.Kind)
	if opts.Kind == config.BackendSQLite {
		fmt.Fprintf(&b, "  path: %s\n", strconv.Quote(opts.Path))
	} else {
		fmt.Fprintf(&b, "  dsn: %s   # CHECK: a role that can only read these tables\n", strconv.Quote(opts.DSN))
	}
	b.WriteString("\ndefaults:\n  epsilon: 0.5\n  delta: 1e-6\n")
	b.WriteString("  max_groups_per_unit: 1   # CHECK: dpproxy check reports what these two cut\n")
	b.WriteString("  max_rows_per_unit: 1\n")
	b.WriteString("\nanalysts:\n")
	fmt.Fprintf(&b, "  - name: %s\n", strconv.Quote(opts.Analyst))
	fmt.Fprintf(&b, "    password:\n      scram_sha_256: %q\n      mysql_native_password: %q\n      caching_sha2_password: %q\n",
		opts.Verifiers.SCRAMSHA256, opts.Verifiers.MySQLNativePassword, opts.Verifiers.CachingSHA2Password)
	b.WriteString("    budget: {epsilon: 10, delta: 1e-5}   # CHECK: how much this analyst may learn in all\n")
	var public []string
	infos := map[string]*backend.TableInfo{}
	var protected []string
	for _, name := range tables {
		if slices.Contains(opts.Public, name) {
			public = append(public, name)
			continue
		}
		info, err := be.DescribeTable(ctx, opts.Schema, name)
		if err != nil {
			return "", fmt.Errorf("describing %s: %w", name, err)
		}
		infos[name] = info
		protected = append(protected, name)
	}
	if len(protected) > 0 {
		b.WriteString("\nprotected_tables:\n")
	}
	for _, name := range protected {
		draftTable(&b, opts.Schema, name, infos)
	}
	if len(public) > 0 {
		b.WriteString("\npublic_tables:\n")
		for _, name := range public {
			if opts.Schema != "" { // found in review: unqualified, it named the default schema's table
				fmt.Fprintf(&b, "  - {schema: %s, name: %s}\n", strconv.Quote(opts.Schema), strconv.Quote(name))
			} else {
				fmt.Fprintf(&b, "  - %s\n", strconv.Quote(name))
			}
		}
	}
	return b.String(), nil
}

// draftTable writes one protected table; infos are every protected
// table's, for a unit reached through another table.
func draftTable(b *strings.Builder, schema, name string, infos map[string]*backend.TableInfo) {
	info := infos[name]
	fmt.Fprintf(b, "  - name: %s\n", strconv.Quote(name))
	if schema != "" {
		fmt.Fprintf(b, "    schema: %s\n", strconv.Quote(schema))
	}
	unit := guessUnit(info)
	switch via, ref := guessPath(name, info, infos); {
	case unit != "":
		fmt.Fprintf(b, "    privacy_unit: %s   # CHECK: the column that identifies one person\n", strconv.Quote(unit))
	case via != "":
		fmt.Fprintf(b, "    privacy_unit: {via: %s, references: %s}   # CHECK: each row belongs to the person of the %s row it references\n", strconv.Quote(via), strconv.Quote(ref), strings.SplitN(ref, ".", 2)[0])
	default:
		b.WriteString("    privacy_unit: row   # CHECK: no column looks like a person's id; \"row\" makes each row one person\n")
	}
	b.WriteString("    columns:\n")
	for _, c := range info.Columns {
		t, ok := policyType(c.Type)
		if !ok {
			fmt.Fprintf(b, "      # %s (%s): a type the policy cannot describe, left out\n", strconv.Quote(c.Name), c.Type)
			continue
		}
		hint := ""
		switch {
		case c.Name == unit || strings.HasSuffix(strings.ToLower(c.Name), "_id"):
		case t == config.TypeInt || t == config.TypeBigint || t == config.TypeFloat || t == config.TypeNumeric:
			hint = "   # add bounds: [lo, hi] to allow SUM and AVG"
		case t == config.TypeText || t == config.TypeBool:
			hint = "   # add group_by: true (and keys) to allow GROUP BY"
		}
		fmt.Fprintf(b, "      - {name: %s, type: %s}%s\n", strconv.Quote(c.Name), t, hint)
	}
}

// guessPath finds, for a table without a person's column, a column
// name_id that is the one-column primary key of another protected table
// that has one: the rows then belong to that table's people.
func guessPath(name string, info *backend.TableInfo, infos map[string]*backend.TableInfo) (via, ref string) {
	for _, c := range info.Columns {
		if !strings.HasSuffix(strings.ToLower(c.Name), "_id") {
			continue
		}
		for other, oi := range infos {
			if other == name || len(oi.PrimaryKey) != 1 || !strings.EqualFold(oi.PrimaryKey[0], c.Name) || guessUnit(oi) == "" {
				continue
			}
			return c.Name, other + "." + oi.PrimaryKey[0]
		}
	}
	return "", ""
}

// guessUnit is the column most likely to identify a person: one of
// unitNames, else "" (the author decides).
func guessUnit(info *backend.TableInfo) string {
	for _, want := range unitNames {
		for _, c := range info.Columns {
			if strings.EqualFold(c.Name, want) {
				if _, ok := policyType(c.Type); ok {
					return c.Name
				}
			}
		}
	}
	return ""
}
