package pgwire

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runPsql runs psql against ts with the given arguments and stdin.
func runPsql(t *testing.T, ts *testServer, password, stdin string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return runPsqlEnv(t, ts, password, stdin, nil, args...)
}

// runPsqlEnv is runPsql with extra environment variables (later ones win).
func runPsqlEnv(t *testing.T, ts *testServer, password, stdin string, env []string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"-X", "-h", "127.0.0.1", "-p", ts.port, "-U", testUser, "-d", testDatabase}
	cmd := exec.CommandContext(ctx, psql, append(base, args...)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=10", "PGAPPNAME=psql-test", "PGSSLMODE=prefer")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("psql: %v", err)
	}
	return out.String(), errOut.String(), code
}

func TestPsqlQuery(t *testing.T) {
	ts := startServer(t, Options{})
	out, errOut, code := runPsql(t, ts, testPassword, "", "-A", "-F", "|", "-c", "select canned")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "id|amount|ratio|name|day|flag|missing|at\n" +
		"1|12.50|0.1|ünïcode 'quoted'|2024-03-15|t||2024-03-15 12:30:45.123456+00\n" +
		"-9223372036854775808|-0.001|1e+20||1999-12-31|f||2024-03-15 12:30:45+00\n" +
		"(2 rows)\n"
	if out != want {
		t.Errorf("psql output:\n%s\nwant:\n%s", out, want)
	}
	if got := ts.sessions.lastOpen().params["application_name"]; got != "psql-test" {
		t.Errorf("application_name %q", got)
	}
}

func TestPsqlError(t *testing.T) {
	ts := startServer(t, Options{})
	_, errOut, code := runPsql(t, ts, testPassword, "", "-v", "VERBOSITY=verbose", "-c", "bad")
	if code == 0 {
		t.Error("psql exited 0 after an error")
	}
	for _, want := range []string{`ERROR:  42601: syntax error at or near "bad"`, "LINE 1: bad", "DETAIL:  some detail", "HINT:  some hint"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestPsqlWrongPassword(t *testing.T) {
	ts := startServer(t, Options{})
	_, errOut, code := runPsql(t, ts, "nope", "", "-c", "select 1")
	if code == 0 || !strings.Contains(errOut, `password authentication failed for user "alice"`) {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestPsqlSessionContinuesAfterError(t *testing.T) {
	ts := startServer(t, Options{})
	script := "bad;\nboom;\nselect 'hello';\n;\nset x;\n\\echo done\n"
	out, errOut, code := runPsql(t, ts, testPassword, script, "-A", "-t")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(errOut, `ERROR:  syntax error at or near "bad"`) || !strings.Contains(errOut, "ERROR:  internal error") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if strings.Contains(errOut+out, "salary") {
		t.Error("internal error text leaked")
	}
	// The engine echoes unknown queries.
	if !strings.Contains(out, "select 'hello'") || !strings.Contains(out, "SET") || !strings.HasSuffix(out, "done\n") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestPsqlTransactionAndErrors(t *testing.T) {
	ts := startServer(t, Options{})
	// An error fails the block; psql then sees 25P02 until COMMIT, which
	// reports ROLLBACK.
	script := "begin;\nbad;\nselect 'in failed block';\n\\echo :LAST_ERROR_SQLSTATE\ncommit;\nselect 'after';\n"
	out, errOut, code := runPsql(t, ts, testPassword, script, "-A", "-t")
	if code != 0 {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "current transaction is aborted, commands ignored until end of transaction block") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "25P02\nROLLBACK\n") || !strings.HasSuffix(out, "select 'after';\n") {
		t.Errorf("stdout:\n%s", out)
	}
}
