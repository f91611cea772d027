package session

import (
	"context"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqlerr"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
)

// MySQL clients ask their server many questions before and between real
// queries: the mysql CLI `select @@version_comment limit 1`, Connector/J a
// SELECT of about 18 @@variables and SET NAMES, BI tools SHOW DATABASES,
// SHOW TABLES, SHOW COLUMNS and SHOW VARIABLES. A session of the MySQL front
// end answers these itself, from the policy and its own state: no backend,
// no protected data, no budget.
//
// Session variables (SET [SESSION] x = v, SET @@x = v, SET NAMES, SET
// CHARACTER SET, user variables SET @x = v) are kept per session in
// Session.gucs (which the MySQL front end does not otherwise use; user
// variables under "@name"). They change nothing in how dpproxy runs queries:
// sessions are read-only, autocommit only changes the status flags, and a
// sql_mode with NO_BACKSLASH_ESCAPES is refused because dpproxy reads MySQL
// strings with backslash escapes.
//
// The database: MySQL clients name one when connecting and with USE. The
// name dpproxy accepts is the backend's database — the DSN's database for
// postgres and mysql backends, the file name without extension for sqlite
// ("demo" for the demo) — and information_schema. When it cannot be
// derived from the DSN, any name is accepted.

// MySQLServerVersion is the MySQL version dpproxy presents itself as to
// MySQL clients (the handshake and VERSION()).
const MySQLServerVersion = "8.0.36-dpproxy"

// mysqlVersionComment is @@version_comment, which the mysql CLI prints.
const mysqlVersionComment = "dpproxy, a differential-privacy proxy"

// mysqlSQLMode is the sql_mode dpproxy's parser follows.
const mysqlSQLMode = "ANSI_QUOTES,ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// mysqlNull is how a variable set to NULL is stored.
const mysqlNull = "\x00NULL"

// mysqlVariables are the session variables' defaults. Names are lower case.
var mysqlVariables = map[string]string{
	"auto_increment_increment": "1",
	"auto_increment_offset":    "1",
	"autocommit":               "1",
	"character_set_client":     "utf8mb4",
	"character_set_connection": "utf8mb4",
	"character_set_database":   "utf8mb4",
	"character_set_results":    "utf8mb4",
	"character_set_server":     "utf8mb4",
	"character_set_system":     "utf8mb3",
	"collation_connection":     "utf8mb4_general_ci",
	"collation_database":       "utf8mb4_general_ci",
	"collation_server":         "utf8mb4_general_ci",
	"default_storage_engine":   "InnoDB",
	"foreign_key_checks":       "1",
	"have_ssl":                 "YES",
	"init_connect":             "",
	"interactive_timeout":      "28800",
	"license":                  "Apache-2.0",
	"lower_case_file_system":   "OFF",
	"lower_case_table_names":   "0",
	"max_allowed_packet":       "16777216",
	"max_connections":          "151",
	"max_execution_time":       "0",
	"net_buffer_length":        "16384",
	"net_read_timeout":         "30",
	"net_write_timeout":        "60",
	"performance_schema":       "0",
	"query_cache_size":         "0",
	"query_cache_type":         "OFF",
	"sql_auto_is_null":         "0",
	"sql_mode":                 mysqlSQLMode,
	"sql_safe_updates":         "0",
	"sql_select_limit":         "18446744073709551615",
	"system_time_zone":         "UTC",
	"time_zone":                "+00:00",
	"transaction_isolation":    "REPEATABLE-READ",
	"tx_isolation":             "REPEATABLE-READ",
	"transaction_read_only":    "1",
	"tx_read_only":             "1",
	"unique_checks":            "1",
	"version":                  MySQLServerVersion,
	"version_comment":          mysqlVersionComment,
	"version_compile_machine":  "x86_64",
	"version_compile_os":       "Linux",
	"wait_timeout":             "28800",
}

// mysqlIntVariables are reported as BIGINT, the others as text.
var mysqlIntVariables = map[string]bool{
	"auto_increment_increment": true, "auto_increment_offset": true, "autocommit": true,
	"foreign_key_checks": true, "interactive_timeout": true, "lower_case_table_names": true,
	"max_allowed_packet": true, "max_connections": true, "max_execution_time": true,
	"net_buffer_length": true, "net_read_timeout": true, "net_write_timeout": true,
	"performance_schema": true, "query_cache_size": true, "sql_auto_is_null": true,
	"sql_safe_updates": true, "transaction_read_only": true, "tx_read_only": true,
	"unique_checks": true, "wait_timeout": true,
}

// mysqlFixedVariables cannot be changed: a SET to another value is
// accepted and has no effect (sessions are read-only whatever the client
// asks), so that drivers that set them do not fail.
var mysqlFixedVariables = map[string]bool{
	"transaction_read_only": true, "tx_read_only": true, "version": true, "version_comment": true,
	"lower_case_table_names": true, "max_allowed_packet": true,
}

// Autocommit reports the session's autocommit setting (MySQL front end).
func (s *Session) Autocommit() bool {
	v, _ := s.mysqlVariable("autocommit")
	return v != "0"
}

// mysqlVariable reads a session variable: the client's value or the default.
func (s *Session) mysqlVariable(name string) (string, bool) {
	name = strings.ToLower(name)
	if name == "database" {
		return s.database, true
	}
	if v, ok := s.gucs[name]; ok && !mysqlFixedVariables[name] {
		return v, true
	}
	return s.mysqlGlobal(name)
}

// mysqlGlobal reads a variable's global value: the limits the policy
// configures where it sets them, otherwise the fixed table.
func (s *Session) mysqlGlobal(name string) (string, bool) {
	l := s.engine.Policy().Listen
	switch {
	case name == "max_allowed_packet" && l.MaxMessageSize > 0:
		return strconv.Itoa(l.MaxMessageSize), true
	case name == "max_connections" && l.MaxConnections > 0:
		return strconv.Itoa(l.MaxConnections), true
	}
	v, ok := mysqlVariables[name]
	return v, ok
}

// mysqlVariableValue is a variable as a result value of its type.
func mysqlVariableValue(name, v string) localValue {
	if v == mysqlNull {
		return localValue{nil, sqltypes.Text}
	}
	if mysqlIntVariables[strings.ToLower(name)] {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return localValue{n, sqltypes.Int8}
		}
	}
	return localValue{v, sqltypes.Text}
}

// MySQLDatabase returns the database name MySQL clients see under the
// policy ("" when any name is accepted).
func MySQLDatabase(pol *config.Policy) string {
	b := pol.Backend
	switch b.Kind {
	case config.BackendSQLite:
		base := filepath.Base(b.Path)
		if b.Path == "" || strings.HasPrefix(b.Path, ":memory:") || strings.HasPrefix(b.Path, "file:") {
			return ""
		}
		return strings.TrimSuffix(base, filepath.Ext(base))
	case config.BackendMySQL:
		// [user[:password]@][net[(addr)]]/dbname[?param=value]
		dsn := b.DSN
		if i := strings.LastIndexByte(dsn, '/'); i >= 0 {
			name, _, _ := strings.Cut(dsn[i+1:], "?")
			return name
		}
	case config.BackendPostgres:
		if u, err := url.Parse(b.DSN); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
			return strings.TrimPrefix(u.Path, "/")
		}
		for _, f := range strings.Fields(b.DSN) {
			if k, v, ok := strings.Cut(f, "="); ok && k == "dbname" {
				return strings.Trim(v, "'")
			}
		}
	}
	return ""
}

// UseDatabase makes name the session's current database (USE, COM_INIT_DB,
// the database named when connecting). Unknown names give 3D000, which the
// MySQL front end sends as 1049 "Unknown database".
func (s *Session) UseDatabase(name string) error {
	db := MySQLDatabase(s.engine.Policy())
	if db != "" && !strings.EqualFold(name, db) && !strings.EqualFold(name, "information_schema") {
		return sqlerr.New(sqlerr.InvalidCatalogName, "Unknown database '%s'", name).
			WithHint("this dpproxy serves the database %q", db)
	}
	s.database = name
	return nil
}

// FieldList lists a table's columns as the client may use them (COM_FIELD_LIST):
// a protected table's exposed columns from the policy, a public table's
// columns as the backend describes them.
func (s *Session) FieldList(ctx context.Context, table string) ([]sqltypes.Column, error) {
	prot, pub := s.engine.Policy().LookupTable("", table)
	switch {
	case prot != nil:
		cols := make([]sqltypes.Column, len(prot.Columns))
		for i, c := range prot.Columns {
			cols[i] = sqltypes.Column{Name: c.Name, Type: c.Type.SQLType()}
		}
		return cols, nil
	case pub != nil:
		res, err := s.Execute(ctx, "SELECT * FROM "+quoteMySQLIdent(pub.Name)+" LIMIT 0")
		if err != nil {
			return nil, err
		}
		if len(res) == 0 {
			return nil, nil
		}
		return res[0].Columns, nil
	}
	return nil, sqlerr.New(sqlerr.UndefinedTable, "Table '%s.%s' doesn't exist", s.database, table)
}

func quoteMySQLIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// mysqlStatement answers the MySQL session and catalog statements listed
// above. handled is false for anything else (including statements that do
// not parse), which then takes the normal path. With apply false nothing
// changes in the session: Prepare uses it to describe the statement.
func (s *Session) mysqlStatement(ctx context.Context, sql string, apply bool) (res *sqltypes.Result, handled bool, err error) {
	parsed, perr := rewrite.ParseStatement(sql, rewrite.MySQLFrontEnd)
	// The normal path (parseOne) takes this parse when the statement is
	// not answered here; nothing below changes the AST.
	s.pendingParse = &pendingParse{sql: sql, parsed: parsed, err: perr}
	if perr != nil || len(parsed.Stmts) != 1 || parsed.ParamCount > 0 {
		return nil, false, nil
	}
	switch x := parsed.Stmts[0].(type) {
	case *ast.SetStmt:
		return s.mysqlSet(x, apply)
	case *ast.UseStmt:
		if !apply {
			return &sqltypes.Result{Tag: "SET"}, true, nil
		}
		if err := s.UseDatabase(x.DBName); err != nil {
			return nil, true, err
		}
		return &sqltypes.Result{Tag: "SET"}, true, nil
	case *ast.ShowStmt:
		return s.mysqlShow(ctx, x)
	case *ast.ExplainStmt:
		if show, ok := x.Stmt.(*ast.ShowStmt); ok && show.Tp == ast.ShowColumns {
			return s.mysqlShow(ctx, show) // DESCRIBE t
		}
	case *ast.SelectStmt:
		res, ok := s.mysqlSelect(x)
		return res, ok, nil
	}
	return nil, false, nil
}

// mysqlSet applies SET statements of session and user variables.
func (s *Session) mysqlSet(x *ast.SetStmt, apply bool) (*sqltypes.Result, bool, error) {
	type assignment struct{ name, value string }
	var out []assignment
	for _, v := range x.Variables {
		if strings.HasPrefix(strings.ToLower(v.Name), settingPrefix) {
			return nil, false, nil // the normal path refuses or applies it
		}
		if v.IsGlobal || v.IsInstance {
			return nil, true, sqlerr.New(sqlerr.InsufficientPrivilege, "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation").
				WithHint("only SESSION variables can be set through dpproxy")
		}
		value, ok := s.setExprValue(v.Value)
		if !ok {
			return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "SET %s: only constant values are supported", v.Name)
		}
		switch {
		case v.Name == ast.SetNames:
			coll := "utf8mb4_general_ci"
			if c, ok := setValue(v.ExtendValue); ok && v.ExtendValue != nil {
				coll = c
			}
			out = append(out, assignment{"character_set_client", value}, assignment{"character_set_connection", value},
				assignment{"character_set_results", value}, assignment{"collation_connection", coll})
		case v.Name == ast.SetCharset:
			out = append(out, assignment{"character_set_client", value}, assignment{"character_set_results", value})
		case !v.IsSystem:
			out = append(out, assignment{"@" + strings.ToLower(v.Name), value})
		default:
			name := strings.ToLower(v.Name)
			switch name {
			case "autocommit":
				switch strings.ToLower(value) {
				case "1", "on", "true":
					value = "1"
				case "0", "off", "false":
					value = "0"
				default:
					return nil, true, sqlerr.New(sqlerr.InvalidParameterValue, "Variable 'autocommit' can't be set to the value of '%s'", value)
				}
			case "sql_mode":
				if strings.Contains(strings.ToUpper(value), "NO_BACKSLASH_ESCAPES") {
					return nil, true, sqlerr.New(sqlerr.FeatureNotSupported, "sql_mode NO_BACKSLASH_ESCAPES is not supported by dpproxy").
						WithHint("dpproxy reads string literals with backslash escapes, as MySQL does by default")
				}
			}
			out = append(out, assignment{name, value})
		}
	}
	if apply {
		for _, a := range out {
			if a.value == "" && a.name[0] != '@' {
				delete(s.gucs, a.name) // DEFAULT
				continue
			}
			s.gucs[a.name] = a.value
		}
	}
	return &sqltypes.Result{Tag: "SET"}, true, nil
}

// setExprValue is the text of a SET value: a constant (setValue), a
// variable, or CONCAT of those — MariaDB Connector/J connects with
// SET autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES').
func (s *Session) setExprValue(e ast.ExprNode) (string, bool) {
	if v, ok := setValue(e); ok {
		return v, true
	}
	switch x := e.(type) {
	case *ast.VariableExpr:
		lv, ok := s.mysqlEval(x)
		if !ok {
			return "", false
		}
		switch v := lv.v.(type) {
		case nil:
			return mysqlNull, true
		case string:
			return v, true
		case int64:
			return strconv.FormatInt(v, 10), true
		}
	case *ast.FuncCallExpr:
		if x.FnName.L != "concat" || len(x.Args) == 0 {
			return "", false
		}
		var sb strings.Builder
		for _, a := range x.Args {
			v, ok := s.setExprValue(a)
			if !ok {
				return "", false
			}
			if v == mysqlNull {
				return mysqlNull, true
			}
			sb.WriteString(v)
		}
		return sb.String(), true
	case *ast.ParenthesesExpr:
		return s.setExprValue(x.Expr)
	}
	return "", false
}

// setValue is the text of a SET value: a constant, an identifier (ON,
// utf8mb4), NULL (mysqlNull) or DEFAULT ("").
func setValue(e ast.ExprNode) (string, bool) {
	switch x := e.(type) {
	case nil:
		return "", true
	case *ast.DefaultExpr:
		return "", true
	case *test_driver.ValueExpr:
		switch x.Kind() {
		case test_driver.KindNull:
			return mysqlNull, true
		case test_driver.KindInt64:
			return strconv.FormatInt(x.GetInt64(), 10), true
		case test_driver.KindUint64:
			return strconv.FormatUint(x.GetUint64(), 10), true
		case test_driver.KindString:
			return x.GetString(), true
		case test_driver.KindFloat64:
			return strconv.FormatFloat(x.GetFloat64(), 'g', -1, 64), true
		case test_driver.KindMysqlDecimal:
			return x.GetMysqlDecimal().String(), true
		}
	case *ast.ColumnNameExpr:
		return x.Name.Name.O, true
	case *ast.VariableExpr:
		return "", false
	}
	return "", false
}

// mysqlSelect answers a SELECT without FROM over @@variables, MySQL's
// server functions and constants. Columns are named as MySQL names them:
// the alias or the expression's text.
func (s *Session) mysqlSelect(sel *ast.SelectStmt) (*sqltypes.Result, bool) {
	if sel.From != nil {
		return nil, false // information_schema: see mysql_infoschema.go
	}
	if sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.With != nil ||
		sel.OrderBy != nil || sel.Fields == nil || sel.Kind != ast.SelectStmtKindSelect {
		return nil, false
	}
	res := &sqltypes.Result{}
	row := make([]any, 0, len(sel.Fields.Fields))
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			return nil, false
		}
		lv, ok := s.mysqlEval(f.Expr)
		if !ok {
			return nil, false
		}
		name := f.AsName.O
		if name == "" {
			name = f.Text()
		}
		res.Columns = append(res.Columns, sqltypes.Column{Name: name, Type: lv.t})
		row = append(row, lv.v)
	}
	return oneRowResult(res, row, sel.Limit)
}

func (s *Session) mysqlEval(expr ast.ExprNode) (localValue, bool) {
	switch x := expr.(type) {
	case *ast.VariableExpr:
		if x.Value != nil || x.IsInstance {
			return localValue{}, false
		}
		if !x.IsSystem {
			if v, ok := s.gucs["@"+strings.ToLower(x.Name)]; ok {
				if v == mysqlNull {
					return localValue{nil, sqltypes.Text}, true
				}
				return localValue{v, sqltypes.Text}, true
			}
			return localValue{nil, sqltypes.Text}, true
		}
		v, ok := s.mysqlVariable(x.Name)
		if !ok {
			return localValue{}, false
		}
		return mysqlVariableValue(x.Name, v), true
	case *ast.FuncCallExpr:
		if len(x.Args) != 0 {
			break
		}
		switch x.FnName.L {
		case "version":
			return localValue{MySQLServerVersion, sqltypes.Text}, true
		case "database", "schema":
			if s.database == "" {
				return localValue{nil, sqltypes.Text}, true
			}
			return localValue{s.database, sqltypes.Text}, true
		case "user", "current_user", "session_user", "system_user":
			return localValue{s.analyst + "@%", sqltypes.Text}, true
		case "connection_id":
			return localValue{int64(s.connectionID()), sqltypes.Int8}, true
		case "last_insert_id", "found_rows", "row_count":
			return localValue{int64(0), sqltypes.Int8}, true
		}
	case *ast.ParenthesesExpr:
		return s.mysqlEval(x.Expr)
	}
	return s.eval(expr)
}

// connectionID is CONNECTION_ID(): the value the front end set, else 0.
func (s *Session) connectionID() int64 {
	n, _ := strconv.ParseInt(s.gucs["\x00connection_id"], 10, 64)
	return n
}

// SetConnectionID records the front end's connection id for CONNECTION_ID().
func (s *Session) SetConnectionID(id uint32) {
	s.gucs["\x00connection_id"] = strconv.FormatUint(uint64(id), 10)
}

// tableNames lists the policy's tables, sorted.
func (s *Session) tableNames() []string {
	var names []string
	for _, t := range s.engine.Policy().ProtectedTables {
		names = append(names, t.Name)
	}
	for _, t := range s.engine.Policy().PublicTables {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

// mysqlShow answers SHOW statements.
func (s *Session) mysqlShow(ctx context.Context, x *ast.ShowStmt) (*sqltypes.Result, bool, error) {
	match, err := showFilter(x)
	if err != nil {
		return nil, true, err
	}
	text := func(names ...string) []sqltypes.Column {
		cols := make([]sqltypes.Column, len(names))
		for i, n := range names {
			cols[i] = sqltypes.Column{Name: n, Type: sqltypes.Text}
		}
		return cols
	}
	res := &sqltypes.Result{Tag: "SHOW"}
	switch x.Tp {
	case ast.ShowDatabases:
		res.Columns = text("Database")
		dbs := []string{"information_schema"}
		if db := MySQLDatabase(s.engine.Policy()); db != "" {
			dbs = append(dbs, db)
		} else if s.database != "" && !strings.EqualFold(s.database, "information_schema") {
			dbs = append(dbs, s.database)
		}
		for _, d := range dbs {
			if match(d) {
				res.Rows = append(res.Rows, []any{d})
			}
		}
	case ast.ShowTables:
		db := x.DBName
		if db == "" {
			db = s.database
		}
		if db == "" {
			return nil, true, sqlerr.New(sqlerr.InvalidCatalogName, "No database selected").WithHint("connect with a database or send USE %s", MySQLDatabase(s.engine.Policy()))
		}
		if err := s.checkDatabase(db); err != nil {
			return nil, true, err
		}
		res.Columns = text("Tables_in_" + db)
		if x.Full {
			res.Columns = append(res.Columns, sqltypes.Column{Name: "Table_type", Type: sqltypes.Text})
		}
		if !strings.EqualFold(db, "information_schema") {
			for _, n := range s.tableNames() {
				if !match(n) {
					continue
				}
				row := []any{n}
				if x.Full {
					row = append(row, "BASE TABLE")
				}
				res.Rows = append(res.Rows, row)
			}
		}
	case ast.ShowColumns, ast.ShowCreateTable, ast.ShowIndex, ast.ShowTableStatus:
		// Answered from the virtual catalog (package catalog).
		if x.Table != nil && x.Table.Schema.O != "" {
			if err := s.checkDatabase(x.Table.Schema.O); err != nil {
				return nil, true, err
			}
		}
		if x.Table == nil && x.Tp != ast.ShowTableStatus {
			return nil, false, nil
		}
		s.note.kind = KindCatalog
		res, ok, err := s.server.catalog.Load().ShowMySQL(ctx, x, s.catalogSession())
		if err != nil {
			return nil, true, catalogError(err)
		}
		return res, ok, nil
	case ast.ShowVariables:
		res.Columns = text("Variable_name", "Value")
		names := make([]string, 0, len(mysqlVariables))
		for n := range mysqlVariables {
			names = append(names, n)
		}
		if !x.GlobalScope {
			for n := range s.gucs {
				if _, known := mysqlVariables[n]; !known && n != "" && n[0] != '@' && n[0] != 0 {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		for _, n := range names {
			v, _ := s.mysqlGlobal(n)
			if !x.GlobalScope {
				v, _ = s.mysqlVariable(n)
			}
			if !match(n) {
				continue
			}
			var val any = v
			if v == mysqlNull {
				val = nil
			}
			res.Rows = append(res.Rows, []any{n, val})
		}
	case ast.ShowStatus:
		res.Columns = text("Variable_name", "Value")
	case ast.ShowCollation:
		res.Columns = []sqltypes.Column{{Name: "Collation", Type: sqltypes.Text}, {Name: "Charset", Type: sqltypes.Text}, {Name: "Id", Type: sqltypes.Int8},
			{Name: "Default", Type: sqltypes.Text}, {Name: "Compiled", Type: sqltypes.Text}, {Name: "Sortlen", Type: sqltypes.Int8}, {Name: "Pad_attribute", Type: sqltypes.Text}}
		for _, c := range mysqlCollations {
			if match(c.name) {
				res.Rows = append(res.Rows, []any{c.name, c.charset, c.id, c.isDefault, "Yes", int64(1), c.pad})
			}
		}
	case ast.ShowCharset:
		res.Columns = []sqltypes.Column{{Name: "Charset", Type: sqltypes.Text}, {Name: "Description", Type: sqltypes.Text},
			{Name: "Default collation", Type: sqltypes.Text}, {Name: "Maxlen", Type: sqltypes.Int8}}
		for _, c := range mysqlCharsets {
			if match(c.name) {
				res.Rows = append(res.Rows, []any{c.name, c.description, c.collation, c.maxlen})
			}
		}
	case ast.ShowWarnings, ast.ShowErrors:
		if x.CountWarningsOrErrors {
			return nil, false, nil
		}
		res.Columns = []sqltypes.Column{{Name: "Level", Type: sqltypes.Text}, {Name: "Code", Type: sqltypes.Int4}, {Name: "Message", Type: sqltypes.Text}}
		if x.Tp == ast.ShowWarnings {
			// The last DP answer's notices (SET dpproxy.intervals = notice).
			for _, msg := range s.warnings {
				res.Rows = append(res.Rows, []any{"Note", int64(1105), msg})
			}
		}
	case ast.ShowEngines:
		res.Columns = text("Engine", "Support", "Comment", "Transactions", "XA", "Savepoints")
		res.Rows = [][]any{{"InnoDB", "DEFAULT", "dpproxy: read-only, differentially private answers", "YES", "NO", "NO"}}
	default:
		return nil, false, nil
	}
	return res, true, nil
}

// checkDatabase refuses a database other than the one served.
func (s *Session) checkDatabase(name string) error {
	db := MySQLDatabase(s.engine.Policy())
	if db != "" && !strings.EqualFold(name, db) && !strings.EqualFold(name, "information_schema") {
		return sqlerr.New(sqlerr.InvalidCatalogName, "Unknown database '%s'", name)
	}
	return nil
}

// showFilter returns the LIKE filter of a SHOW statement (all names when
// there is none). SHOW ... WHERE is not supported.
func showFilter(x *ast.ShowStmt) (func(string) bool, error) {
	if x.Where != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SHOW ... WHERE is not supported by dpproxy").WithHint("use SHOW ... LIKE 'pattern'")
	}
	if x.Pattern == nil {
		return func(string) bool { return true }, nil
	}
	v, ok := x.Pattern.Pattern.(*test_driver.ValueExpr)
	if !ok || v.Kind() != test_driver.KindString {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "SHOW ... LIKE needs a string pattern")
	}
	pattern := v.GetString()
	return func(s string) bool { return likeMatch(strings.ToLower(pattern), strings.ToLower(s)) }, nil
}

// likeMatch reports whether s matches a LIKE pattern (% any run, _ one
// character, \ escapes the next).
func likeMatch(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	var match func(i, j int) bool
	memo := map[[2]int]bool{}
	match = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(p):
			r = j == len(t)
		case p[i] == '%':
			r = match(i+1, j) || (j < len(t) && match(i, j+1))
		case p[i] == '_':
			r = j < len(t) && match(i+1, j+1)
		case p[i] == '\\' && i+1 < len(p):
			r = j < len(t) && t[j] == p[i+1] && match(i+2, j+1)
		default:
			r = j < len(t) && t[j] == p[i] && match(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return match(0, 0)
}

type mysqlCollation struct {
	name, charset string
	id            int64
	isDefault     string
	pad           string
}

var mysqlCollations = []mysqlCollation{
	{"ascii_general_ci", "ascii", 11, "Yes", "PAD SPACE"},
	{"binary", "binary", 63, "Yes", "NO PAD"},
	{"latin1_swedish_ci", "latin1", 8, "Yes", "PAD SPACE"},
	{"utf8mb3_general_ci", "utf8mb3", 33, "Yes", "PAD SPACE"},
	{"utf8mb4_0900_ai_ci", "utf8mb4", 255, "", "NO PAD"},
	{"utf8mb4_bin", "utf8mb4", 46, "", "PAD SPACE"},
	{"utf8mb4_general_ci", "utf8mb4", 45, "Yes", "PAD SPACE"},
	{"utf8mb4_unicode_ci", "utf8mb4", 224, "", "PAD SPACE"},
}

type mysqlCharset struct {
	name, description, collation string
	maxlen                       int64
}

var mysqlCharsets = []mysqlCharset{
	{"ascii", "US ASCII", "ascii_general_ci", 1},
	{"binary", "Binary pseudo charset", "binary", 1},
	{"latin1", "cp1252 West European", "latin1_swedish_ci", 1},
	{"utf8mb3", "UTF-8 Unicode", "utf8mb3_general_ci", 3},
	{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", 4},
}
