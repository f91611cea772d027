// Command dpproxy is a differential-privacy proxy for SQL databases.
//
//	dpproxy demo     [--data-dir DIR] [--pg-addr ADDR] [--reset-budget]
//	dpproxy serve    --config FILE
//	dpproxy explain  [--config FILE] "SQL"
//	dpproxy passwd   [--password-stdin]
//	dpproxy budget   --config FILE | --demo [--data-dir DIR]
//	dpproxy init     --dsn URL | --sqlite FILE [--public t1,t2] [--out FILE]
//	dpproxy check    --config FILE
//	dpproxy audit    closeness --config FILE --table T | --csv FILE --quasi a,b --sensitive s --n N --epsilon E [--distance emd|variational|kl]
//	dpproxy version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
)

const usage = `dpproxy — a differential-privacy proxy for SQL databases

Usage:
  dpproxy demo    [--data-dir DIR] [--pg-addr ADDR] [--reset-budget]
                  run on a built-in demo dataset (embedded SQLite)
  dpproxy serve   --config FILE
                  run against the backend named in the policy file
  dpproxy explain [--config FILE] "SQL"
                  show the backend SQL, sensitivities and noise of a query, without spending budget
                  (the demo's policy without --config)
  dpproxy passwd  [--password-stdin]
                  print the password verifiers to paste into a policy file
  dpproxy budget  --config FILE | --demo [--data-dir DIR]
                  show every analyst's spent and remaining budget
  dpproxy init    --dsn URL | --sqlite FILE [--public t1,t2] [--out FILE]
                  draft a policy from a live schema
  dpproxy check   --config FILE
                  check a policy against its database: tables, columns, types,
                  a read-only backend role, what bounds and limits cut
  dpproxy audit   closeness --config FILE --table T | --csv FILE
                  --quasi a,b --sensitive s --n N --epsilon E [--distance emd|variational|kl]
                  check a table for (n, ε)-closeness: every class of records sharing
                  quasi-identifier values is within ε of a superset of N records
  dpproxy version
                  print dpproxy's version, commit and Go version

Run "dpproxy COMMAND -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv("DPPROXY_CPUPROFILE"); path != "" {
		// For profiling (bench/): a CPU profile of the whole run.
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	if path := os.Getenv("DPPROXY_ALLOCPROFILE"); path != "" {
		// For profiling (bench/): every allocation of the run, written at
		// its end.
		defer writeProfile("allocs", path)
	}
	if path := os.Getenv("DPPROXY_BLOCKPROFILE"); path != "" {
		// For profiling (bench/): where goroutines waited (channels,
		// locks, selects), written at the run's end.
		goruntime.SetBlockProfileRate(1)
		defer writeProfile("block", path)
	}
	if path := os.Getenv("DPPROXY_MUTEXPROFILE"); path != "" {
		// For profiling (bench/): contended locks, written at the run's end.
		goruntime.SetMutexProfileFraction(1)
		defer writeProfile("mutex", path)
	}
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errHelp) {
			return // a command's -h: its flags were printed
		}
		if errors.Is(err, errCheckFailed) || errors.Is(err, errAuditFailed) {
			os.Exit(1) // the report says why
		}
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "dpproxy:", err)
		}
		pprof.StopCPUProfile()
		os.Exit(2)
	}
}

// writeProfile writes the named runtime profile, gathered since the
// start, to path.
func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup(name).WriteTo(f, 0)
}

var (
	errUsage = errors.New("usage")
	// errHelp is a command's -h: its usage is printed and dpproxy exits 0.
	errHelp = errors.New("help")
)

// parseFlags parses a command's flags: errHelp for -h (after printing
// them), errUsage for a bad flag (after saying why).
func parseFlags(fs *flag.FlagSet, args []string) error {
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	case err != nil:
		return errUsage
	}
	return nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()})))
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "explain":
		return runExplain(ctx, args[1:], stdout, stderr)
	case "passwd":
		return runPasswd(args[1:], stdin, stdout, stderr)
	case "budget":
		return runBudget(ctx, args[1:], stdout, stderr)
	case "init":
		return runInit(ctx, args[1:], stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr)
	case "audit":
		return runAudit(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "dpproxy: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}

func logLevel() slog.Level {
	if os.Getenv("DPPROXY_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// versionLine is dpproxy's version as the build recorded it: the module
// version (or "devel"), the commit and its time, and the Go version.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dpproxy (no build information)"
	}
	version := info.Main.Version
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	line := "dpproxy " + version
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " commit " + rev
		if settings["vcs.modified"] == "true" {
			line += " (modified)"
		}
		if at := settings["vcs.time"]; at != "" {
			line += " " + at
		}
	}
	return line + " " + info.GoVersion
}
