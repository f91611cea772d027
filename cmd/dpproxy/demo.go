package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/demo"
)

//go:embed demo_policy.yaml
var demoPolicy []byte

func defaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "dpproxy")
	}
	return filepath.Join(dir, "dpproxy")
}

// demoPolicyIn returns the built-in demo policy with its files in dataDir.
func demoPolicyIn(dataDir string) (*config.Policy, error) {
	pol, err := config.Parse(demoPolicy, "demo_policy.yaml")
	if err != nil {
		return nil, fmt.Errorf("built-in demo policy: %w", err)
	}
	pol.Backend.Path = filepath.Join(dataDir, "demo.db")
	pol.Ledger.Path = filepath.Join(dataDir, "demo-ledger.db")
	return pol, nil
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "directory for the demo database and its budget ledger")
	pgAddr := fs.String("pg-addr", "127.0.0.1:5433", "PostgreSQL listen address")
	mysqlAddr := fs.String("mysql-addr", "127.0.0.1:3307", "MySQL listen address (\"\" turns the MySQL front end off)")
	resetBudget := fs.Bool("reset-budget", false, "delete the demo ledger first, restoring the analyst's full budget")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	pol, err := demoPolicyIn(*dataDir)
	if err != nil {
		return err
	}
	pol.Listen.Postgres = *pgAddr
	pol.Listen.MySQL = *mysqlAddr
	if *resetBudget {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(pol.Ledger.Path + suffix); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("resetting the demo budget: %w", err)
			}
		}
	}
	start := time.Now()
	if err := demo.GenerateSQLite(ctx, pol.Backend.Path); err != nil {
		return fmt.Errorf("preparing demo data: %w", err)
	}
	return serve(ctx, pol, nil, func(addrs map[string]net.Addr) {
		connect := ""
		if a, ok := addrs["postgres"]; ok {
			connect += fmt.Sprintf("Connect with psql:\n  psql \"postgres://analyst:analyst@127.0.0.1:%d/demo\"\n", a.(*net.TCPAddr).Port)
		}
		if a, ok := addrs["mysql"]; ok {
			connect += fmt.Sprintf("Connect with the mysql (or mariadb) client:\n  mysql -h 127.0.0.1 -P %d -u analyst -panalyst demo\n", a.(*net.TCPAddr).Port)
		}
		fmt.Fprintf(stdout, `dpproxy demo is ready (%.1fs): data in %s

%s
Try:
  SELECT COUNT(*) FROM patients;                        -- noisy, close to 10000
  SELECT region, COUNT(*), AVG(income) FROM patients GROUP BY region;
  SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY 2 DESC;
  SELECT region, MEDIAN(age) FROM patients GROUP BY region;   -- DP quantiles
  SET dpproxy.intervals = notice;                       -- 95 %% intervals with each answer
  SELECT * FROM clinics;                                -- public table, read in full
  SELECT * FROM patients;                               -- rejected: raw rows never leave

The analyst's budget (ε = 50) allows about 100 queries at ε = 0.5 each
(restart with --reset-budget to restore it). Stop with Ctrl-C.
`, time.Since(start).Seconds(), *dataDir, connect)
	})
}
