package integration

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

type clientQuery struct{ client, sql string }

// readClientQueries reads testdata/client_queries.sql.
func readClientQueries(t *testing.T) []clientQuery {
	t.Helper()
	data, err := os.ReadFile("testdata/client_queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	var out []clientQuery
	client := ""
	var stmt strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if c, ok := strings.CutPrefix(trimmed, "-- client: "); ok {
			client = c
			continue
		}
		if client == "" || trimmed == "" || (stmt.Len() == 0 && strings.HasPrefix(trimmed, "--") && !strings.HasSuffix(trimmed, ";")) {
			continue
		}
		stmt.WriteString(line + "\n")
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, clientQuery{client, strings.TrimSpace(stmt.String())})
			stmt.Reset()
		}
	}
	return out
}

// Every startup and catalog query of the corpus is answered, over the
// simple and the extended protocol, without error and without budget.
func TestClientStartupAndCatalogQueries(t *testing.T) {
	dsn := pgDatabase(t)
	backendYAML := "backend:\n  kind: postgres\n  dsn: " + strconv.Quote(dsn) + "\n"
	catalogDSN := catalogRole(t, dsn, writePolicy(t, backendYAML, 100))
	policy := writePolicy(t, backendYAML+"  catalog_dsn: "+strconv.Quote(catalogDSN)+"\n", 100)
	p := startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0")
	ctx := context.Background()
	queries := readClientQueries(t)
	if len(queries) < 25 {
		t.Fatalf("corpus has %d queries", len(queries))
	}
	for _, mode := range []string{"simple_protocol", "cache_statement"} {
		conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+p.addr+"/clinic?sslmode=disable&default_query_exec_mode="+mode)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			rows, err := conn.Query(ctx, q.sql)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
			if err != nil {
				t.Errorf("%s (%s): %s\n  %v", q.client, mode, q.sql, err)
			}
		}
		var spent float64
		if err := conn.QueryRow(ctx, "SELECT epsilon_spent FROM dpproxy.budget").Scan(&spent); err != nil || spent != 0 {
			t.Errorf("%s: the corpus spent ε=%v (%v)", mode, spent, err)
		}
		conn.Close(ctx)
	}
}
