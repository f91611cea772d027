package pgwire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
)

func TestShutdownClosesIdleAndDrainsBusy(t *testing.T) {
	ts := startServer(t, Options{})
	idle := dialRaw(t, ts.addr)
	idle.loginReady()
	busy := dialRaw(t, ts.addr)
	busy.loginReady()
	busy.send(&pgproto3.Query{String: "wait"})
	<-ts.sessions.started

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdownErr <- ts.srv.Shutdown(ctx)
	}()

	// The idle session is told and closed.
	e := idle.expectError()
	if e.Severity != "FATAL" || e.Code != "57P01" {
		t.Errorf("idle: got %s %s %q", e.Severity, e.Code, e.Message)
	}
	idle.expectClosed()

	// New connections are refused.
	if nc, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Error("a new connection was served during shutdown")
		}
		nc.Close()
	}

	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned while a query ran: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	// The running query finishes and delivers its result, then the
	// connection is closed.
	close(ts.sessions.release)
	var sawRow bool
	for {
		msg := busy.receive()
		if _, ok := msg.(*pgproto3.DataRow); ok {
			sawRow = true
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if !sawRow {
		t.Error("busy query lost its result")
	}
	if e := busy.expectError(); e.Code != "57P01" {
		t.Errorf("busy: got %s %q", e.Code, e.Message)
	}
	busy.expectClosed()

	select {
	case err := <-shutdownErr:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	select {
	case err := <-ts.serveErr:
		if !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		ts.serveErr <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if n := ts.sessions.closedCount(); n != 2 {
		t.Errorf("%d sessions closed, want 2", n)
	}
}

func TestShutdownDeadlineForcesClose(t *testing.T) {
	ts := startServer(t, Options{})
	c := dialRaw(t, ts.addr)
	c.loginReady()
	c.send(&pgproto3.Query{String: "wait"})
	<-ts.sessions.started

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: %v, want deadline exceeded", err)
	}
	c.expectClosed()
}

// Cancelling Serve's ctx stops accepting but leaves established sessions
// to Shutdown, the pattern cmd/dpproxy uses on SIGTERM.
func TestServeContextCancelThenShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sessions := newTestSessions(t, 4096)
	srv := NewServer(sessions, Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ctx, ln) }()

	c := dialRaw(t, ln.Addr().String())
	c.loginReady()
	c.send(&pgproto3.Query{String: "wait"})
	<-sessions.started

	cancel()
	select {
	case err := <-serveErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	// Serve closed the listener, so Accept fails with net.ErrClosed. (Dialling
	// its port instead would be flaky: another test may listen on the freed
	// port, or the dial may connect to itself.)
	tl := ln.(*net.TCPListener)
	_ = tl.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := tl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("listener still open: Accept returned %v, want net.ErrClosed", err)
	}

	shutdownErr := make(chan error, 1)
	go func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		shutdownErr <- srv.Shutdown(sctx)
	}()
	time.Sleep(50 * time.Millisecond)
	close(sessions.release)
	var sawRow bool
	for {
		msg := c.receive()
		if _, ok := msg.(*pgproto3.DataRow); ok {
			sawRow = true
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if !sawRow {
		t.Error("the running query lost its result")
	}
	if e := c.expectError(); e.Code != "57P01" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}
	c.expectClosed()
	if err := <-shutdownErr; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if sessions.closedCount() != 1 {
		t.Error("session not closed")
	}
}

func TestServeReturnsWhenListenerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(newTestSessions(t, 4096), Options{Logger: slog.New(slog.DiscardHandler)})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(context.Background(), ln) }()
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	select {
	case err := <-serveErr:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the listener closed")
	}
	if err := srv.Serve(context.Background(), ln); err == nil {
		t.Error("Serve on a closed listener returned nil")
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if err := srv.Serve(context.Background(), ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Shutdown: %v", err)
	}
}
