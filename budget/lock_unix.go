//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package budget

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockLedger takes an exclusive advisory lock on path (created if needed).
// The kernel drops it when the process dies, so a crash never leaves a
// stale lock behind.
func lockLedger(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("budget: opening ledger lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLedgerLocked, path)
		}
		return nil, fmt.Errorf("budget: locking ledger %s: %w", path, err)
	}
	return f, nil
}

// syncDir fsyncs a directory so that a file just created in it survives a
// machine crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
