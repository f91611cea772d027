package config

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults used when the policy file leaves a field out.
const (
	DefaultPostgresListen   = "127.0.0.1:5433"
	DefaultMaxConns         = 10
	DefaultLedgerPath       = "dpproxy-ledger.db"
	DefaultLedgerSchema     = "dpproxy"
	DefaultHoldLease        = 30 * time.Second
	DefaultEpsilon          = 0.1
	DefaultDelta            = 1e-6
	DefaultMaxGroupsPerUnit = 1
	DefaultMaxRowsPerUnit   = 1
	DefaultNeighbouring     = AddRemove
	DefaultCacheSize        = 1000
	DefaultCacheTTL         = time.Hour
	DefaultStatementTimeout = 5 * time.Minute
	DefaultIdleTimeout      = time.Hour
	DefaultWriteTimeout     = time.Minute
	// DefaultMaxMessageSize is the largest message or packet a logged-in
	// client may send, on both protocols.
	DefaultMaxMessageSize           = 1 << 20
	DefaultMaxResultRows            = 1000000
	DefaultMaxResultBytes           = 256 << 20
	DefaultMaxConnections           = 1000
	DefaultMaxConnectionsPerAnalyst = 100
	DefaultMaxHandshakes            = 200
	DefaultLoginBackoff             = 250 * time.Millisecond
	DefaultLoginBackoffMax          = 30 * time.Second
)

// Limits on numeric settings.
const (
	// MaxMaxConns is the largest backend.max_conns accepted.
	MaxMaxConns = 1000
	// MaxContribution is the largest L0 (max_groups_per_unit) or Linf
	// (max_rows_per_unit) accepted. Noise grows with them; beyond this the
	// results would be noise.
	MaxContribution = 1000
	// MaxCacheSize is the largest cache.size accepted.
	MaxCacheSize = 1000000
	// MaxTimeout is the longest statement or idle timeout accepted.
	MaxTimeout = 7 * 24 * time.Hour
	// MaxCacheTTL is the longest cache.ttl accepted.
	MaxCacheTTL = 7 * 24 * time.Hour
	// MinMessageSize and MaxMessageSize bound listen.max_message_size.
	MinMessageSize = 4 << 10
	MaxMessageSize = 64 << 20
	// MaxConnections bounds listen.max_connections (file descriptors).
	MaxConnections = 100000
)

// ReservedSchema is the schema of dpproxy's own read-only views
// (dpproxy.budget, dpproxy.queries); no table in the policy may use it.
const ReservedSchema = "dpproxy"

var (
	backendKinds = []string{string(BackendPostgres), string(BackendSQLite), string(BackendMySQL)}
	columnTypes  = []string{
		string(TypeInt), string(TypeBigint), string(TypeFloat), string(TypeNumeric),
		string(TypeText), string(TypeDate), string(TypeTimestamp), string(TypeBool),
	}
	// typeAliases maps common SQL spellings to the policy's type names, for
	// "did you mean" hints.
	typeAliases = map[string]ColumnType{
		"integer": TypeInt, "int4": TypeInt, "smallint": TypeInt, "int2": TypeInt,
		"int8": TypeBigint, "long": TypeBigint,
		"double": TypeFloat, "double precision": TypeFloat, "real": TypeFloat,
		"float8": TypeFloat, "float4": TypeFloat,
		"decimal": TypeNumeric,
		"string":  TypeText, "varchar": TypeText, "char": TypeText,
		"datetime": TypeTimestamp, "timestamptz": TypeTimestamp,
		"boolean": TypeBool,
	}
)

// validate fills in defaults and checks every rule, recording errors
// against the fields' positions. baseDir, when set, is the directory
// relative paths are resolved against.
func (d *decoder) validate(p *Policy, baseDir string) {
	d.validateListen(p, baseDir)
	d.validateBackend(p, baseDir)
	d.validateLedger(p, baseDir)
	d.validateDefaults(p)
	d.validateCache(p)
	d.validateOperations(p, baseDir)
	d.validateAnalysts(p)
	d.validateTeams(p)
	d.validateTables(p)
}

func (d *decoder) validateListen(p *Policy, baseDir string) {
	l := &p.Listen
	if !d.has("listen.postgres") {
		l.Postgres = DefaultPostgresListen
	}
	if (l.TLSCert == "") != (l.TLSKey == "") {
		d.errorf("listen.tls_cert", "tls_cert and tls_key go together; expected both PEM files, or neither to decline TLS")
	}
	if l.TLSCert != "" {
		l.TLSCert, l.TLSKey = resolve(baseDir, l.TLSCert), resolve(baseDir, l.TLSKey)
	}
	switch l.TLS {
	case "":
		l.TLS = TLSOptional
	case TLSOptional:
	case TLSRequired:
		if l.TLSCert == "" {
			d.errorf("listen.tls", "required needs a certificate; set listen.tls_cert and listen.tls_key")
		}
	default:
		d.errorf("listen.tls", "unknown TLS mode %q%s; expected %s or %s", l.TLS, caseHint(string(l.TLS), []string{string(TLSOptional), string(TLSRequired)}), TLSOptional, TLSRequired)
	}
	for _, f := range []struct {
		path     string
		dst      *int
		def, min int
		max      int
	}{
		{"listen.max_message_size", &l.MaxMessageSize, DefaultMaxMessageSize, MinMessageSize, MaxMessageSize},
		{"listen.max_result_rows", &l.MaxResultRows, DefaultMaxResultRows, 1, 1 << 31},
		{"listen.max_connections", &l.MaxConnections, DefaultMaxConnections, 1, MaxConnections},
		{"listen.max_connections_per_analyst", &l.MaxConnectionsPerAnalyst, DefaultMaxConnectionsPerAnalyst, 1, MaxConnections},
		{"listen.max_handshakes", &l.MaxHandshakes, DefaultMaxHandshakes, 1, MaxConnections},
	} {
		if !d.has(f.path) {
			*f.dst = f.def
		} else if *f.dst < f.min || *f.dst > f.max {
			d.errorf(f.path, "must be a whole number from %d to %d, got %d", f.min, f.max, *f.dst)
		}
	}
	if !d.has("listen.max_result_bytes") {
		l.MaxResultBytes = DefaultMaxResultBytes
	} else if l.MaxResultBytes < 1024 || l.MaxResultBytes > 1<<40 {
		d.errorf("listen.max_result_bytes", "must be a whole number of bytes from 1024 to %d, got %d", int64(1)<<40, l.MaxResultBytes)
	}
	if l.MaxConnections > 0 { // the others cannot exceed it
		l.MaxConnectionsPerAnalyst = min(l.MaxConnectionsPerAnalyst, l.MaxConnections)
		l.MaxHandshakes = min(l.MaxHandshakes, l.MaxConnections)
	}
	for _, f := range []struct {
		path string
		dst  *time.Duration
		def  time.Duration
	}{
		{"listen.statement_timeout", &l.StatementTimeout, DefaultStatementTimeout},
		{"listen.idle_timeout", &l.IdleTimeout, DefaultIdleTimeout},
		{"listen.write_timeout", &l.WriteTimeout, DefaultWriteTimeout},
		{"listen.login_backoff", &l.LoginBackoff, DefaultLoginBackoff},
		{"listen.login_backoff_max", &l.LoginBackoffMax, DefaultLoginBackoffMax},
	} {
		if !d.has(f.path) {
			*f.dst = f.def
		} else if *f.dst <= 0 || *f.dst > MaxTimeout {
			d.errorf(f.path, "must be a duration greater than 0 and at most %s, got %s", formatDuration(MaxTimeout), formatDuration(*f.dst))
		}
	}
	if l.LoginBackoffMax > 0 && l.LoginBackoffMax < l.LoginBackoff {
		d.errorf("listen.login_backoff_max", "%s is shorter than listen.login_backoff (%s); expected at least as long", formatDuration(l.LoginBackoffMax), formatDuration(l.LoginBackoff))
	}
	for _, f := range []struct {
		path, addr, example string
	}{
		{"listen.postgres", l.Postgres, "127.0.0.1:5433"},
		{"listen.mysql", l.MySQL, "127.0.0.1:3307"},
	} {
		if f.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(f.addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			d.errorf(f.path, "%q is not a host:port address with a numeric port; expected e.g. %q, or \"\" to turn this front end off", f.addr, f.example)
		}
	}
	if d.ok("listen") && l.Postgres == "" && l.MySQL == "" {
		d.errorf("listen", "no front end is enabled; set listen.postgres or listen.mysql (or both) to a host:port address")
	}
	if l.Postgres != "" && l.Postgres == l.MySQL && !strings.HasSuffix(l.MySQL, ":0") { // port 0: each gets a free port
		d.errorf("listen.mysql", "%q is also listen.postgres; expected a different address for each front end", l.MySQL)
	}
}

func (d *decoder) validateBackend(p *Policy, baseDir string) {
	b := &p.Backend
	if !d.has("backend") {
		d.errorf("backend", "required; expected a mapping with kind (%s) and dsn or path", strings.Join(backendKinds, ", "))
	} else {
		switch b.Kind {
		case "":
			d.errorf("backend.kind", "required; expected one of %s", strings.Join(backendKinds, ", "))
		case BackendPostgres, BackendMySQL:
			if b.DSN == "" {
				example := "postgres://dpproxy@localhost:5432/clinic"
				if b.Kind == BackendMySQL {
					example = "dpproxy:secret@tcp(localhost:3306)/clinic"
				}
				d.errorf("backend.dsn", "required for kind %s; expected a connection string such as %q", b.Kind, example)
			}
			if b.Path != "" {
				d.errorf("backend.path", "only used with kind sqlite; a %s backend is reached through dsn", b.Kind)
			}
		case BackendSQLite:
			if b.Path == "" {
				d.errorf("backend.path", "required for kind sqlite; expected the database file's path")
			}
			if b.DSN != "" {
				d.errorf("backend.dsn", "not used with kind sqlite; expected path to name the database file")
			}
		default:
			d.errorf("backend.kind", "unknown backend kind %q%s; expected one of %s", b.Kind, caseHint(string(b.Kind), backendKinds), strings.Join(backendKinds, ", "))
		}
	}
	if !d.has("backend.max_conns") {
		b.MaxConns = DefaultMaxConns
	} else if b.MaxConns < 1 || b.MaxConns > MaxMaxConns {
		d.errorf("backend.max_conns", "must be between 1 and %d, got %d", MaxMaxConns, b.MaxConns)
	}
	if l := b.PipelineLanes; l != nil {
		switch {
		case b.Kind == BackendSQLite:
			d.errorf("backend.pipeline_lanes", "only used with kind postgres or mysql: a %s backend runs each statement in the process; remove it", b.Kind)
		case *l < 0 || *l > b.MaxConns:
			d.errorf("backend.pipeline_lanes", "must be between 0 (off) and backend.max_conns (%d), got %d", b.MaxConns, *l)
		}
	}
	if b.Kind == BackendSQLite && b.Path != ":memory:" && !strings.HasPrefix(b.Path, "file:") {
		b.Path = resolve(baseDir, b.Path)
	}
}

func (d *decoder) validateLedger(p *Policy, baseDir string) {
	l := &p.Ledger
	if d.has("ledger.postgres") {
		switch {
		case d.has("ledger.path"):
			d.errorf("ledger.path", "a ledger is a file (path) or a shared PostgreSQL database (postgres), not both; remove one")
		case !strings.HasPrefix(l.Postgres, "postgres://") && !strings.HasPrefix(l.Postgres, "postgresql://"):
			d.errorf("ledger.postgres", "expected the URL (scheme postgres or postgresql) of the database the shared ledger lives in, got %q", l.Postgres)
		}
		if l.Schema == "" {
			l.Schema = DefaultLedgerSchema
		} else if !isLowerIdent(l.Schema) {
			d.errorf("ledger.schema", "expected a lower-case SQL identifier (letters, digits, _), got %q", l.Schema)
		}
		if l.HoldLease == 0 {
			l.HoldLease = DefaultHoldLease
		} else if l.HoldLease < 3*time.Second || l.HoldLease > 10*time.Minute {
			d.errorf("ledger.hold_lease", "must be between 3s and 10m, got %v: an instance renews its reservations every third of it, and those of an instance that died are given back after it", l.HoldLease)
		}
		return
	}
	for _, key := range []string{"schema", "hold_lease"} {
		if d.has("ledger." + key) {
			d.errorf("ledger."+key, "applies only to a shared ledger (ledger.postgres); remove it or add ledger.postgres")
		}
	}
	if !d.has("ledger.path") {
		p.Ledger.Path = DefaultLedgerPath
	} else if p.Ledger.Path == "" {
		d.errorf("ledger.path", "must not be empty; expected a file path, or leave the key out for %s next to the policy file", DefaultLedgerPath)
	}
	p.Ledger.Path = resolve(baseDir, p.Ledger.Path)
}

// resolve joins a relative path onto baseDir.
func resolve(baseDir, path string) string {
	if baseDir == "" || path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(baseDir, path)
}

func (d *decoder) validateDefaults(p *Policy) {
	df := &p.Defaults
	d.checkDefaultAccountant(df)
	if !d.has("defaults.epsilon") {
		df.Epsilon = DefaultEpsilon
	}
	epsOK := d.checkEpsilon("defaults.epsilon", df.Epsilon)
	if !d.has("defaults.delta") {
		df.Delta = DefaultDelta
	}
	d.checkDelta("defaults.delta", df.Delta)
	if !d.has("defaults.max_epsilon_per_query") {
		df.MaxEpsilonPerQuery = math.Max(1, df.Epsilon)
	} else if d.checkEpsilon("defaults.max_epsilon_per_query", df.MaxEpsilonPerQuery) && epsOK &&
		df.MaxEpsilonPerQuery < df.Epsilon {
		d.errorf("defaults.max_epsilon_per_query", "%s is less than defaults.epsilon (%s); expected max_epsilon_per_query ≥ epsilon",
			formatFloat(df.MaxEpsilonPerQuery), formatFloat(df.Epsilon))
	}
	if !d.has("defaults.max_groups_per_unit") {
		df.MaxGroupsPerUnit = DefaultMaxGroupsPerUnit
	}
	d.checkContribution("defaults.max_groups_per_unit", df.MaxGroupsPerUnit)
	if !d.has("defaults.max_rows_per_unit") {
		df.MaxRowsPerUnit = DefaultMaxRowsPerUnit
	}
	if df.MaxRowsPerUnit != RowsAuto {
		d.checkContribution("defaults.max_rows_per_unit", df.MaxRowsPerUnit)
	}
	if !d.has("defaults.neighbouring") {
		df.Neighbouring = DefaultNeighbouring
	}
	switch df.Neighbouring {
	case AddRemove, Replace:
	default:
		d.errorf("defaults.neighbouring", "unknown neighbouring definition %q%s; expected %s or %s", df.Neighbouring,
			caseHint(string(df.Neighbouring), []string{string(AddRemove), string(Replace)}), AddRemove, Replace)
	}
	if df.Mechanism == "" {
		df.Mechanism = MechanismLaplace
	}
	switch df.Mechanism {
	case MechanismLaplace, MechanismGaussian, MechanismAuto:
	default:
		d.errorf("defaults.mechanism", "unknown mechanism %q%s; expected %s, %s or %s", df.Mechanism,
			caseHint(string(df.Mechanism), []string{string(MechanismLaplace), string(MechanismGaussian), string(MechanismAuto)}),
			MechanismLaplace, MechanismGaussian, MechanismAuto)
	}
	if df.Mechanism == MechanismGaussian && df.Delta <= 0 {
		d.errorf("defaults.mechanism", "gaussian needs defaults.delta > 0 (the Gaussian mechanism is (ε, δ)-DP)")
	}
	if !d.has("defaults.min_max_quantiles") {
		df.MinMaxQuantiles = Bounds{Lo: 0, Hi: 1}
	} else if q := df.MinMaxQuantiles; !(q.Lo >= 0 && q.Lo <= 0.5 && q.Hi >= 0.5 && q.Hi <= 1) {
		d.errorf("defaults.min_max_quantiles", "expected [min level, max level] with 0 ≤ min level ≤ 0.5 ≤ max level ≤ 1, such as [0.01, 0.99]; got [%v, %v]", q.Lo, q.Hi)
	}
}

func (d *decoder) validateCache(p *Policy) {
	c := &p.Cache
	if !d.has("cache.size") {
		c.Size = DefaultCacheSize
	} else if c.Size < 0 || c.Size > MaxCacheSize {
		d.errorf("cache.size", "must be a whole number from 0 (cache off) to %d, got %d", MaxCacheSize, c.Size)
	}
	if !d.has("cache.ttl") {
		c.TTL = DefaultCacheTTL
	} else if c.TTL <= 0 || c.TTL > MaxCacheTTL {
		d.errorf("cache.ttl", "must be a duration greater than 0 and at most %s, got %s; to turn the cache off, set cache.size to 0",
			formatDuration(MaxCacheTTL), formatDuration(c.TTL))
	}
}

// formatDuration prints d as written in a policy ("1h", "90s", "168h").
func formatDuration(d time.Duration) string {
	s := d.String()
	for _, unit := range []string{"h", "m"} {
		s = strings.Replace(s, unit+"0m0s", unit, 1)
	}
	return strings.Replace(s, "m0s", "m", 1)
}

// checkEpsilon reports whether eps is finite and > 0, recording an error
// if not.
func (d *decoder) checkEpsilon(path string, eps float64) bool {
	if eps > 0 && !math.IsInf(eps, 0) {
		return true
	}
	d.errorf(path, "must be a finite number greater than 0, got %s", formatFloat(eps))
	return false
}

func (d *decoder) checkDelta(path string, delta float64) {
	if !(delta >= 0 && delta < 1) {
		d.errorf(path, "must be at least 0 and less than 1, got %s", formatFloat(delta))
	}
}

func (d *decoder) checkContribution(path string, n int) {
	if n < 1 || n > MaxContribution {
		d.errorf(path, "must be a whole number from 1 to %d, got %d", MaxContribution, n)
	}
}

func (d *decoder) validateVerifiers(path string, v *Verifiers) {
	fields := [3]struct{ key, value string }{
		{"scram_sha_256", v.SCRAMSHA256},
		{"mysql_native_password", v.MySQLNativePassword},
		{"caching_sha2_password", v.CachingSHA2Password},
	}
	set := false
	for _, f := range fields {
		fp := path + "." + f.key
		if d.has(fp) && f.value == "" {
			d.errorf(fp, "must not be empty; expected the verifier printed by `dpproxy passwd`, or leave the key out")
		}
		set = set || f.value != ""
	}
	if !set {
		if !d.has(path) {
			d.errorf(path, "required; expected at least one of %s, as printed by `dpproxy passwd`", strings.Join(passwordKeys, ", "))
		} else if d.ok(path) {
			d.errorf(path, "has no verifier; expected at least one of %s, as printed by `dpproxy passwd`", strings.Join(passwordKeys, ", "))
		}
		return
	}
	for i, err := range v.parseEach() {
		if err != nil {
			d.errorf(path+"."+fields[i].key, "%s", err.Error())
		}
	}
}

func (d *decoder) validateTables(p *Policy) {
	seen := map[string]string{} // lower-case name → path of first declaration
	// declare checks a table's name and schema and that the name is not
	// taken. namePath is where the name was written: path+".name", or path
	// itself for a public table written as a string.
	declare := func(path, namePath, schema, name string) {
		switch {
		case name == "":
			d.errorf(namePath, "required; expected the table's name")
			return
		case strings.Contains(name, "."):
			s, n, _ := strings.Cut(name, ".")
			d.errorf(namePath, "%q contains '.'; write the schema separately, as schema: %s and name: %s", name, s, n)
			return
		}
		if strings.Contains(schema, ".") {
			d.errorf(path+".schema", "%q contains '.'; expected a single schema name", schema)
		} else if equalFold(schema, ReservedSchema) {
			d.errorf(path+".schema", "schema %q is reserved for dpproxy's own views (dpproxy.budget, dpproxy.queries); expected another schema", schema)
		}
		key := strings.ToLower(name)
		if first, dup := seen[key]; dup {
			d.errorf(namePath, "table %q is already declared at line %d (%s); table names must be unique across protected_tables and public_tables, even in different schemas, so that unqualified references are unambiguous",
				name, d.line(first), tablePath(first))
			return
		}
		seen[key] = namePath
	}
	for i := range p.ProtectedTables {
		t := &p.ProtectedTables[i]
		path := indexPath("protected_tables", i)
		if !d.ok(path) {
			continue
		}
		declare(path, path+".name", t.Schema, t.Name)
		d.validateProtected(p, path, t)
	}
	for i := range p.PublicTables {
		t := &p.PublicTables[i]
		path := indexPath("public_tables", i)
		if !d.ok(path) {
			continue
		}
		namePath := path + ".name"
		if n := d.pos[path]; n != nil && n.Kind == yaml.ScalarNode && !isNull(n) {
			namePath = path
		}
		declare(path, namePath, t.Schema, t.Name)
		seen := map[string]bool{}
		for j, c := range t.Columns {
			cp := indexPath(path+".columns", j)
			switch {
			case c.Name == "":
				d.errorf(cp+".name", "required; expected the column's name")
			case seen[strings.ToLower(c.Name)]:
				d.errorf(cp+".name", "column %q is listed twice", c.Name)
			}
			seen[strings.ToLower(c.Name)] = true
			if !contains(columnTypes, string(c.Type)) {
				d.errorf(cp+".type", "unknown column type %q; expected one of %s", c.Type, strings.Join(columnTypes, ", "))
			}
		}
		keySeen := map[string]bool{}
		for j, name := range t.GroupKeys {
			kp := indexPath(path+".group_keys", j)
			switch {
			case name == "":
				d.errorf(kp, "expected a column name")
			case keySeen[strings.ToLower(name)]:
				d.errorf(kp, "column %q is listed twice", name)
			case len(t.Columns) > 0 && !seen[strings.ToLower(name)]:
				d.errorf(kp, "%q is not a column of %s; group_keys lists columns of the table", name, t.Name)
			}
			keySeen[strings.ToLower(name)] = true
		}
	}
	// A unit path must end, without a cycle, at a table with a privacy
	// unit column. A reference to another column than that table's unit
	// (a key) is a hop: the row belongs to the person the referenced row
	// belongs to (the key's uniqueness is checked against the database
	// when dpproxy starts).
	inCycle := map[*ProtectedTable]bool{}
	for i := range p.ProtectedTables {
		t := &p.ProtectedTables[i]
		up := indexPath("protected_tables", i) + ".privacy_unit"
		if t.UnitPath == nil || !d.ok(up) || inCycle[t] {
			continue
		}
		visited := map[*ProtectedTable]bool{t: true}
		for cur := t; cur.UnitPath != nil; {
			ref := cur.UnitPath
			next, _ := p.LookupTable(ref.Schema, ref.Table)
			switch {
			case next == nil:
				d.errorf(up, "%s references %s, which is not a protected table of the policy; expected the protected table that identifies the person", cur.Name, ref)
			case next.IsRowPrivacy():
				d.errorf(up, "%s references %s, whose rows are their own units; expected a table with a privacy unit column", cur.Name, ref)
			case visited[next]:
				d.errorf(up, "the privacy unit path of %s comes back to %s: a cycle; one table on the path must name its privacy unit column directly", t.Name, next.Name)
				for v := range visited {
					inCycle[v] = true // one error per cycle
				}
			default:
				visited[next] = true
				cur = next
				continue
			}
			break
		}
	}
	// A table's own budget, like an analyst's.
	for i := range p.ProtectedTables {
		t := &p.ProtectedTables[i]
		bp := indexPath("protected_tables", i) + ".budget"
		switch {
		case t.Budget == nil || !d.ok(bp):
		case !d.has(bp + ".epsilon"):
			d.errorf(bp+".epsilon", "required; expected the table's total epsilon over every analyst's queries, a finite number greater than 0")
		default:
			d.checkEpsilon(bp+".epsilon", t.Budget.Epsilon)
			d.checkDelta(bp+".delta", t.Budget.Delta)
			d.basicOnly(bp)
			d.checkWindow(bp, t.Budget)
		}
	}
	// A key list read from a table must come from a public one.
	for i := range p.ProtectedTables {
		for j, c := range p.ProtectedTables[i].Columns {
			kf := indexPath(indexPath("protected_tables", i)+".columns", j) + ".keys_from"
			if c.KeysFrom == nil || !d.ok(kf) {
				continue
			}
			if _, pub := p.LookupTable(c.KeysFrom.Schema, c.KeysFrom.Table); pub == nil {
				d.errorf(kf, "%s is not a public table of the policy; key lists may only come from public_tables", c.KeysFrom)
			}
		}
	}
}

// tablePath strips a trailing ".name" from a table's name path.
func tablePath(namePath string) string {
	return strings.TrimSuffix(namePath, ".name")
}

func (d *decoder) validateProtected(p *Policy, path string, t *ProtectedTable) {
	// Columns first, so that the privacy unit can be looked up.
	colSeen := map[string]string{} // lower-case name → path of first column
	for i := range t.Columns {
		c := &t.Columns[i]
		cp := indexPath(path+".columns", i)
		if !d.ok(cp) {
			continue
		}
		d.validateColumn(cp, c)
		if c.Name == "" {
			continue
		}
		key := strings.ToLower(c.Name)
		if first, dup := colSeen[key]; dup {
			d.errorf(cp+".name", "column %q is already defined at line %d (%s); column names must be unique (case-insensitively)",
				c.Name, d.line(first), parentPath(first))
			continue
		}
		colSeen[key] = cp + ".name"
	}

	up := path + ".privacy_unit"
	switch {
	case !d.ok(up):
	case t.PrivacyUnit == "":
		d.errorf(up, "required; expected %q (each row is a person) or the name of the column identifying the person, such as patient_id", RowPrivacyUnit)
	case t.PrivacyUnit == RowPrivacyUnit:
		for _, f := range []struct {
			key string
			v   *int
		}{{"max_groups_per_unit", &t.MaxGroupsPerUnit}, {"max_rows_per_unit", &t.MaxRowsPerUnit}, {"max_total_rows_per_unit", &t.MaxTotalRowsPerUnit}} {
			if d.has(path+"."+f.key) && *f.v != 1 {
				got := strconv.Itoa(*f.v)
				if *f.v == RowsAuto {
					got = "auto"
				}
				d.errorf(path+"."+f.key, "must be 1 (or left out) when privacy_unit is %q: each row is its own unit, so it contributes one row to one group; got %s", RowPrivacyUnit, got)
			}
			*f.v = 1
		}
		t.MaxTotalRowsPerUnit = 0
		return
	default:
		i := columnIndex(t, t.PrivacyUnit)
		if i < 0 {
			names := make([]string, len(t.Columns))
			for j, c := range t.Columns {
				names[j] = c.Name
			}
			list := "it lists no columns"
			if len(names) > 0 {
				list = "its columns are " + strings.Join(names, ", ")
			}
			d.errorf(up, "privacy unit %q is not a column of the table (%s); expected %q or one of the listed columns", t.PrivacyUnit, list, RowPrivacyUnit)
			break
		}
		c := &t.Columns[i]
		t.PrivacyUnit = c.Name
		cp := indexPath(path+".columns", i)
		if c.GroupBy {
			d.errorf(cp+".group_by", "the privacy unit column %q must not have group_by: grouping by it would release one group per person", c.Name)
		}
		if c.Bounds != nil {
			d.errorf(cp+".bounds", "the privacy unit column %q must not have bounds: it identifies people and is never aggregated", c.Name)
		}
	}

	df := p.Defaults
	for _, f := range []struct {
		key string
		v   *int
		def int
	}{
		{"max_groups_per_unit", &t.MaxGroupsPerUnit, df.MaxGroupsPerUnit},
		{"max_rows_per_unit", &t.MaxRowsPerUnit, df.MaxRowsPerUnit},
	} {
		fp := path + "." + f.key
		if !d.has(fp) {
			*f.v = f.def
			continue
		}
		if *f.v == RowsAuto && f.key == "max_rows_per_unit" {
			continue // chosen per query
		}
		d.checkContribution(fp, *f.v)
	}
	if tp := path + ".max_total_rows_per_unit"; d.has(tp) {
		d.checkContribution(tp, t.MaxTotalRowsPerUnit)
	}
}

// columnIndex returns the index of the column named name
// (case-insensitively), or -1.
func columnIndex(t *ProtectedTable, name string) int {
	for i := range t.Columns {
		if equalFold(t.Columns[i].Name, name) {
			return i
		}
	}
	return -1
}

func (d *decoder) validateColumn(path string, c *Column) {
	if c.Name == "" {
		d.errorf(path+".name", "required; expected the column's name")
	}
	tp := path + ".type"
	typeOK := false
	switch {
	case c.Type == "":
		d.errorf(tp, "required; expected one of %s", strings.Join(columnTypes, ", "))
	case !contains(columnTypes, string(c.Type)):
		hint := ""
		if alias, ok := typeAliases[strings.ToLower(string(c.Type))]; ok {
			hint = fmt.Sprintf(" (for %s, write %s)", c.Type, alias)
		} else {
			hint = caseHint(string(c.Type), columnTypes)
		}
		d.errorf(tp, "unknown column type %q%s; expected one of %s", c.Type, hint, strings.Join(columnTypes, ", "))
	default:
		typeOK = true
	}
	if c.Bounds != nil && typeOK && !c.Type.Numeric() {
		d.errorf(path+".bounds", "bounds are only allowed on numeric columns (int, bigint, float, numeric); this column is %s", c.Type)
	}
	if c.KeysFrom != nil && d.ok(path+".keys_from") {
		switch {
		case !c.GroupBy:
			d.errorf(path+".keys_from", "keys_from is only allowed together with group_by: true")
		case c.Keys != nil:
			d.errorf(path+".keys_from", "keys and keys_from are alternatives; keep one")
		}
	}
	kp := path + ".keys"
	if c.Keys != nil && d.ok(kp) {
		switch {
		case !c.GroupBy:
			d.errorf(kp, "keys are only allowed together with group_by: true")
		case len(c.Keys) == 0:
			d.errorf(kp, "must not be an empty list; expected the public group keys, or leave keys out to use DP partition selection")
		default:
			first := map[string]int{}
			for i, k := range c.Keys {
				if j, dup := first[k]; dup {
					d.errorf(indexPath(kp, i), "key %q is listed twice (also keys[%d]); keys must be unique", k, j)
					continue
				}
				first[k] = i
			}
		}
	}
}

// caseHint returns a hint when v is one of options but for case.
func caseHint(v string, options []string) string {
	if lower := strings.ToLower(v); lower != v && contains(options, lower) {
		return fmt.Sprintf(" (write it in lower case: %s)", lower)
	}
	return ""
}

// isLowerIdent reports whether s is a lower-case SQL identifier that needs
// no quoting: a letter or _, then letters, digits or _.
func isLowerIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != "" && len(s) <= 63
}
