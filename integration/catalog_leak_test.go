package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// pgCatalogProbes read every PostgreSQL catalog path a client could use
// to learn about tables, columns, indexes, roles and sizes.
var pgCatalogProbes = []string{
	`SELECT oid, relname, relnamespace, relkind, reltuples, relpages, relhasindex FROM pg_catalog.pg_class ORDER BY oid`,
	`SELECT attrelid, attname, atttypid, attnum FROM pg_attribute ORDER BY attrelid, attnum`,
	`SELECT nspname FROM pg_namespace ORDER BY 1`,
	`SELECT rolname FROM pg_roles ORDER BY 1`,
	`SELECT usename FROM pg_user ORDER BY 1`,
	`SELECT * FROM pg_stat_user_tables`,
	`SELECT * FROM pg_stat_all_tables`,
	`SELECT * FROM pg_statio_user_tables`,
	`SELECT * FROM pg_stats`,
	`SELECT * FROM pg_statistic`,
	`SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes ORDER BY 1, 2, 3`,
	`SELECT * FROM pg_description`,
	`SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 1, 2`,
	`SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
	`SELECT pg_total_relation_size('visits'), pg_relation_size('patients'), pg_table_size('visits')`,
	`SELECT c.relname, c.reltuples FROM pg_class c WHERE c.relname IN ('visits', 'patients')`,
	`SELECT datname FROM pg_database`,
	`SELECT obj_description('visits'::regclass, 'pg_class')`,
}

// mysqlCatalogProbes are the same for MySQL clients.
var mysqlCatalogProbes = []string{
	`SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_ROWS, AVG_ROW_LENGTH, DATA_LENGTH, INDEX_LENGTH, AUTO_INCREMENT, UPDATE_TIME FROM information_schema.TABLES ORDER BY 1, 2`,
	`SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA <> 'information_schema' ORDER BY 1, 2`,
	`SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME, CARDINALITY FROM information_schema.STATISTICS ORDER BY 1, 2, 3`,
	`SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1`,
	`SELECT * FROM information_schema.USER_PRIVILEGES`,
	`SELECT * FROM information_schema.TABLE_CONSTRAINTS`,
	`SHOW TABLE STATUS`,
	`SHOW INDEX FROM patients`,
	`SHOW CREATE TABLE patients`,
	`SHOW FULL COLUMNS FROM visits`,
	`SHOW TABLES`,
	`SHOW DATABASES`,
}

// forbidden are names that exist on the backend but not in the policy.
var forbidden = []string{"secret_table", "ssn", "idx_ssn", "extra_role", "hidden_schema", "secret comment", "visit_id", "region", "demo_meta"}

// readCatalog runs every probe through both front ends and returns the
// answers as text.
func readCatalog(t *testing.T, p *proxyProcess, pgDB, myDB string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/"+pgDB+"?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range pgCatalogProbes {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			vals, _ := rows.Values()
			fmt.Fprintln(&b, vals...)
		}
		if rows.Close(); rows.Err() != nil {
			t.Fatalf("%s: %v", q, rows.Err())
		}
	}
	db, err := sql.Open("mysql", "analyst:analyst@tcp("+p.mysqlAddress(t)+")/"+myDB+"?timeout=10s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range mysqlCatalogProbes {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				fmt.Fprintf(&b, "%s ", v)
			}
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.String()
}

// A backend with more than the policy — other tables and schemas, an
// unexposed column with an index, another role, a table comment — and
// rows inserted and deleted between two reads: no catalog path, on either
// protocol, names anything outside the policy or changes with the data.
func TestCatalogLeaksNothing(t *testing.T) {
	type backendCase struct {
		name       string
		dsn        func(testing.TB) string
		admin      func(*testing.T, string, ...string)
		extras     []string
		change     []string
		policyYAML func(string) string
		databases  func(string) (string, string)
	}
	pgExec := func(t *testing.T, dsn string, stmts ...string) {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for _, s := range stmts {
			if _, err := conn.Exec(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	myExec := func(t *testing.T, dsn string, stmts ...string) {
		t.Helper()
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	role := fmt.Sprintf("extra_role_%d", os.Getpid())
	cases := []backendCase{
		{
			name: "postgres", dsn: pgDatabase, admin: pgExec,
			extras: []string{
				`CREATE TABLE secret_table (x int)`, `ALTER TABLE patients ADD COLUMN ssn text`,
				`CREATE INDEX idx_ssn ON patients (ssn)`, `CREATE SCHEMA hidden_schema`, `CREATE TABLE hidden_schema.t2 (a int)`,
				`COMMENT ON TABLE visits IS 'secret comment'`, `DROP ROLE IF EXISTS ` + role, `CREATE ROLE ` + role, `ANALYZE`,
			},
			change: []string{
				`INSERT INTO patients (patient_id, age, sex, region, income) VALUES (999999, 40, 'F', 'north', 1000)`,
				`INSERT INTO visits SELECT 99999990 + g, 999999, 1, DATE '2024-01-01', 'J06', 10 FROM generate_series(1, 3) g`,
				`DELETE FROM visits WHERE patient_id = 1`, `DELETE FROM patients WHERE patient_id = 1`, `ANALYZE`,
			},
			policyYAML: func(dsn string) string { return "backend:\n  kind: postgres\n  dsn: " + strconv.Quote(dsn) + "\n" },
			databases: func(dsn string) (string, string) {
				cfg, _ := pgx.ParseConfig(dsn)
				return cfg.Database, cfg.Database
			},
		},
		{
			name: "mariadb", dsn: mysqlDatabase, admin: myExec,
			extras: []string{
				`CREATE TABLE secret_table (x int)`, `ALTER TABLE patients ADD COLUMN ssn varchar(20)`,
				`CREATE INDEX idx_ssn ON patients (ssn)`, `ALTER TABLE visits COMMENT 'secret comment'`,
				`DROP USER IF EXISTS ` + role, `CREATE USER ` + role, `ANALYZE TABLE patients, visits`,
			},
			change: []string{
				`INSERT INTO patients (patient_id, age, sex, region, income) VALUES (999999, 40, 'F', 'north', 1000)`,
				`INSERT INTO visits VALUES (99999991, 999999, 1, '2024-01-01', 'J06', 10), (99999992, 999999, 1, '2024-01-02', 'J06', 10)`,
				`DELETE FROM visits WHERE patient_id = 1`, `DELETE FROM patients WHERE patient_id = 1`, `ANALYZE TABLE patients, visits`,
			},
			policyYAML: func(dsn string) string { return "backend:\n  kind: mysql\n  dsn: " + strconv.Quote(dsn) + "\n" },
			databases: func(dsn string) (string, string) {
				cfg, _ := mysql.ParseDSN(dsn)
				return cfg.DBName, cfg.DBName
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := c.dsn(t)
			c.admin(t, dsn, c.extras...)
			if c.name == "mariadb" {
				t.Cleanup(func() { c.admin(t, dsn, `DROP USER IF EXISTS `+role) })
			} else {
				t.Cleanup(func() { c.admin(t, dsn, `DROP ROLE IF EXISTS `+role) })
			}
			policy := writeMySQLPolicy(t, c.policyYAML(dsn), 100)
			p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
			pgDB, myDB := c.databases(dsn)
			before := readCatalog(t, p, pgDB, myDB)
			for _, want := range []string{"patients", "clinics_pkey", "income", "PRIMARY"} {
				if !strings.Contains(before, want) {
					t.Fatalf("the probes did not read the catalog (no %q):\n%s", want, before)
				}
			}
			for _, name := range append(forbidden, role) {
				if strings.Contains(before, name) {
					t.Errorf("the catalog names %q, which is outside the policy", name)
				}
			}
			c.admin(t, dsn, c.change...)
			if after := readCatalog(t, p, pgDB, myDB); after != before {
				t.Errorf("the catalog changed when rows changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
