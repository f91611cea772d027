package integration

import (
	"os"
	"strings"
	"testing"
)

type clientQuery struct{ client, sql string }

// readClientQueries reads testdata/client_queries.sql.
func readClientQueries(t testing.TB) []clientQuery {
	t.Helper()
	return readCorpus(t, "testdata/client_queries.sql")
}

// readCorpus reads a corpus of client statements: "-- client: NAME"
// blocks of statements, each ending with ";" at the end of a line.
func readCorpus(t testing.TB, path string) []clientQuery {
	t.Helper()
	data, err := os.ReadFile(path)
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
