package auditlog

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Line is one audit line as JSON carries it.
type Line struct {
	Time     time.Time `json:"time"`
	Analyst  string    `json:"analyst"`
	Client   string    `json:"client"`
	Protocol string    `json:"protocol"`
	// Statement is the text as the client sent it (a prepared statement's
	// with its parameters).
	Statement string `json:"statement"`
	Kind      string `json:"kind"`
	// Decision is session.Statement.Outcome: answered, budget_exhausted,
	// refused or failed.
	Decision   string  `json:"decision"`
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Rows       int     `json:"rows"`
	CacheHit   bool    `json:"cache_hit"`
	DurationMS float64 `json:"duration_ms"`
	SQLState   string  `json:"sqlstate,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// LineOf is the audit line of a statement.
func LineOf(st session.Statement) Line {
	return Line{
		Time: st.Time.UTC(), Analyst: st.Analyst, Client: st.Client, Protocol: st.Protocol,
		Statement: st.Text, Kind: st.Kind, Decision: st.Outcome(),
		Epsilon: st.Charged.Epsilon, Delta: st.Charged.Delta, Rows: st.Rows, CacheHit: st.CacheHit,
		DurationMS: float64(st.Duration.Microseconds()) / 1000, SQLState: string(st.SQLState), Error: st.Error,
	}
}

// Log is an open audit log, safe for concurrent use.
type Log struct {
	mu     sync.Mutex
	out    *lumberjack.Logger
	path   string
	fsync  bool
	synced *os.File // the current file, for fsync (reopened after rotation)
	errors atomic.Int64
}

// Open opens (or creates, with its directory) the audit log cfg names.
func Open(cfg config.Audit) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, fmt.Errorf("auditlog: creating the directory of %s: %w", cfg.Path, err)
	}
	l := &Log{
		out:   &lumberjack.Logger{Filename: cfg.Path, MaxSize: cfg.MaxSizeMB, MaxBackups: cfg.MaxFiles},
		path:  cfg.Path,
		fsync: cfg.Fsync == config.AuditFsyncAlways,
	}
	// Fail at start, not at the first statement, when the file cannot be
	// written.
	f, err := os.OpenFile(cfg.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auditlog: %w", err)
	}
	f.Close()
	return l, nil
}

// Record writes the statement's line.
func (l *Log) Record(st session.Statement) {
	b, err := json.Marshal(LineOf(st))
	if err == nil {
		b = append(b, '\n')
		l.mu.Lock()
		_, err = l.out.Write(b)
		if err == nil && l.fsync {
			err = l.syncLocked()
		}
		l.mu.Unlock()
	}
	if err != nil {
		l.errors.Add(1)
		slog.Error("audit log: a statement's line was not written", "path", l.path, "analyst", st.Analyst, "err", err)
	}
}

// syncLocked fsyncs the current file: through a descriptor of its own,
// reopened when rotation replaced the file (fsync flushes the file, not
// the descriptor).
func (l *Log) syncLocked() error {
	current, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	if l.synced != nil {
		if held, err := l.synced.Stat(); err != nil || !os.SameFile(held, current) {
			l.synced.Close()
			l.synced = nil
		}
	}
	if l.synced == nil {
		if l.synced, err = os.Open(l.path); err != nil {
			return err
		}
	}
	return l.synced.Sync()
}

// Errors is the number of lines that could not be written.
func (l *Log) Errors() int64 { return l.errors.Load() }

// Close flushes and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.synced != nil {
		l.synced.Close()
		l.synced = nil
	}
	return l.out.Close()
}
