package netserver

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Deadlines and statement timeouts without a timer change per message.
//
// Every change to a socket's deadline, and every timer started or reset,
// moves a runtime timer, and the Go runtime then wakes a thread on
// another core to look after timers (runtime.wakeNetPoller: a futex wake
// or a write to the poller's eventfd). A front end that set its idle,
// write and statement deadlines afresh for each message paid four such
// wakes per statement: with one client, more than its cache hit's own
// work, and the woken thread competes with the client for the cores
// (measured on the cache-hit round trip with one client: 2.1 context
// switches per query and 800 moves between cores in two seconds with
// them, 1.6 and 380 without; p50 59 µs against 47 µs). So the
// deadlines here are moved only when the one in force falls outside a
// window of slack, and one timer per connection ends statements, re-armed
// only when it fires early.

// Slack is how late a deadline of timeout may fall: 1/16 of it, at most a
// second. A connection idle for its whole idle timeout is closed within
// that much more, never sooner.
func Slack(timeout time.Duration) time.Duration {
	return min(timeout/16, time.Second)
}

// Deadline is one of a connection's deadlines (read or write), moved on
// the socket only when the one in force falls outside the window asked
// for. The zero value is unusable; make one with NewDeadline. Not safe for
// concurrent use: it belongs to the goroutine serving the connection.
type Deadline struct {
	set func(time.Time) error
	at  time.Time // in force on the socket; zero: none
}

// NewDeadline returns a Deadline that moves the socket's through set
// (SetReadDeadline or SetWriteDeadline), with none in force yet.
func NewDeadline(set func(time.Time) error) Deadline {
	return Deadline{set: set}
}

// Within makes the deadline fall in [want, want+slack]: no sooner than
// asked, at most slack later. When the one in force already does, the
// socket is left alone. A zero want clears the deadline.
func (d *Deadline) Within(want time.Time, slack time.Duration) error {
	if want.IsZero() {
		if d.at.IsZero() {
			return nil
		}
		return d.Exactly(time.Time{})
	}
	if !d.at.IsZero() && !d.at.Before(want) && d.at.Sub(want) <= slack {
		return nil
	}
	return d.Exactly(want.Add(slack))
}

// Exactly sets the deadline to at (zero: none).
func (d *Deadline) Exactly(at time.Time) error {
	d.at = at
	return d.set(at)
}

// ConnDeadlines are a connection's read and write deadlines (Deadline).
type ConnDeadlines struct {
	Read, Write Deadline
	conn        func() net.Conn
}

// NewConnDeadlines tracks the deadlines of the connection conn returns,
// none in force. conn is called at each change: TLS may replace the
// connection during startup.
func NewConnDeadlines(conn func() net.Conn) ConnDeadlines {
	return ConnDeadlines{
		Read:  NewDeadline(func(t time.Time) error { return conn().SetReadDeadline(t) }),
		Write: NewDeadline(func(t time.Time) error { return conn().SetWriteDeadline(t) }),
		conn:  conn,
	}
}

// Idle makes the read deadline fall idle after now (within its slack);
// idle <= 0 clears it.
func (d *ConnDeadlines) Idle(idle time.Duration) error {
	var want time.Time
	if idle > 0 {
		want = time.Now().Add(idle)
	}
	return d.Read.Within(want, Slack(idle))
}

// Clear clears both deadlines, including one set on the connection
// directly (the authentication deadline).
func (d *ConnDeadlines) Clear() error {
	d.Read.at, d.Write.at = time.Time{}, time.Time{}
	return d.conn().SetDeadline(time.Time{})
}

// ErrStatementTimeout is the cause (context.Cause) of a statement's
// context that a StatementTimer ended.
var ErrStatementTimeout = errors.New("statement timeout")

// StatementTimer ends a connection's running statement when its time is
// up, with one timer for all its statements. Starting a statement arms
// the timer only when it is not armed already; a timer that fires before
// the running statement is due re-arms itself for the rest, and one that
// finds no statement running stays disarmed until the next Start. So a
// connection running statements back to back touches its timer about
// once per statement timeout, not twice per statement. Safe for
// concurrent use: the timer fires on its own goroutine.
type StatementTimer struct {
	mu      sync.Mutex
	timer   *time.Timer
	firesAt time.Time // zero: disarmed
	due     time.Time // the running statement's end; zero: none running
	cancel  context.CancelCauseFunc
}

// Start records that a statement runs until due, and that cancel ends it
// (with ErrStatementTimeout as the cause) when due passes first.
func (t *StatementTimer) Start(due time.Time, cancel context.CancelCauseFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.due, t.cancel = due, cancel
	if !t.firesAt.IsZero() && !t.firesAt.After(due) {
		return // fires in time: at due, or sooner and re-arms
	}
	t.arm(due)
}

// Stop records that the running statement ended. The timer stays armed:
// when it fires with no statement running it does nothing.
func (t *StatementTimer) Stop() {
	t.mu.Lock()
	t.due, t.cancel = time.Time{}, nil
	t.mu.Unlock()
}

// Close stops the timer for good (the connection ended).
func (t *StatementTimer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.due, t.cancel = time.Time{}, nil
	if t.timer != nil {
		t.timer.Stop()
	}
	t.firesAt = time.Time{}
}

// arm makes the timer fire at at; t.mu is held.
func (t *StatementTimer) arm(at time.Time) {
	t.firesAt = at
	if t.timer == nil {
		t.timer = time.AfterFunc(time.Until(at), t.fire)
		return
	}
	t.timer.Reset(time.Until(at))
}

func (t *StatementTimer) fire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.firesAt = time.Time{}
	if t.cancel == nil {
		return // no statement running: the next Start arms the timer
	}
	if now := time.Now(); now.Before(t.due) {
		t.arm(t.due)
		return
	}
	t.cancel(ErrStatementTimeout)
}
