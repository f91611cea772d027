package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// binary is the dpproxy binary built once for all tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dpproxy-it")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "dpproxy")
	build := exec.Command("go", "build", "-o", binary, "../cmd/dpproxy")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dpproxy:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proxyProcess is a running dpproxy.
type proxyProcess struct {
	cmd    *exec.Cmd
	addr   string
	stdout *syncBuffer
	stderr *syncBuffer
	// exited is closed when the process has exited; waitErr is then its
	// exit status.
	exited  chan struct{}
	waitErr error
	// mysqlAddr is the MySQL front end's address, once logged; mysqlReady
	// is closed then. See mysqlAddress.
	mysqlAddr  string
	mysqlReady chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var listeningAddr = regexp.MustCompile(`msg="dpproxy listening".* addr=(127\.0\.0\.1:\d+)`)

// mysqlListeningAddr matches the MySQL front end's listening line.
var mysqlListeningAddr = regexp.MustCompile(`msg="dpproxy listening" protocol=mysql addr=(127\.0\.0\.1:\d+)`)

// startProxy runs `dpproxy args...` and waits until it listens (p.addr is
// the first address logged: PostgreSQL's when it listens). `dpproxy demo`
// gets --mysql-addr 127.0.0.1:0 unless args set it, so that tests do not
// compete for port 3307. The process is stopped with SIGTERM when the test
// ends.
func startProxy(t testing.TB, args ...string) *proxyProcess {
	t.Helper()
	if len(args) > 0 && args[0] == "demo" && !slices.Contains(args, "--mysql-addr") {
		args = append(args, "--mysql-addr", "127.0.0.1:0")
	}
	p := &proxyProcess{cmd: exec.Command(binary, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{}), mysqlReady: make(chan struct{})}
	p.cmd.Stdout = p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stderr, p.stderr))
		for sc.Scan() {
			if m := mysqlListeningAddr.FindStringSubmatch(sc.Text()); m != nil && p.mysqlAddr == "" {
				p.mysqlAddr = m[1]
				close(p.mysqlReady)
			}
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.addr = <-found:
	case <-p.exited:
		t.Fatalf("dpproxy %v exited before listening: %v\nstderr:\n%s", args, p.waitErr, p.stderr.String())
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("dpproxy %v did not start listening in 60s\nstderr:\n%s", args, p.stderr.String())
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM and waits for a clean exit. A process that has
// already exited (killed by the test) is left alone.
func (p *proxyProcess) stop(t testing.TB) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Errorf("dpproxy did not exit cleanly: %v\nstderr:\n%s", p.waitErr, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		t.Errorf("dpproxy did not stop within 20s of SIGTERM")
	}
}

// waitStdout waits up to 10 s for the process to print want.
func (p *proxyProcess) waitStdout(want string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(p.stdout.String(), want) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (p *proxyProcess) port() string { return p.addr[strings.LastIndex(p.addr, ":")+1:] }

// mysqlAddress waits up to 10 s for the MySQL front end's address.
func (p *proxyProcess) mysqlAddress(t *testing.T) string {
	t.Helper()
	select {
	case <-p.mysqlReady:
		return p.mysqlAddr
	case <-p.exited:
		t.Fatalf("dpproxy exited before the MySQL front end listened\nstderr:\n%s", p.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("dpproxy did not log a MySQL listening address\nstderr:\n%s", p.stderr.String())
	}
	return ""
}

// psqlResult is what one psql run printed.
type psqlResult struct {
	stdout, stderr string
	err            error
}

// psql runs the real psql client against the proxy with the given input
// script (-f -), unaligned tuples-only output and verbose errors.
func psql(t *testing.T, p *proxyProcess, user, password, script string) psqlResult {
	t.Helper()
	return psqlWithEnv(t, p, user, password, script)
}

// psqlWithEnv is psql with extra environment settings (PGSSLMODE=...).
func psqlWithEnv(t *testing.T, p *proxyProcess, user, password, script string, env ...string) psqlResult {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not installed (scripts/test.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", p.port(), "-U", user, "-d", "demo",
		"-v", "VERBOSITY=verbose", "-f", "-")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=10", "PGSSLMODE=prefer")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(script)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return psqlResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// lines splits psql's unaligned output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
