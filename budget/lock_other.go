//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package budget

import (
	"fmt"
	"os"
)

// lockLedger opens the lock file without locking it: this platform has no
// flock. Do not point two dpproxy processes at one ledger there.
func lockLedger(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("budget: opening ledger lock: %w", err)
	}
	return f, nil
}

// syncDir is a no-op where directories cannot be fsynced.
func syncDir(string) error { return nil }
