package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	// failures counts every failed login (Failures).
	failures atomic.Int64
}

// Failures is the number of failed logins recorded (0 for nil).
func (t *Throttle) Failures() int64 {
	if t == nil {
		return 0
	}
	return t.failures.Load()
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

// nameKey hashes the name, so a key is small whatever a client sends.
func nameKey(name string) string {
	h := sha256.Sum256([]byte(name))
	return "name\x00" + string(h[:16])
}
func addrKey(addr string) string { return "addr\x00" + addr }

// Wait blocks until neither name nor addr is locked out, ctx ends
// (its error is returned), or limit passes (ErrThrottled). An attempt it
// lets through for a name or an address with recent failures takes that
// name's and address's next slot: until the attempt's outcome is known,
// parallel attempts wait another lockout, so opening many connections at
// once buys no extra guesses.
func (t *Throttle) Wait(ctx context.Context, name, addr string, limit time.Duration) error {
	if t == nil || t.Base <= 0 {
		return nil
	}
	deadline := time.Now().Add(limit)
	for {
		until := t.admit(name, addr)
		if until.IsZero() {
			return nil
		}
		if until.After(deadline) {
			return ErrThrottled
		}
		timer := time.NewTimer(time.Until(until))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
}

// admit lets an attempt through (zero time) when neither key is locked,
// reserving the next lockout of each key that has failures; otherwise it
// returns when the lockout ends.
func (t *Throttle) admit(name, addr string) time.Time {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := [2]string{nameKey(name), addrKey(addr)}
	var until time.Time
	for _, k := range keys {
		if e := t.entries[k]; e != nil && e.until.After(until) {
			until = e.until
		}
	}
	if until.After(now) {
		return until
	}
	for _, k := range keys {
		if e := t.entries[k]; e != nil && e.failures > 0 && !now.After(e.until.Add(forgetAfter)) {
			e.until = now.Add(t.delay(e.failures))
		}
	}
	return time.Time{}
}

// delay is the lockout after n failures.
func (t *Throttle) delay(n int) time.Duration {
	d := t.Base << min(n-1, 30)
	if d > t.Max || d <= 0 {
		d = t.Max
	}
	return d
}

// ErrThrottled is returned by Wait when the lockout outlasts the time the
// caller can wait.
var ErrThrottled = errors.New("auth: too many failed logins; locked out")

// Failed records a failed login of name from addr and returns how long
// both are now locked out.
func (t *Throttle) Failed(name, addr string) time.Duration {
	if t == nil {
		return 0
	}
	t.failures.Add(1)
	if t.Base <= 0 {
		return 0
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[string]*throttleEntry{}
	}
	var lock time.Duration
	for _, k := range []string{nameKey(name), addrKey(addr)} {
		e := t.entries[k]
		if e == nil || now.After(e.until.Add(forgetAfter)) {
			if e == nil && len(t.entries) >= maxThrottleEntries && !t.sweepLocked(now) {
				continue // full of live lockouts: new keys go uncounted, existing ones still are
			}
			e = &throttleEntry{}
			t.entries[k] = e
		}
		e.failures++
		d := t.delay(e.failures)
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

// sweepLocked makes room: first entries whose counts have faded, then,
// if the map is still full, those not locked out now. It reports whether
// there is room.
func (t *Throttle) sweepLocked(now time.Time) bool {
	for k, e := range t.entries {
		if now.After(e.until.Add(forgetAfter)) {
			delete(t.entries, k)
		}
	}
	if len(t.entries) >= maxThrottleEntries*9/10 {
		for k, e := range t.entries {
			if !e.until.After(now) {
				delete(t.entries, k)
			}
		}
	}
	return len(t.entries) < maxThrottleEntries
}

// createSecret writes a fresh secret to path atomically: a temporary file,
// synced, then linked into place (if another process got there first, its
// secret stands).
func createSecret(path string) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("auth: server secret: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("auth: creating server secret: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(hex.EncodeToString(secret) + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("auth: writing server secret %s: %w", path, werr)
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("auth: creating server secret %s: %w", path, err)
	}
	return nil
}

// LoadOrCreateSecret reads the 32-byte server secret kept (hex) in path,
// creating it with fresh random bytes and mode 0600 on first use. The
// front ends derive from it what must stay the same across restarts, such
// as the SCRAM salts shown for unknown user names.
func LoadOrCreateSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createSecret(path); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(path)
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
