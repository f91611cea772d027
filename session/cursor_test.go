package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// A cursor over a DP answer releases and charges it once, however it is
// fetched; FETCH and MOVE walk it forward; transactions end cursors
// without HOLD.
func TestCursors(t *testing.T) {
	_, s, acct, _ := sessionFixture(t, nil)
	ctx := context.Background()
	run := func(sql string) string {
		t.Helper()
		res, err := s.Execute(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return fmt.Sprintf("%s %d", res[0].Tag, len(res[0].Rows))
	}
	fail := func(sql string, code sqlerr.Code) {
		t.Helper()
		if _, err := s.Execute(ctx, sql); sqlerr.As(err).Code != code {
			t.Errorf("%s: got %v, want %s", sql, err, code)
		}
	}
	fail(`DECLARE c CURSOR FOR SELECT kind, COUNT(*) FROM visits GROUP BY kind`, sqlerr.NoActiveSQLTransaction)
	run("BEGIN")
	if got := run(`DECLARE "c" NO SCROLL CURSOR WITHOUT HOLD FOR SELECT kind, COUNT(*) FROM visits GROUP BY kind ORDER BY kind`); got != "DECLARE CURSOR 0" {
		t.Errorf("declare: %s", got)
	}
	st, _ := acct.Status("ana")
	spent := st.Spent.Epsilon
	if spent == 0 {
		t.Fatal("declaring a cursor over a DP query did not charge it")
	}
	fail(`DECLARE c CURSOR FOR SELECT 1`, sqlerr.DuplicateCursor)
	first, err := s.Execute(ctx, `FETCH FORWARD 1 FROM c`)
	if err != nil || first[0].Tag != "FETCH 1" || len(first[0].Rows) != 1 || len(first[0].Columns) != 2 {
		t.Fatalf("fetch 1: %+v %v", first, err)
	}
	rest := run(`FETCH ALL IN c`)
	if rest == "FETCH 0 0" {
		t.Errorf("fetch all after 1: %s", rest)
	}
	if got := run(`FETCH NEXT FROM c`); got != "FETCH 0 0" {
		t.Errorf("fetch past the end: %s", got)
	}
	if got := run(`MOVE 5 c`); got != "MOVE 0 0" {
		t.Errorf("move past the end: %s", got)
	}
	fail(`FETCH BACKWARD 1 FROM c`, sqlerr.FeatureNotSupported)
	fail(`FETCH 1 FROM nosuch`, sqlerr.InvalidCursorName)
	if got := run(`CLOSE c`); got != "CLOSE CURSOR 0" {
		t.Errorf("close: %s", got)
	}
	fail(`CLOSE c`, sqlerr.InvalidCursorName)
	if st, _ := acct.Status("ana"); st.Spent.Epsilon != spent {
		t.Errorf("fetching charged again: %v, then %v", spent, st.Spent.Epsilon)
	}

	// ROLLBACK TO SAVEPOINT stays in the transaction: the cursor stays.
	run("SAVEPOINT sp")
	run(`DECLARE kept CURSOR FOR SELECT body FROM notes`)
	run("ROLLBACK TO SAVEPOINT sp")
	if got := run(`FETCH 1 FROM kept`); got != "FETCH 1 1" {
		t.Errorf("cursor after ROLLBACK TO SAVEPOINT: %s", got)
	}

	// WITH HOLD outlives the transaction; without HOLD does not.
	run(`DECLARE held CURSOR WITH HOLD FOR SELECT body FROM notes`)
	run(`DECLARE scoped CURSOR FOR SELECT body FROM notes`)
	run("COMMIT")
	if got := run(`FETCH 10 FROM held`); got != "FETCH 2 2" { // notes holds two rows
		t.Errorf("held cursor after COMMIT: %s", got)
	}
	fail(`FETCH 1 FROM scoped`, sqlerr.InvalidCursorName)
	run(`CLOSE ALL`)
	fail(`FETCH 1 FROM held`, sqlerr.InvalidCursorName)

	// Refused forms, each with a clear error; the session stays usable.
	for sql, code := range map[string]sqlerr.Code{
		`DECLARE c SCROLL CURSOR WITH HOLD FOR SELECT 1`:      sqlerr.FeatureNotSupported,
		`DECLARE c BINARY CURSOR WITH HOLD FOR SELECT 1`:      sqlerr.FeatureNotSupported,
		`DECLARE c CURSOR WITH HOLD SELECT 1`:                 sqlerr.SyntaxError,
		`DECLARE c CURSOR WITH HOLD FOR SELECT * FROM visits`: sqlerr.InsufficientPrivilege,
		`FETCH 1 2 FROM c`: sqlerr.SyntaxError,
		`DECLARE d CURSOR WITH HOLD FOR DECLARE e CURSOR WITH HOLD FOR SELECT 1`: sqlerr.SyntaxError,
		`DECLARE d CURSOR WITH HOLD FOR COMMIT`:                                  sqlerr.SyntaxError,
		`FETCH FORWARD -1 FROM c`:                                                sqlerr.FeatureNotSupported,
	} {
		fail(sql, code)
	}
	if got := run(`SELECT 1`); got != "SELECT 1 1" {
		t.Errorf("after refusals: %s", got)
	}
}

func TestParseCursorCommand(t *testing.T) {
	for sql, want := range map[string]string{
		`DECLARE "Big" CURSOR WITH HOLD FOR SELECT 1`:           `declare Big hold=true query="SELECT 1"`,
		`declare c insensitive no scroll cursor for  select 2;`: `declare c hold=false query="select 2"`,
		`FETCH FORWARD 2000 FROM "c_1"`:                         `fetch c_1 count=2000`,
		`fetch all c`:                                           `fetch c count=-1`,
		`FETCH c`:                                               `fetch c count=1`,
		`MOVE FORWARD ALL IN c`:                                 `move c count=-1`,
		`CLOSE "c"`:                                             `close c count=0`,
	} {
		cmd, ok, err := parseCursorCommand(sql)
		if !ok || err != nil {
			t.Errorf("%s: %v %v", sql, ok, err)
			continue
		}
		got := fmt.Sprintf("%s %s count=%d", cmd.verb, cmd.name, cmd.count)
		if cmd.verb == "declare" {
			got = fmt.Sprintf("%s %s hold=%v query=%q", cmd.verb, cmd.name, cmd.hold, cmd.query)
		}
		if got != want {
			t.Errorf("%s: got %s, want %s", sql, got, want)
		}
	}
	for _, sql := range []string{`SELECT 1`, `DECLAREX`, `closed`} {
		if _, ok, _ := parseCursorCommand(sql); ok {
			t.Errorf("%s: taken as a cursor statement", sql)
		}
	}
}

// SET ROLE and SET SESSION AUTHORIZATION cannot make a session act as
// someone else: refused, never accepted as if they changed anything.
func TestSetRoleRefused(t *testing.T) {
	_, s, _, _ := sessionFixture(t, nil)
	ctx := context.Background()
	for _, sql := range []string{`SET ROLE other`, `SET SESSION AUTHORIZATION 'other'`, `SET SESSION ROLE other`, `SET role = 'x'`} {
		if _, err := s.Execute(ctx, sql); sqlerr.As(err).Code != sqlerr.FeatureNotSupported {
			t.Errorf("%s: got %v, want 0A000", sql, err)
		}
	}
	for _, sql := range []string{`RESET ROLE`, `SET ROLE NONE`, `SET SESSION AUTHORIZATION DEFAULT`, `RESET SESSION AUTHORIZATION`} {
		if _, err := s.Execute(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
	res, err := s.Execute(ctx, `SELECT current_user, session_user`)
	if err != nil || fmt.Sprint(res[0].Rows) != "[[ana ana]]" {
		t.Errorf("after: %v %v", res, err)
	}
}
