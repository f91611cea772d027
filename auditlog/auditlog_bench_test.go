package auditlog

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
)

// What the audit log adds to each statement (one JSON line, one write;
// with fsync, one disk flush).
func BenchmarkRecord(b *testing.B) {
	for _, fsync := range []string{config.AuditFsyncNever, config.AuditFsyncAlways} {
		b.Run("fsync="+fsync, func(b *testing.B) {
			l, err := Open(config.Audit{Path: filepath.Join(b.TempDir(), "audit.jsonl"), MaxSizeMB: 100, MaxFiles: 2, Fsync: fsync})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			st := session.Statement{Time: time.Now(), Analyst: "ana", Client: "127.0.0.1:50000", Protocol: "postgres", Text: "SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis", Kind: session.KindDP, Charged: budget.Cost{Epsilon: 0.1}, Rows: 12, Duration: 3 * time.Millisecond}
			b.ReportAllocs()
			for b.Loop() {
				l.Record(st)
			}
		})
	}
}
