package mysqlwire_test

import (
	"context"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
)

// A command that outlives the statement timeout is ended with MySQL's
// own error for it (3024); the connection stays usable, and statements
// run back to back each get the whole timeout from their own start (one
// timer per connection, re-armed only when it fires early).
func TestStatementTimeout(t *testing.T) {
	const limit = 400 * time.Millisecond
	conn := analystConn(t, mysqlwire.Options{StatementTimeout: limit})
	ctx := context.Background()

	// Short statements for 3 limits' time: none is ended.
	for start := time.Now(); time.Since(start) < 3*limit; {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM clinics").Scan(&n); err != nil {
			t.Fatalf("a short statement after %v: %v", time.Since(start), err)
		}
		time.Sleep(limit / 4)
	}

	// 25⁶ ≈ 244 million rows: far longer than the limit.
	start := time.Now()
	var n int64
	err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM clinics a, clinics b, clinics c, clinics d, clinics e, clinics f").Scan(&n)
	took := time.Since(start)
	if code := mysqlErrNumber(err); code != mysqlwire.ErrQueryTimeout {
		t.Fatalf("the long statement: %v (error %d) after %v, want error %d", err, code, took, mysqlwire.ErrQueryTimeout)
	}
	if took < limit || took > 10*time.Second {
		t.Errorf("the long statement ended after %v, want soon after %v", took, limit)
	}
	// A statement that reads through the backend: it runs in a context
	// of its own, not the one the timeout ended.
	var clinics int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM clinics").Scan(&clinics); err != nil || clinics == 0 {
		t.Errorf("after the timeout: %v %d", err, clinics)
	}
}

// A connection idle past the idle timeout is closed; one that sends a
// command more often stays open however long it lasts (the idle deadline
// is moved only now and then, never sooner than the timeout after the
// last command).
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	conn := analystConn(t, mysqlwire.Options{IdleTimeout: idle})
	ctx := context.Background()
	for start := time.Now(); time.Since(start) < 5*idle; {
		time.Sleep(idle * 2 / 3)
		if err := conn.PingContext(ctx); err != nil {
			t.Fatalf("after %v of activity: %v", time.Since(start), err)
		}
	}
	time.Sleep(idle + 2*time.Second)
	if err := conn.PingContext(ctx); err == nil {
		t.Error("a connection idle past the idle timeout still answers")
	}
}
