package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpproxy/dpproxy/config"
)

// ErrNotSupported is returned by Open for backend kinds that have no
// implementation yet.
var ErrNotSupported = errors.New("backend kind not supported")

// Open opens the backend of the given kind. dsnOrPath is the connection
// string for postgres and mysql and the database file for sqlite; maxConns
// bounds the connection pool (DefaultMaxConns if <= 0). Failures to reach
// the database wrap ErrUnavailable.
func Open(ctx context.Context, kind config.BackendKind, dsnOrPath string, maxConns int) (Backend, error) {
	switch kind {
	case config.BackendPostgres:
		b, err := OpenPostgres(ctx, dsnOrPath, maxConns)
		if err != nil {
			return nil, err
		}
		return b, nil
	case config.BackendSQLite:
		b, err := OpenSQLite(ctx, dsnOrPath, maxConns)
		if err != nil {
			return nil, err
		}
		return b, nil
	case config.BackendMySQL:
		b, err := OpenMySQL(ctx, dsnOrPath, maxConns)
		if err != nil {
			return nil, err
		}
		return b, nil
	default:
		return nil, fmt.Errorf("backend: %w: unknown backend kind %q", ErrNotSupported, kind)
	}
}
