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

// Open opens the backend cfg describes: its kind, its DSN (postgres,
// mysql) or file (sqlite), its pool's size (DefaultMaxConns if <= 0) and,
// for postgres and mysql, its pipeline lanes. Failures to reach the database wrap
// ErrUnavailable.
func Open(ctx context.Context, cfg config.Backend) (Backend, error) {
	kind, maxConns, dsnOrPath := cfg.Kind, cfg.MaxConns, cfg.DSN
	if kind == config.BackendSQLite {
		dsnOrPath = cfg.Path
	}
	switch kind {
	case config.BackendPostgres:
		b, err := OpenPostgres(ctx, dsnOrPath, maxConns)
		if err != nil {
			return nil, err
		}
		if cfg.PipelineLanes != nil {
			b.setPipelineLanes(*cfg.PipelineLanes)
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
		if cfg.PipelineLanes != nil {
			b.setPipelineLanes(*cfg.PipelineLanes)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("backend: %w: unknown backend kind %q", ErrNotSupported, kind)
	}
}
