package author

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/sqltypes"
)

// Level is how much a finding matters: an error makes the policy wrong
// for its database (dpproxy check exits non-zero); a warning is worth a
// look (a bound that clips much of the data); info is a figure.
type Level int

const (
	Info Level = iota
	Warning
	Error
)

func (l Level) String() string { return [...]string{"info", "warning", "error"}[l] }

// Finding is one thing Check found, about a subject (a table, a column,
// the backend role).
type Finding struct {
	Level   Level
	Subject string
	Message string
}

// Report is what Check found, in the order it looked.
type Report struct{ Findings []Finding }

func (r *Report) add(l Level, subject, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{l, subject, fmt.Sprintf(format, args...)})
}

// Count is the number of findings at level l.
func (r *Report) Count(l Level) int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == l {
			n++
		}
	}
	return n
}

// Write prints the report, one finding per line, and a summary.
func (r *Report) Write(w io.Writer) {
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%-7s %s: %s\n", f.Level, f.Subject, f.Message)
	}
	fmt.Fprintf(w, "%d error(s), %d warning(s)\n", r.Count(Error), r.Count(Warning))
}

// Thresholds above which a cut is worth a warning.
const (
	clipWarning     = 0.05 // of a column's values outside its bounds
	truncateWarning = 0.10 // of the people a per-person limit cuts
)

// Check compares pol with the database be reaches (as dpproxy's backend
// role): tables, columns, types and key sources exist; the role can only
// read; and, on the data as it is, the share of each bounded column's
// values its bounds clip and the share of people (and rows) each
// per-person limit cuts.
func Check(ctx context.Context, pol *config.Policy, be backend.Backend) (*Report, error) {
	r := &Report{}
	q := quoterFor(pol.Backend.Kind)
	if err := checkRole(ctx, pol, be, q, r); err != nil {
		return nil, err
	}
	for i := range pol.ProtectedTables {
		t := &pol.ProtectedTables[i]
		info, err := be.DescribeTable(ctx, t.Schema, t.Name)
		if errors.Is(err, backend.ErrNoSuchTable) {
			r.add(Error, t.Name, "no such table in the database")
			continue
		} else if err != nil {
			return nil, fmt.Errorf("describing %s: %w", t.Name, err)
		}
		columnsOK := true
		// The database's spelling of each column, for the data queries
		// (found in review: the policy's may differ in case).
		names := map[string]string{}
		for _, c := range t.Columns {
			got, ok := findColumn(info, c.Name)
			names[c.Name] = got.Name
			switch {
			case !ok:
				r.add(Error, t.Name+"."+c.Name, "no such column in %s (its columns: %s)", t.Name, columnNames(info))
				columnsOK = false
			case !compatible(c.Type, got.Type):
				r.add(Error, t.Name+"."+c.Name, "the policy says %s, the database has %s", c.Type, got.Type)
				columnsOK = false
			}
			if c.KeysFrom != nil {
				checkKeySource(ctx, be, t.Name+"."+c.Name, c.KeysFrom, r)
			}
		}
		if !columnsOK {
			continue // the data queries below would fail
		}
		dbq := func(policyName string) string { return q(names[policyName]) }
		if err := checkBounds(ctx, be, q, dbq, t, r); err != nil {
			return nil, err
		}
		if err := checkLimits(ctx, pol, be, q, dbq, t, r); err != nil {
			return nil, err
		}
	}
	if err := checkSpeed(ctx, pol, be, q, r); err != nil {
		return nil, err
	}
	for _, pub := range pol.PublicTables {
		if _, err := be.DescribeTable(ctx, pub.Schema, pub.Name); errors.Is(err, backend.ErrNoSuchTable) {
			r.add(Error, pub.Name, "public table not in the database")
		} else if err != nil {
			return nil, fmt.Errorf("describing %s: %w", pub.Name, err)
		}
	}
	return r, nil
}

func findColumn(info *backend.TableInfo, name string) (backend.ColumnInfo, bool) {
	for _, c := range info.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return backend.ColumnInfo{}, false
}

func columnNames(info *backend.TableInfo) string {
	names := make([]string, len(info.Columns))
	for i, c := range info.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func checkKeySource(ctx context.Context, be backend.Backend, subject string, src *config.KeySource, r *Report) {
	info, err := be.DescribeTable(ctx, src.Schema, src.Table)
	switch {
	case err != nil:
		r.add(Error, subject, "keys_from %s: no such table", src)
	default:
		if _, ok := findColumn(info, src.Column); !ok {
			r.add(Error, subject, "keys_from %s: no such column", src)
		}
	}
}

// checkBounds reports, for each column with bounds, the share of its
// values outside them (which SUM and AVG clamp).
func checkBounds(ctx context.Context, be backend.Backend, q, column quoter, t *config.ProtectedTable, r *Report) error {
	for _, c := range t.Columns {
		if c.Bounds == nil {
			continue
		}
		col := column(c.Name)
		sql := fmt.Sprintf("SELECT COUNT(%[1]s), SUM(CASE WHEN %[1]s < %[2]v OR %[1]s > %[3]v THEN 1 ELSE 0 END), MIN(%[1]s), MAX(%[1]s) FROM %[4]s",
			col, c.Bounds.Lo, c.Bounds.Hi, q.table(t.Schema, t.Name))
		rows, err := be.Query(ctx, sql)
		if err != nil {
			return fmt.Errorf("reading %s.%s: %w", t.Name, c.Name, err)
		}
		row := rows.Values[0]
		n, clipped := sqltypes.Float(row[0]), sqltypes.Float(row[1])
		subject := t.Name + "." + c.Name
		if n == 0 {
			r.add(Info, subject, "no values yet: bounds [%v, %v] cannot be judged", c.Bounds.Lo, c.Bounds.Hi)
			continue
		}
		share := clipped / n
		level := Info
		if share > clipWarning {
			level = Warning
		}
		r.add(level, subject, "bounds [%v, %v] clip %.1f%% of its %.0f values (they range from %v to %v); SUM and AVG count each clipped value at the nearer bound",
			c.Bounds.Lo, c.Bounds.Hi, 100*share, n, row[2], row[3])
	}
	return nil
}

// personColumn is the column of t holding a person's identifier, or ""
// when a person is not one column of t (row privacy, or a unit path of
// more than one hop).
func personColumn(pol *config.Policy, t *config.ProtectedTable) string {
	switch {
	case t.PrivacyUnit == config.RowPrivacyUnit:
		return ""
	case t.UnitPath == nil:
		return t.PrivacyUnit
	}
	for _, other := range pol.ProtectedTables {
		if strings.EqualFold(other.Name, t.UnitPath.Table) && strings.EqualFold(other.PrivacyUnit, t.UnitPath.Column) {
			return t.PrivacyUnit // the via column holds the person's id
		}
	}
	return ""
}

// checkLimits reports what the per-person limits cut: max_rows_per_unit
// in a query without GROUP BY (people with more rows, and the rows
// dropped), max_total_rows_per_unit (people with more rows, whose rows a
// grouped query weighs down) and max_groups_per_unit for each GROUP BY
// column (people in more groups).
func checkLimits(ctx context.Context, pol *config.Policy, be backend.Backend, q, column quoter, t *config.ProtectedTable, r *Report) error {
	unit := personColumn(pol, t)
	if unit == "" {
		r.add(Info, t.Name, "a person is not one column of this table: per-person limits not measured")
		return nil
	}
	table, u := q.table(t.Schema, t.Name), column(unit)
	if t.AutoRows() {
		r.add(Info, t.Name, "max_rows_per_unit: auto — each query chooses it from the data")
	}
	if !t.AutoRows() || t.MaxTotalRowsPerUnit > 0 {
		// Each person's rows: those beyond max_rows_per_unit (l, when
		// fixed) and max_total_rows_per_unit (c, when set; else l).
		l, c := max(t.MaxRowsPerUnit, 1), t.MaxTotalRowsPerUnit
		sql := fmt.Sprintf("SELECT COUNT(*), SUM(CASE WHEN n > %[1]d THEN 1 ELSE 0 END), SUM(n), SUM(CASE WHEN n > %[1]d THEN n - %[1]d ELSE 0 END), MAX(n), SUM(CASE WHEN n > %[4]d THEN 1 ELSE 0 END) FROM (SELECT %[2]s, COUNT(*) AS n FROM %[3]s WHERE %[2]s IS NOT NULL GROUP BY %[2]s) AS per_person",
			l, u, table, cmp.Or(c, l))
		rows, err := be.Query(ctx, sql)
		if err != nil {
			return fmt.Errorf("counting rows per person in %s: %w", t.Name, err)
		}
		row := rows.Values[0]
		people, cut, total, dropped, cutTotal := sqltypes.Float(row[0]), sqltypes.Float(row[1]), sqltypes.Float(row[2]), sqltypes.Float(row[3]), sqltypes.Float(row[5])
		level := func(cut float64) Level {
			if cut/people > truncateWarning {
				return Warning
			}
			return Info
		}
		if people > 0 && !t.AutoRows() {
			r.add(level(cut), t.Name, "max_rows_per_unit %d truncates %.1f%% of the %.0f people (%.1f%% of the rows; the most rows one person has is %v) in a query without GROUP BY",
				l, 100*cut/people, people, 100*dropped/total, row[4])
		}
		// The total bound binds only below L0·Linf (rewrite's
		// Plan.TotalCapped).
		if people > 0 && c > 0 && (t.AutoRows() || c < t.MaxGroupsPerUnit*t.MaxRowsPerUnit) {
			slower := ""
			if pol.Backend.Kind == config.BackendMySQL && cutTotal > 0 {
				// rewrite's heavy.go: the correction re-reads their rows.
				slower = "; MariaDB's bounding query reads these people's rows a second time, so the more there are, the slower it runs (over 2.1 M visits: 1.9 s with none, 4.8 s with 38% of the people)"
			}
			if pol.Backend.Kind == config.BackendPostgres && cutTotal > 0 && !t.AutoRows() && c <= t.MaxRowsPerUnit {
				// rewrite's heavy.go, rows form (with the person column
				// declared NOT NULL): the same.
				slower = "; with the person column declared NOT NULL, PostgreSQL's bounding query sums the other people from the rows and reads these people's rows a second time, so the more there are, the slower it runs (over 2.1 M visits: 0.8 s with none, 2.5 s with 67% of the people, where the form for a nullable column takes 1.4 s and 1.6 s)"
			}
			r.add(level(cutTotal), t.Name, "max_total_rows_per_unit %d: %.1f%% of the %.0f people have more rows (the most one person has is %v), which a grouped query weighs down to %d in all where capping each group at max_rows_per_unit leaves more%s",
				c, 100*cutTotal/people, people, row[4], c, slower)
		}
	}
	for _, c := range t.Columns {
		if !c.GroupBy {
			continue
		}
		l := t.MaxGroupsPerUnit
		sql := fmt.Sprintf("SELECT COUNT(*), SUM(CASE WHEN k > %[1]d THEN 1 ELSE 0 END), MAX(k) FROM (SELECT %[2]s, COUNT(DISTINCT %[3]s) AS k FROM %[4]s WHERE %[2]s IS NOT NULL GROUP BY %[2]s) AS per_person",
			l, u, column(c.Name), table)
		rows, err := be.Query(ctx, sql)
		if err != nil {
			return fmt.Errorf("counting groups per person in %s: %w", t.Name, err)
		}
		row := rows.Values[0]
		people, cut := sqltypes.Float(row[0]), sqltypes.Float(row[1])
		if people == 0 {
			continue
		}
		level := Info
		if cut/people > truncateWarning {
			level = Warning
		}
		r.add(level, t.Name+"."+c.Name, "max_groups_per_unit %d: GROUP BY %s keeps %d of the groups of %.1f%% of the people (the most one person is in is %v)",
			l, c.Name, l, 100*cut/people, row[2])
	}
	return nil
}

// writePrivileges are MySQL privileges beyond reading.
var writePrivileges = regexp.MustCompile(`(?i)\b(ALL( PRIVILEGES)?|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|INDEX|TRIGGER|EVENT|LOCK TABLES|EXECUTE|FILE|SUPER|GRANT OPTION|CREATE ROUTINE|ALTER ROUTINE|CREATE VIEW)\b`)

// checkRole reports what dpproxy's backend role may do beyond reading.
func checkRole(ctx context.Context, pol *config.Policy, be backend.Backend, q quoter, r *Report) error {
	const subject = "backend role"
	switch pol.Backend.Kind {
	case config.BackendSQLite:
		r.add(Info, subject, "dpproxy opens the SQLite file read-only, whatever the file's permissions")
		return nil
	case config.BackendPostgres:
		rows, err := be.Query(ctx, `SELECT current_user::text, rolsuper, rolcreatedb, rolcreaterole, has_database_privilege(current_database(), 'CREATE') FROM pg_roles WHERE rolname = current_user`)
		if err != nil {
			return fmt.Errorf("reading the backend role: %w", err)
		}
		if len(rows.Values) == 1 {
			row := rows.Values[0]
			for i, what := range []string{"", "is a superuser: it can write anything", "can create databases", "can create roles", "can create schemas in the database"} {
				if b, _ := row[i].(bool); i > 0 && b {
					r.add(Error, subject, "%v %s; give dpproxy a role that can only read (README: the backend role)", row[0], what)
				}
			}
		}
		var writable []string
		for _, t := range policyTables(pol) {
			rows, err := be.Query(ctx, `SELECT has_table_privilege($1, 'INSERT'), has_table_privilege($1, 'UPDATE'), has_table_privilege($1, 'DELETE'), has_table_privilege($1, 'TRUNCATE')`, q.table(t[0], t[1]))
			if err != nil {
				continue // a missing table is reported with the tables
			}
			var privs []string
			for i, p := range []string{"INSERT", "UPDATE", "DELETE", "TRUNCATE"} {
				if b, _ := rows.Values[0][i].(bool); b {
					privs = append(privs, p)
				}
			}
			if len(privs) > 0 {
				writable = append(writable, t[1]+" ("+strings.Join(privs, ", ")+")")
			}
		}
		if len(writable) > 0 {
			r.add(Error, subject, "can write to %s; grant it SELECT only", strings.Join(writable, ", "))
		}
	case config.BackendMySQL:
		rows, err := be.Query(ctx, "SHOW GRANTS")
		if err != nil {
			return fmt.Errorf("reading the backend role's grants: %w", err)
		}
		var found []string
		for _, row := range rows.Values {
			grant, _ := row[0].(string)
			head, _, _ := strings.Cut(grant, " TO ")
			privs, on, ok := strings.Cut(strings.TrimPrefix(head, "GRANT "), " ON ")
			if !ok || strings.HasPrefix(strings.ToUpper(grant), "GRANT PROXY") {
				continue
			}
			if w := writePrivileges.FindAllString(privs, -1); len(w) > 0 || strings.Contains(strings.ToUpper(grant), "WITH GRANT OPTION") {
				found = append(found, strings.Join(append(w, "on "+on), " "))
			}
		}
		if len(found) > 0 {
			sort.Strings(found)
			r.add(Error, subject, "may write: %s; grant it SELECT only (README: the backend role)", strings.Join(found, "; "))
		}
	}
	if r.Count(Error) == 0 {
		r.add(Info, subject, "can only read the policy's tables")
	}
	return nil
}

// policyTables lists the schema and name of every table the policy names.
func policyTables(pol *config.Policy) [][2]string {
	var out [][2]string
	for _, t := range pol.ProtectedTables {
		out = append(out, [2]string{t.Schema, t.Name})
	}
	for _, t := range pol.PublicTables {
		out = append(out, [2]string{t.Schema, t.Name})
	}
	return out
}
