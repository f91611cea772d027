package config

import (
	"net"
	"strconv"

	"gopkg.in/yaml.v3"
)

// What the people who run dpproxy configure: the admin listener and the
// audit log. Neither changes what analysts may ask.

// Admin is the operator's HTTP listener: Prometheus metrics, health, the
// budget page and policy reload. It is off unless Listen is set, and every
// request must log in as User with HTTP basic authentication.
type Admin struct {
	// Listen is host:port ("" = off).
	Listen string `yaml:"listen"`
	// User and Password are the one login the listener accepts; Password
	// holds a scram_sha_256 verifier (`dpproxy passwd`).
	User     string    `yaml:"user"`
	Password Verifiers `yaml:"password"`
}

// Audit is the audit log: one JSON line per statement, rotated by size
// (off unless Path is set).
type Audit struct {
	// Path of the current log file; Load resolves a relative one against
	// the policy file's directory. Rotated files sit beside it with a
	// timestamp in their names.
	Path string `yaml:"path"`
	// MaxSizeMB is the size at which the file is rotated (default
	// DefaultAuditMaxSizeMB), MaxFiles how many rotated files are kept
	// (default DefaultAuditMaxFiles; older ones are deleted).
	MaxSizeMB int `yaml:"max_size_mb"`
	MaxFiles  int `yaml:"max_files"`
	// Fsync is AuditFsyncNever (the default: each line is written to the
	// file when its statement ends, so it survives dpproxy crashing but
	// not the machine) or AuditFsyncAlways (each line is also fsynced
	// before the next statement's answer can be logged).
	Fsync string `yaml:"fsync"`
}

// Audit log defaults and fsync policies.
const (
	DefaultAuditMaxSizeMB = 100
	DefaultAuditMaxFiles  = 10
	AuditFsyncNever       = "never"
	AuditFsyncAlways      = "always"
)

var (
	adminKeys = []string{"listen", "user", "password"}
	auditKeys = []string{"path", "max_size_mb", "max_files", "fsync"}
)

func (d *decoder) admin(n *yaml.Node, path string, a *Admin) {
	d.mapping(n, path, adminKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "listen":
			d.str(v, path, &a.Listen)
		case "user":
			d.str(v, path, &a.User)
		case "password":
			if v.Kind == yaml.ScalarNode && !isNull(v) {
				d.failAt(v, path, "looks like a plaintext password; the policy stores verifiers, never passwords: run `dpproxy passwd` and paste its scram_sha_256 line")
				return
			}
			d.mapping(v, path, passwordKeys, func(key string, v *yaml.Node, path string) {
				if key == "scram_sha_256" {
					d.str(v, path, &a.Password.SCRAMSHA256)
				} else {
					d.failAt(v, path, "the admin listener logs in over HTTP with a scram_sha_256 verifier only; remove this key")
				}
			})
		}
	})
}

func (d *decoder) audit(n *yaml.Node, path string, a *Audit) {
	d.mapping(n, path, auditKeys, func(key string, v *yaml.Node, path string) {
		switch key {
		case "path":
			d.str(v, path, &a.Path)
		case "max_size_mb":
			d.int(v, path, &a.MaxSizeMB)
		case "max_files":
			d.int(v, path, &a.MaxFiles)
		case "fsync":
			d.str(v, path, &a.Fsync)
		}
	})
}

func (d *decoder) validateOperations(p *Policy, baseDir string) {
	a := &p.Admin
	if d.has("admin") {
		if a.Listen == "" {
			d.errorf("admin", "admin.listen is required: the host:port the admin listener serves (e.g. \"127.0.0.1:9187\"); leave admin out to turn it off")
		} else if _, port, err := net.SplitHostPort(a.Listen); err != nil {
			d.errorf("admin.listen", "%q is not a host:port address; expected e.g. \"127.0.0.1:9187\"", a.Listen)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			d.errorf("admin.listen", "%q has no numeric port; expected e.g. \"127.0.0.1:9187\"", a.Listen)
		}
		if a.User == "" {
			d.errorf("admin", "admin.user is required: every admin request logs in (HTTP basic authentication)")
		}
		refused := !d.ok("admin.password") || !d.ok("admin.password.mysql_native_password") || !d.ok("admin.password.caching_sha2_password")
		switch {
		case refused:
		case a.Password.SCRAMSHA256 == "":
			d.errorf("admin", "admin.password is required: a scram_sha_256 verifier (run `dpproxy passwd`)")
		default:
			if _, ok := a.Password.SCRAM(); !ok {
				d.errorf("admin.password.scram_sha_256", "is not a SCRAM-SHA-256 verifier; run `dpproxy passwd` and paste its scram_sha_256 line")
			}
		}
	}
	u := &p.Audit
	if !d.has("audit") {
		return
	}
	if u.Path == "" {
		d.errorf("audit", "audit.path is required: the file the audit log is written to; leave audit out to turn it off")
	}
	u.Path = resolve(baseDir, u.Path)
	for _, f := range []struct {
		path     string
		dst      *int
		def, max int
	}{
		{"audit.max_size_mb", &u.MaxSizeMB, DefaultAuditMaxSizeMB, 1 << 20},
		{"audit.max_files", &u.MaxFiles, DefaultAuditMaxFiles, 10000},
	} {
		if !d.has(f.path) {
			*f.dst = f.def
		} else if *f.dst < 1 || *f.dst > f.max {
			d.errorf(f.path, "must be a whole number from 1 to %d, got %d", f.max, *f.dst)
		}
	}
	switch u.Fsync {
	case "":
		u.Fsync = AuditFsyncNever
	case AuditFsyncNever, AuditFsyncAlways:
	default:
		d.errorf("audit.fsync", "unknown fsync policy %q%s; expected %s or %s", u.Fsync, caseHint(u.Fsync, []string{AuditFsyncNever, AuditFsyncAlways}), AuditFsyncNever, AuditFsyncAlways)
	}
}
