package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
)

func runCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// passwd prints verifiers that a policy accepts and that check the password.
func TestPasswdPrintsUsableVerifiers(t *testing.T) {
	out, _, err := runCmd(t, "s3cret pass\n", "passwd")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "s3cret") {
		t.Fatal("passwd printed the password itself")
	}
	policy := "backend: {kind: sqlite, path: x.db}\nanalysts:\n  - name: bob\n" + out + "    budget: {epsilon: 1}\n"
	pol, err := config.Parse([]byte(policy), "passwd-output.yaml")
	if err != nil {
		t.Fatalf("policy with passwd output: %v\n%s", err, policy)
	}
	a, _ := pol.Analyst("bob")
	if a.Password.MySQLNativePassword != auth.MySQLNativeVerifier("s3cret pass") {
		t.Error("mysql_native_password verifier does not match the password")
	}
	if a.Password.CachingSHA2Password != auth.CachingSHA2Verifier("s3cret pass") {
		t.Error("caching_sha2_password verifier does not match the password")
	}
	if _, ok := a.Password.SCRAM(); !ok {
		t.Error("no SCRAM verifier")
	}
	if _, _, err := runCmd(t, "\n", "passwd"); err == nil {
		t.Error("an empty password was accepted")
	}
}

func TestExplainShowsSensitivityAndSpendsNothing(t *testing.T) {
	dir := t.TempDir()
	pol, err := demoPolicyIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, demoPolicy, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, "", "explain", "--config", policyPath, "SELECT diagnosis, COUNT(*), AVG(cost) FROM visits GROUP BY diagnosis")
	if err != nil {
		t.Fatal(err)
	}
	// visits: Linf = 40 per group and C = 40 in all, cost in [0, 1000]; ε =
	// 0.5 over 3 measurements.
	for _, want := range []string{
		"at most 40 row(s) per unit per group and 40 row(s) per unit in all its groups",
		`SELECT "dp_g0"`,
		"group privacy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	// Sensitivities: count C = 40; centred sum C·(hi−lo)/2 = 20000; scale =
	// sensitivity / (0.5/3). Counts under the total bound are weighted
	// (fractional): granular Laplace.
	for _, want := range []string{
		"COUNT(*) count Laplace (granular) 40 0.166667 240",
		"AVG(cost) centered sum Laplace (granular) 20000 0.166667 120000",
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.Join(strings.Fields(line), " "), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("explain output lacks a row %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(pol.Ledger.Path); err == nil {
		t.Error("explain created a ledger")
	}

	_, _, err = runCmd(t, "", "explain", "--config", policyPath, "SELECT * FROM patients")
	if err == nil || !strings.Contains(err.Error(), "42501") {
		t.Errorf("explain of a raw read: %v", err)
	}
}

func TestUnknownCommand(t *testing.T) {
	_, stderr, err := runCmd(t, "", "frobnicate")
	if !errors.Is(err, errUsage) || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("got %v, %q", err, stderr)
	}
}

// `dpproxy version` names dpproxy and its Go version; a command's -h
// prints its flags and is not an error (exit 0); a bad flag is.
func TestVersionAndHelp(t *testing.T) {
	out, _, err := runCmd(t, "", "version")
	if err != nil || !strings.HasPrefix(out, "dpproxy ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %q %v", out, err)
	}
	for _, cmd := range []string{"serve", "demo", "explain", "budget", "passwd"} {
		_, stderr, err := runCmd(t, "", cmd, "-h")
		if !errors.Is(err, errHelp) || !strings.Contains(stderr, "-") {
			t.Errorf("%s -h: %v, printed %q", cmd, err, stderr)
		}
		if _, _, err := runCmd(t, "", cmd, "--no-such-flag"); !errors.Is(err, errUsage) {
			t.Errorf("%s --no-such-flag: %v, want a usage error", cmd, err)
		}
	}
}

// `dpproxy budget --demo` reads the demo's ledger; without one it says
// the demo has not run there.
func TestBudgetOfTheDemo(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runCmd(t, "", "budget", "--demo", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "the demo has not run there yet") {
		t.Errorf("no ledger yet: %v", err)
	}
	pol, err := demoPolicyIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := budget.OpenSQLite(context.Background(), pol.Ledger.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(context.Background(), budget.Charge{Analyst: "analyst", Cost: budget.Cost{Epsilon: 1.5}, Query: "SELECT COUNT(*) FROM patients"}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	out, _, err := runCmd(t, "", "budget", "--demo", "--data-dir", dir)
	if err != nil || !regexp.MustCompile(`(?m)^analyst\s+1\.5\s+50\s+48\.5\s`).MatchString(out) {
		t.Errorf("budget --demo: %v\n%s", err, out)
	}
	if _, _, err := runCmd(t, "", "budget", "--demo", "--config", "x.yaml"); !errors.Is(err, errUsage) {
		t.Errorf("--demo with --config: %v", err)
	}
}
