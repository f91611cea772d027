package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Lockouts double with each failure of a name or an address, up to Max;
// a success clears the name but not the address.
func TestThrottleBacksOff(t *testing.T) {
	th := &Throttle{Base: 100 * time.Millisecond, Max: 350 * time.Millisecond}
	for i, want := range []time.Duration{100, 200, 350, 350} {
		if got := th.Failed("ana", "10.0.0.1"); got != want*time.Millisecond {
			t.Errorf("failure %d: locked out for %v, want %v", i+1, got, want*time.Millisecond)
		}
	}
	// Another name from the same address is locked by the address.
	if got := th.Failed("bob", "10.0.0.1"); got != 350*time.Millisecond {
		t.Errorf("another name, same address: %v, want the address's 350ms", got)
	}
	// The same name from another address is locked by the name.
	if err := th.Wait(context.Background(), "ana", "10.0.0.2", time.Millisecond); !errors.Is(err, ErrThrottled) {
		t.Errorf("the name from another address: %v, want ErrThrottled (the name is locked)", err)
	}
	th.Succeeded("ana")
	if got := th.Failed("ana", "10.0.0.3"); got != 100*time.Millisecond {
		t.Errorf("after a success, from a fresh address: %v, want 100ms", got)
	}
}

// Wait waits out a lockout, and refuses one longer than the caller can
// wait.
func TestThrottleWait(t *testing.T) {
	th := &Throttle{Base: 150 * time.Millisecond, Max: time.Second}
	ctx := context.Background()
	if err := th.Wait(ctx, "ana", "a", time.Second); err != nil {
		t.Fatalf("no failures yet: %v", err)
	}
	th.Failed("ana", "a")
	start := time.Now()
	if err := th.Wait(ctx, "ana", "b", time.Second); err != nil || time.Since(start) < 100*time.Millisecond {
		t.Errorf("Wait returned %v after %v, want nil after the 150ms lockout", err, time.Since(start))
	}
	th.Failed("ana", "a")
	th.Failed("ana", "a") // 600ms
	if err := th.Wait(ctx, "ana", "c", 100*time.Millisecond); !errors.Is(err, ErrThrottled) {
		t.Errorf("a lockout longer than the caller can wait: %v, want ErrThrottled", err)
	}
	var nilThrottle *Throttle
	if nilThrottle.Failed("x", "y") != 0 || nilThrottle.Wait(ctx, "x", "y", 0) != nil {
		t.Error("a nil Throttle throttles")
	}
}

// The server secret is created once (mode 0600) and read back the same;
// a damaged file is an error, not a new secret.
func TestServerSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db.secret")
	a, err := LoadOrCreateSecret(path)
	if err != nil || len(a) != 32 {
		t.Fatalf("create: %x %v", a, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v %v, want 0600", fi.Mode(), err)
	}
	b, err := LoadOrCreateSecret(path)
	if err != nil || string(a) != string(b) {
		t.Fatalf("reload: %x %v, want %x", b, err, a)
	}
	os.WriteFile(path, []byte("not hex\n"), 0o600)
	if _, err := LoadOrCreateSecret(path); err == nil {
		t.Error("a damaged secret file was accepted")
	}
}

// Parallel attempts for a locked name do not all get through when the
// lockout ends: each one let through takes the next slot, so they pass a
// lockout apart.
func TestThrottleSerializesParallelAttempts(t *testing.T) {
	th := &Throttle{Base: 100 * time.Millisecond, Max: time.Second}
	th.Failed("ana", "x")
	start := time.Now()
	passed := make(chan time.Duration, 5)
	for i := range 5 {
		go func() {
			if err := th.Wait(context.Background(), "ana", "addr"+string(rune('a'+i)), 5*time.Second); err != nil {
				t.Error(err)
			}
			passed <- time.Since(start)
		}()
	}
	var times []time.Duration
	for range 5 {
		times = append(times, <-passed)
	}
	slices.Sort(times)
	for i := 1; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 80*time.Millisecond {
			t.Errorf("attempts passed %v apart (%v); want a lockout (100ms) apart", gap, times)
		}
	}
}
