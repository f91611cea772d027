package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load reads, decodes and validates the policy file at path, fills in
// defaults and resolves relative ledger and sqlite paths against the file's
// directory. Problems with the file's content (including YAML syntax
// errors) are returned together as a *ValidationError; a file that cannot
// be read gives the underlying error.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: reading policy: %w", err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config: resolving policy directory: %w", err)
	}
	p, err := parse(data, path, base)
	if err != nil {
		return nil, err
	}
	p.Path = path
	return p, nil
}

// Parse decodes and validates a policy held in memory. name labels error
// messages (typically the file name). Relative ledger and sqlite paths are
// left as written, that is, relative to the working directory; use Load to
// resolve them against the policy file. Errors are as for Load.
func Parse(data []byte, name string) (*Policy, error) {
	return parse(data, name, "")
}

func parse(data []byte, name, baseDir string) (*Policy, error) {
	if name == "" {
		name = "policy"
	}
	d := &decoder{
		file: name,
		pos:  map[string]*yaml.Node{},
		bad:  map[string]bool{},
	}
	root := d.document(data)
	p := &Policy{}
	if root != nil {
		d.policy(root, p)
		d.validate(p, baseDir)
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return p, nil
}

// decoder walks a yaml.Node tree into a Policy, remembering where each
// field was written so that validation can point at it.
type decoder struct {
	file string
	errs []FieldError
	// pos maps a field path ("defaults.epsilon", "analysts[0]") to the
	// value node written for it; "" is the document's root.
	pos map[string]*yaml.Node
	// bad holds the paths that failed to decode. Validation stays quiet
	// about them and everything beneath them, to avoid follow-on errors.
	bad map[string]bool
}

// yamlLine matches yaml.v3's syntax errors, "yaml: line N: problem".
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data and returns the root node, or nil after recording
// why there is none.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) || err == nil && len(doc.Content) == 0 {
		d.errs = append(d.errs, FieldError{
			File:    d.file,
			Message: "the policy file is empty; expected a mapping with keys " + strings.Join(topKeys, ", "),
		})
		return nil
	}
	if err != nil {
		d.syntaxError(err, data)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errs = append(d.errs, FieldError{
			File: d.file, Line: extra.Line, Column: extra.Column,
			Message: "a second YAML document starts here; expected the policy to be a single document (remove the '---')",
		})
		return nil
	case !errors.Is(err, io.EOF):
		d.syntaxError(err, data)
		return nil
	}
	root := doc.Content[0]
	d.pos[""] = root
	return root
}

// yamlParserProblems are the problems yaml.v3's parser (as opposed to its
// scanner) reports. For these it prints a 0-based line number, and none at
// all for the first line.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// yamlAnchor matches yaml.v3's error for an alias to an undefined anchor.
var yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// syntaxError records a YAML syntax error, with a 1-based line number
// where one can be had.
func (d *decoder) syntaxError(err error, data []byte) {
	fe := FieldError{File: d.file}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if yamlParserProblems[msg] {
			fe.Line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if yamlParserProblems[msg] {
			fe.Line = 1
		}
		if m := yamlAnchor.FindStringSubmatch(err.Error()); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				fe.Line = 1 + bytes.Count(data[:i], []byte("\n"))
				fe.Column = 1 + i - (bytes.LastIndexByte(data[:i], '\n') + 1)
			}
		}
	}
	fe.Message = "invalid YAML: " + msg
	d.errs = append(d.errs, fe)
}

// result returns the collected errors as a *ValidationError, or nil.
func (d *decoder) result() error {
	if len(d.errs) == 0 {
		return nil
	}
	errs := d.errs
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Line != errs[j].Line {
			return errs[i].Line < errs[j].Line
		}
		return errs[i].Column < errs[j].Column
	})
	ve := &ValidationError{Errors: errs}
	if len(errs) > MaxErrors {
		ve.Errors = errs[:MaxErrors:MaxErrors]
		ve.Omitted = len(errs) - MaxErrors
	}
	return ve
}

// failAt records an error located at node n for the field at path, and
// marks the field as bad.
func (d *decoder) failAt(n *yaml.Node, path, format string, args ...any) {
	d.bad[path] = true
	d.errs = append(d.errs, FieldError{
		File: d.file, Line: n.Line, Column: n.Column,
		Field: path, Message: fmt.Sprintf(format, args...),
	})
}

// errorf records an error for the field at path, located where the field
// was written or, when it was not, where its nearest written parent was.
// It records nothing when the field or a parent failed to decode.
func (d *decoder) errorf(path, format string, args ...any) {
	var n *yaml.Node
	for p := path; ; p = parentPath(p) {
		if d.bad[p] {
			return
		}
		if n == nil {
			n = d.pos[p]
		}
		if p == "" {
			break
		}
	}
	fe := FieldError{File: d.file, Field: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		fe.Line, fe.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, fe)
}

// has reports whether the file sets the field at path to something other
// than null. Fields that failed to decode count as set, so that defaults
// do not paper over them.
func (d *decoder) has(path string) bool {
	if d.bad[path] {
		return true
	}
	n := d.pos[path]
	return n != nil && !isNull(n)
}

// ok reports whether the field at path and its parents decoded cleanly.
func (d *decoder) ok(path string) bool {
	for p := path; ; p = parentPath(p) {
		if d.bad[p] {
			return false
		}
		if p == "" {
			return true
		}
	}
}

// line returns the line the field at path was written on, or 0.
func (d *decoder) line(path string) int {
	if n := d.pos[path]; n != nil {
		return n.Line
	}
	return 0
}

// parentPath strips the last ".key" or "[i]" from path.
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolveAlias(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for "got ..." in messages.
func describe(n *yaml.Node) string {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing (null)"
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return n.Value
		}
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return "the string " + strconv.Quote(v)
	}
	return "an unsupported YAML node"
}

// mapping walks the mapping n at path, rejecting keys not in keys, and
// calls fn for each known key with its value and path. A null n is an
// empty mapping. It returns false when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path string, keys []string, fn func(key string, v *yaml.Node, path string)) bool {
	n = resolveAlias(n)
	if isNull(n) {
		return true
	}
	if n.Kind != yaml.MappingNode {
		d.failAt(n, path, "expected a mapping with keys %s; got %s", strings.Join(keys, ", "), describe(n))
		return false
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.failAt(k, path, "keys must be plain words; got %s as a key", describe(k))
			continue
		}
		key := k.Value
		kp := joinPath(path, key)
		if key == "<<" {
			d.failAt(k, path, "merge keys (<<) are not supported; write the fields out")
			continue
		}
		if !contains(keys, key) {
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest(key, keys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.failAt(k, kp, "%s; valid keys here are %s", msg, strings.Join(keys, ", "))
			continue
		}
		if first, dup := seen[key]; dup {
			d.failAt(k, kp, "key %q is repeated (first set at line %d); each key may appear once", key, first.Line)
			continue
		}
		seen[key] = k
		v = resolveAlias(v)
		d.pos[kp] = v
		fn(key, v, kp)
	}
	return true
}

// sequence walks the list n at path, calling fn for each element. A null
// n is an empty list.
func (d *decoder) sequence(n *yaml.Node, path, what string, fn func(i int, v *yaml.Node, path string)) {
	n = resolveAlias(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.failAt(n, path, "expected a list of %s; got %s", what, describe(n))
		return
	}
	for i, e := range n.Content {
		e = resolveAlias(e)
		ep := indexPath(path, i)
		d.pos[ep] = e
		fn(i, e, ep)
	}
}

// str decodes a scalar as a string. Null leaves dst unchanged.
func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode {
		d.failAt(n, path, "expected a string; got %s", describe(n))
		return
	}
	*dst = n.Value
}

// float decodes a number. Null leaves dst unchanged.
func (d *decoder) float(n *yaml.Node, path string, dst *float64) {
	if isNull(n) {
		return
	}
	f, err := number(n)
	if err != nil {
		d.failAt(n, path, "expected a number; got %s", describe(n))
		return
	}
	*dst = f
}

// int decodes a whole number. Null leaves dst unchanged.
func (d *decoder) int(n *yaml.Node, path string, dst *int) {
	if isNull(n) {
		return
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		d.failAt(n, path, "expected a whole number; got %s", describe(n))
		return
	}
	*dst = i
}

// rowsPerUnit decodes max_rows_per_unit: a whole number, or "auto"
// (RowsAuto).
func (d *decoder) rowsPerUnit(n *yaml.Node, path string, dst *int) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == "auto" {
		*dst = RowsAuto
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		d.failAt(n, path, "expected a whole number or auto; got %s", describe(n))
		return
	}
	d.int(n, path, dst)
}

// MaxProcessors bounds listen.processors (the Go runtime's own limit).
const MaxProcessors = 1024

// processors decodes listen.processors: a whole number from 1 to
// MaxProcessors, or "auto" (0). Null leaves dst unchanged.
func (d *decoder) processors(n *yaml.Node, path string, dst *int) {
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == "auto":
		*dst = 0
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		d.failAt(n, path, "expected a whole number or auto; got %s", describe(n))
	default:
		var i int
		if d.int(n, path, &i); (i < 1 || i > MaxProcessors) && n.ShortTag() == "!!int" {
			d.failAt(n, path, "must be a whole number from 1 to %d, or auto; got %d", MaxProcessors, i)
			return
		}
		*dst = i
	}
}

// duration decodes a Go duration string ("1h", "30m", "1h30m", "90s").
// Bare numbers are refused: their unit would be a guess. Null leaves dst
// unchanged.
func (d *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.failAt(n, path, "expected a duration with a unit, such as 1h, 30m or 90s; got %s", describe(n))
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.failAt(n, path, "expected a duration with a unit, such as 1h, 30m or 90s; got %s", describe(n))
		return
	}
	*dst = v
}

// bool decodes true or false. Null leaves dst unchanged.
func (d *decoder) bool(n *yaml.Node, path string, dst *bool) {
	if isNull(n) {
		return
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.failAt(n, path, "expected true or false; got %s", describe(n))
		return
	}
	*dst = b
}

var (
	topKeys    = []string{"listen", "backend", "ledger", "defaults", "cache", "admin", "audit", "analysts", "teams", "protected_tables", "public_tables"}
	listenKeys = []string{"postgres", "mysql", "tls", "tls_cert", "tls_key", "statement_timeout", "idle_timeout", "write_timeout",
		"max_message_size", "max_result_rows", "max_result_bytes", "max_connections", "max_connections_per_analyst", "max_handshakes",
		"login_backoff", "login_backoff_max", "direct_io", "processors"}
	backendKeys   = []string{"kind", "dsn", "catalog_dsn", "path", "max_conns", "pipeline_lanes"}
	ledgerKeys    = []string{"path", "postgres", "schema", "hold_lease"}
	cacheKeys     = []string{"size", "ttl"}
	defaultsKeys  = []string{"epsilon", "delta", "max_epsilon_per_query", "max_groups_per_unit", "max_rows_per_unit", "neighbouring", "mechanism", "min_max_quantiles", "accountant", "delta_prime"}
	analystKeys   = []string{"name", "password", "budget"}
	teamKeys      = []string{"name", "analysts", "budget"}
	passwordKeys  = []string{"scram_sha_256", "mysql_native_password", "caching_sha2_password"}
	budgetKeys    = []string{"epsilon", "delta", "accountant", "delta_prime", "window", "lifetime"}
	protectedKeys = []string{"schema", "name", "privacy_unit", "max_groups_per_unit", "max_rows_per_unit", "max_total_rows_per_unit", "budget", "columns"}
	columnKeys    = []string{"name", "type", "bounds", "group_by", "keys", "keys_from"}
	publicKeys    = []string{"schema", "name", "columns", "group_keys"}
)

func (d *decoder) policy(root *yaml.Node, p *Policy) {
	d.mapping(root, "", topKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "listen":
			d.mapping(v, path, listenKeys, func(key string, v *yaml.Node, path string) {
				switch key {
				case "postgres":
					d.str(v, path, &p.Listen.Postgres)
				case "tls_cert":
					d.str(v, path, &p.Listen.TLSCert)
				case "tls_key":
					d.str(v, path, &p.Listen.TLSKey)
				case "statement_timeout":
					d.duration(v, path, &p.Listen.StatementTimeout)
				case "idle_timeout":
					d.duration(v, path, &p.Listen.IdleTimeout)
				case "write_timeout":
					d.duration(v, path, &p.Listen.WriteTimeout)
				case "mysql":
					d.str(v, path, &p.Listen.MySQL)
				case "tls":
					d.str(v, path, (*string)(&p.Listen.TLS))
				case "max_message_size":
					d.int(v, path, &p.Listen.MaxMessageSize)
				case "max_result_rows":
					d.int(v, path, &p.Listen.MaxResultRows)
				case "max_result_bytes":
					var n int
					d.int(v, path, &n)
					p.Listen.MaxResultBytes = int64(n)
				case "max_connections":
					d.int(v, path, &p.Listen.MaxConnections)
				case "max_connections_per_analyst":
					d.int(v, path, &p.Listen.MaxConnectionsPerAnalyst)
				case "max_handshakes":
					d.int(v, path, &p.Listen.MaxHandshakes)
				case "login_backoff":
					d.duration(v, path, &p.Listen.LoginBackoff)
				case "login_backoff_max":
					d.duration(v, path, &p.Listen.LoginBackoffMax)
				case "direct_io":
					if !isNull(v) {
						on := true
						d.bool(v, path, &on)
						p.Listen.DirectIO = &on
					}
				case "processors":
					d.processors(v, path, &p.Listen.Processors)
				}
			})
		case "backend":
			d.mapping(v, path, backendKeys, func(key string, v *yaml.Node, path string) {
				switch key {
				case "kind":
					d.str(v, path, (*string)(&p.Backend.Kind))
				case "dsn":
					d.str(v, path, &p.Backend.DSN)
				case "catalog_dsn":
					d.failAt(v, path, "was retired: dpproxy answers catalog queries (psql's \\d, JDBC metadata, information_schema) itself, from the policy, so no catalog role is needed; remove this key")
				case "path":
					d.str(v, path, &p.Backend.Path)
				case "max_conns":
					d.int(v, path, &p.Backend.MaxConns)
				case "pipeline_lanes":
					lanes := -1
					d.int(v, path, &lanes)
					if lanes != -1 || !isNull(v) {
						p.Backend.PipelineLanes = &lanes
					}
				}
			})
		case "ledger":
			d.mapping(v, path, ledgerKeys, func(key string, v *yaml.Node, path string) {
				switch key {
				case "path":
					d.str(v, path, &p.Ledger.Path)
				case "postgres":
					d.str(v, path, &p.Ledger.Postgres)
				case "schema":
					d.str(v, path, &p.Ledger.Schema)
				case "hold_lease":
					d.duration(v, path, &p.Ledger.HoldLease)
				}
			})
		case "defaults":
			d.defaults(v, path, &p.Defaults)
		case "admin":
			d.admin(v, path, &p.Admin)
		case "audit":
			d.audit(v, path, &p.Audit)
		case "cache":
			d.mapping(v, path, cacheKeys, func(key string, v *yaml.Node, path string) {
				switch key {
				case "size":
					d.int(v, path, &p.Cache.Size)
				case "ttl":
					d.duration(v, path, &p.Cache.TTL)
				}
			})
		case "analysts":
			d.sequence(v, path, "analysts", func(i int, v *yaml.Node, path string) {
				p.Analysts = append(p.Analysts, Analyst{})
				d.analyst(v, path, &p.Analysts[len(p.Analysts)-1])
			})
		case "teams":
			d.sequence(v, path, "teams", func(i int, v *yaml.Node, path string) {
				p.Teams = append(p.Teams, Team{})
				d.team(v, path, &p.Teams[len(p.Teams)-1])
			})
		case "protected_tables":
			d.sequence(v, path, "protected tables", func(i int, v *yaml.Node, path string) {
				p.ProtectedTables = append(p.ProtectedTables, ProtectedTable{})
				d.protectedTable(v, path, &p.ProtectedTables[len(p.ProtectedTables)-1])
			})
		case "public_tables":
			d.sequence(v, path, `table names ("clinics", "public.clinics") or {schema, name} mappings`, func(i int, v *yaml.Node, path string) {
				p.PublicTables = append(p.PublicTables, PublicTable{})
				d.publicTable(v, path, &p.PublicTables[len(p.PublicTables)-1])
			})
		}
	})
}

func (d *decoder) defaults(n *yaml.Node, path string, df *Defaults) {
	d.mapping(n, path, defaultsKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "epsilon":
			d.float(v, path, &df.Epsilon)
		case "delta":
			d.float(v, path, &df.Delta)
		case "max_epsilon_per_query":
			d.float(v, path, &df.MaxEpsilonPerQuery)
		case "max_groups_per_unit":
			d.int(v, path, &df.MaxGroupsPerUnit)
		case "max_rows_per_unit":
			d.rowsPerUnit(v, path, &df.MaxRowsPerUnit)
		case "neighbouring":
			d.str(v, path, (*string)(&df.Neighbouring))
		case "mechanism":
			d.str(v, path, (*string)(&df.Mechanism))
		case "accountant":
			d.str(v, path, &df.Accountant)
		case "delta_prime":
			d.float(v, path, &df.DeltaPrime)
		case "min_max_quantiles":
			if isNull(v) {
				return
			}
			if err := df.MinMaxQuantiles.UnmarshalYAML(v); err != nil {
				d.failAt(v, path, "%s", err.Error())
			}
		}
	})
}

func (d *decoder) team(n *yaml.Node, path string, t *Team) {
	d.mapping(n, path, teamKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			d.str(v, path, &t.Name)
		case "analysts":
			d.sequence(v, path, "analyst names", func(i int, v *yaml.Node, path string) {
				var name string
				d.str(v, path, &name)
				t.Analysts = append(t.Analysts, name)
			})
		case "budget":
			d.budget(v, path, &t.Budget)
		}
	})
}

func (d *decoder) budget(n *yaml.Node, path string, b *Budget) {
	d.mapping(n, path, budgetKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "epsilon":
			d.float(v, path, &b.Epsilon)
		case "delta":
			d.float(v, path, &b.Delta)
		case "accountant":
			d.str(v, path, &b.Accountant)
		case "delta_prime":
			d.float(v, path, &b.DeltaPrime)
		case "window":
			d.str(v, path, &b.Window)
		case "lifetime":
			b.Lifetime = &Budget{}
			d.budget(v, path, b.Lifetime)
		}
	})
}

func (d *decoder) analyst(n *yaml.Node, path string, a *Analyst) {
	d.mapping(n, path, analystKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			d.str(v, path, &a.Name)
		case "password":
			if v.Kind == yaml.ScalarNode && !isNull(v) {
				// Never echo the value: it is likely a real password.
				d.failAt(v, path, "looks like a plaintext password; the policy stores verifiers, never passwords: "+
					"run `dpproxy passwd` and paste the mapping it prints (scram_sha_256, mysql_native_password, caching_sha2_password)")
				return
			}
			d.mapping(v, path, passwordKeys, func(key string, v *yaml.Node, path string) {
				switch key {
				case "scram_sha_256":
					d.str(v, path, &a.Password.SCRAMSHA256)
				case "mysql_native_password":
					d.str(v, path, &a.Password.MySQLNativePassword)
				case "caching_sha2_password":
					d.str(v, path, &a.Password.CachingSHA2Password)
				}
			})
		case "budget":
			d.budget(v, path, &a.Budget)
		}
	})
}

func (d *decoder) column(n *yaml.Node, path string, c *Column) {
	d.mapping(n, path, columnKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			d.str(v, path, &c.Name)
		case "type":
			d.str(v, path, (*string)(&c.Type))
		case "bounds":
			if isNull(v) {
				return
			}
			var b Bounds
			if err := b.UnmarshalYAML(v); err != nil {
				d.failAt(v, path, "%s", err.Error())
				return
			}
			c.Bounds = &b
		case "group_by":
			d.bool(v, path, &c.GroupBy)
		case "keys_from":
			if isNull(v) {
				return
			}
			src, ok := parseKeySource(v.Value)
			if v.Kind != yaml.ScalarNode || !ok {
				d.failAt(v, path, "expected a public table's column as table(column) or schema.table(column), such as public.diagnoses(code); got %s", describe(v))
				return
			}
			c.KeysFrom = src
		case "keys":
			if isNull(v) {
				// "keys:" with nothing after it is a present, empty list:
				// validation rejects it rather than silently dropping it.
				c.Keys = []string{}
				return
			}
			c.Keys = []string{}
			d.sequence(v, path, "group keys", func(i int, v *yaml.Node, path string) {
				if v.Kind != yaml.ScalarNode || isNull(v) {
					d.failAt(v, path, "expected a group key as it prints in text form; got %s", describe(v))
					return
				}
				c.Keys = append(c.Keys, v.Value)
			})
		}
	})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a plausible typo.
func suggest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if dist := editDistance(strings.ToLower(s), c); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
