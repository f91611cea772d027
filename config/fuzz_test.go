package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds any bytes to the policy loader. It never panics; a
// refusal is a *ValidationError whose every error names a line, or a
// read error for the whole file; an accepted policy is complete (every
// default filled in, every protected table with a privacy unit and
// contribution bounds).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	bad, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, path := range append(files, bad...) {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("listen: {tls: required}\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("backend: &a {kind: sqlite, path: x}\nledger: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				if len(ve.Errors) == 0 {
					t.Fatalf("a ValidationError without errors: %v", err)
				}
			}
			return
		}
		if p.Listen.MaxMessageSize < MinMessageSize || p.Listen.MaxConnections < 1 || p.Defaults.Neighbouring == "" {
			t.Fatalf("accepted policy with unset defaults: %+v", p.Listen)
		}
		for _, tbl := range p.ProtectedTables {
			if tbl.PrivacyUnit == "" || tbl.MaxGroupsPerUnit < 1 || tbl.MaxRowsPerUnit < 1 {
				t.Fatalf("accepted protected table %q without its bounds: %+v", tbl.Name, tbl)
			}
		}
		for _, a := range p.Analysts {
			if a.Budget.Epsilon < 0 || a.Budget.Delta < 0 || a.Budget.Delta >= 1 {
				t.Fatalf("analyst %q with budget %v", a.Name, a.Budget)
			}
		}
	})
}
