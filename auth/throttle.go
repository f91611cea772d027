package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// Throttle slows down password guessing. Each failed login of an analyst
// name, and each from a client address, locks that name and that address
// out for Base·2^(n−1) (at most Max) after its n-th recent failure: the
// failing connection is answered only when the lockout ends, and a new
// attempt for a locked name or address waits for it first. Unknown names
// and wrong passwords are throttled the same way, so neither the message
// nor the timing tells them apart. A success clears the name's count; an
// address's count and a name's idle count fade after forgetAfter.
//
// A Throttle is safe for concurrent use; the zero value (or nil) does not
// throttle.
type Throttle struct {
	Base, Max time.Duration

	mu      sync.Mutex
	entries map[string]*throttleEntry
}

type throttleEntry struct {
	failures int
	until    time.Time // locked out until then
}

// forgetAfter is how long after its lockout ends a count is kept.
const forgetAfter = 15 * time.Minute

// maxThrottleEntries bounds the memory a flood of distinct names or
// addresses can take; past it, expired entries are swept.
const maxThrottleEntries = 100000

func nameKey(name string) string { return "name\x00" + name }
func addrKey(addr string) string { return "addr\x00" + addr }

// Wait blocks until neither name nor addr is locked out, ctx ends
// (its error is returned), or limit passes (ErrThrottled).
func (t *Throttle) Wait(ctx context.Context, name, addr string, limit time.Duration) error {
	if t == nil || t.Base <= 0 {
		return nil
	}
	until := t.lockedUntil(name, addr)
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	if d > limit {
		return ErrThrottled
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrThrottled is returned by Wait when the lockout outlasts the time the
// caller can wait.
var ErrThrottled = errors.New("auth: too many failed logins; locked out")

// Failed records a failed login of name from addr and returns how long
// both are now locked out.
func (t *Throttle) Failed(name, addr string) time.Duration {
	if t == nil || t.Base <= 0 {
		return 0
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[string]*throttleEntry{}
	}
	if len(t.entries) >= maxThrottleEntries {
		t.sweepLocked(now)
	}
	var lock time.Duration
	for _, k := range []string{nameKey(name), addrKey(addr)} {
		e := t.entries[k]
		if e == nil || now.After(e.until.Add(forgetAfter)) {
			e = &throttleEntry{}
			t.entries[k] = e
		}
		e.failures++
		d := t.Base << min(e.failures-1, 30)
		if d > t.Max || d <= 0 {
			d = t.Max
		}
		e.until = now.Add(d)
		lock = max(lock, d)
	}
	return lock
}

// Succeeded forgets the failures of name.
func (t *Throttle) Succeeded(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.entries, nameKey(name))
	t.mu.Unlock()
}

func (t *Throttle) lockedUntil(name, addr string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var until time.Time
	for _, k := range []string{nameKey(name), addrKey(addr)} {
		if e := t.entries[k]; e != nil && e.until.After(until) {
			until = e.until
		}
	}
	return until
}

func (t *Throttle) sweepLocked(now time.Time) {
	for k, e := range t.entries {
		if now.After(e.until.Add(forgetAfter)) {
			delete(t.entries, k)
		}
	}
}

// LoadOrCreateSecret reads the 32-byte server secret kept (hex) in path,
// creating it with fresh random bytes and mode 0600 on first use. The
// front ends derive from it what must stay the same across restarts, such
// as the SCRAM salts shown for unknown user names.
func LoadOrCreateSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("auth: server secret: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateSecret(path) // created meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("auth: creating server secret: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(secret) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("auth: writing server secret %s: %w", path, werr)
		}
		return secret, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: reading server secret: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) != 32 {
		return nil, fmt.Errorf("auth: server secret %s is not 64 hex digits", path)
	}
	return secret, nil
}
