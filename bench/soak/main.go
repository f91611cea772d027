// Command soak runs the abuse patterns of issue 11 against a dpproxy it
// starts on loopback, and prints its resident memory, open file
// descriptors and a control client's latency before, during and after each:
//
//   - half-open flood: many TCP connections on both protocols that never
//     send a byte;
//   - oversized length headers: unauthenticated clients announcing the
//     largest packets a header can (16 MiB MySQL packets, 2 GiB
//     PostgreSQL startup packets) and the largest the server accepts
//     before login, then trickling;
//   - slow readers: clients that send a query with a 40 MB result and never
//     read it;
//   - huge results: cross joins of a public table, stopped by the result
//     caps;
//   - failed logins: wrong passwords as fast as the server answers.
//
// Everything targets 127.0.0.1 only, and every phase is bounded in count
// and time; the run takes about a minute.
//
//	go run ./bench/soak --dpproxy /path/to/dpproxy [--halfopen 1000]
//
// bench/soak.sh builds the binary and runs this.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpproxy/dpproxy/demo"
	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

var (
	binary   = flag.String("dpproxy", "", "the dpproxy binary to run (required)")
	halfOpen = flag.Int("halfopen", 1000, "connections in the half-open flood (both protocols)")
	oversize = flag.Int("oversized", 200, "connections announcing oversized packets")
	slowN    = flag.Int("slow", 5, "clients that read their result too slowly")
	hugeN    = flag.Int("huge", 4, "clients asking for a huge result")
	loginFor = flag.Duration("logins", 8*time.Second, "how long to send wrong passwords")
)

// listenBlock replaces the demo policy's listen section: short timeouts
// so that slow readers are cut off within the run, result caps, and a
// short login back-off so that the run ends in time.
const listenBlock = `listen:
  postgres: 127.0.0.1:0
  mysql: 127.0.0.1:0
  statement_timeout: 10s
  write_timeout: 10s
  max_result_rows: 200000
  max_result_bytes: 67108864
  login_backoff: 100ms
  login_backoff_max: 2s
`

func run() error {
	flag.Parse()
	if *binary == "" {
		return errors.New("--dpproxy is required")
	}
	dir, err := os.MkdirTemp("", "dpproxy-soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	if err := demo.GenerateSQLite(ctx, filepath.Join(dir, "demo.db")); err != nil {
		return err
	}
	policy, err := os.ReadFile("cmd/dpproxy/demo_policy.yaml")
	if err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	text := strings.Replace(string(policy), "listen:\n  postgres: 127.0.0.1:5433\n", listenBlock, 1)
	if text == string(policy) {
		return errors.New("the demo policy's listen section changed; update listenBlock")
	}
	policyPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyPath, []byte(text), 0o600); err != nil {
		return err
	}
	srv, err := start(policyPath)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("dpproxy pid %d, PostgreSQL %s, MySQL %s\n\n", srv.cmd.Process.Pid, srv.pg, srv.my)

	ctl, err := newControl(ctx, srv.pg)
	if err != nil {
		return err
	}
	defer ctl.stop()
	s := &soak{srv: srv, ctl: ctl}
	s.phase("baseline", 2*time.Second, nil)
	s.phase(fmt.Sprintf("half-open flood (%d connections)", *halfOpen), 3*time.Second, s.halfOpenFlood)
	s.phase(fmt.Sprintf("oversized length headers (%d)", *oversize), 3*time.Second, s.oversizedHeaders)
	s.phase(fmt.Sprintf("slow readers (%d)", *slowN), 2*time.Second, s.slowReaders)
	s.phase(fmt.Sprintf("huge results (%d)", *hugeN), 2*time.Second, s.hugeResults)
	s.phase("failed logins", *loginFor, s.failedLogins)
	s.phase("after", 2*time.Second, nil)
	s.report()
	return nil
}

// server is the dpproxy under test.
type server struct {
	cmd    *exec.Cmd
	pg, my string
}

var listening = regexp.MustCompile(`protocol=(\w+) addr=(\S+)`)

func start(policy string) (*server, error) {
	cmd := exec.Command(*binary, "serve", "--config", policy)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	sc := bufio.NewScanner(stderr)
	deadline := time.Now().Add(30 * time.Second)
	for (s.pg == "" || s.my == "") && time.Now().Before(deadline) && sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			if m[1] == "postgres" {
				s.pg = m[2]
			} else {
				s.my = m[2]
			}
		}
	}
	go io.Copy(io.Discard, stderr)
	if s.pg == "" || s.my == "" {
		s.stop()
		return nil, errors.New("dpproxy did not start listening")
	}
	for _, a := range []string{s.pg, s.my} {
		if host, _, _ := net.SplitHostPort(a); !net.ParseIP(host).IsLoopback() {
			s.stop()
			return nil, fmt.Errorf("refusing to soak %s: loopback only", a)
		}
	}
	return s, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
	}
}

// rssKB and fds read the server's resident memory and open descriptors.
func (s *server) rssKB() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

func (s *server) fds() int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	return len(entries)
}

// control is a logged-in client querying a public table every 20 ms.
type control struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	lat    []time.Duration
	errs   int
}

func newControl(ctx context.Context, addr string) (*control, error) {
	conn, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+addr+"/demo?sslmode=disable")
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	c := &control{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer conn.Close(context.Background())
		for cctx.Err() == nil {
			begin := time.Now()
			var name string
			qctx, qcancel := context.WithTimeout(cctx, 5*time.Second)
			err := conn.QueryRow(qctx, "SELECT name FROM clinics ORDER BY clinic_id LIMIT 1").Scan(&name)
			qcancel()
			c.mu.Lock()
			if err != nil && cctx.Err() == nil {
				c.errs++
			} else {
				c.lat = append(c.lat, time.Since(begin))
			}
			c.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return c, nil
}

// take returns the latencies and errors since the last take.
func (c *control) take() ([]time.Duration, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lat, errs := c.lat, c.errs
	c.lat, c.errs = nil, 0
	return lat, errs
}

func (c *control) stop() { c.cancel(); <-c.done }

type row struct {
	name                       string
	rssBefore, rssPeak, rssEnd int64
	fdBefore, fdPeak, fdEnd    int
	p50, p99                   time.Duration
	ctlErrs                    int
	note                       string
}

type soak struct {
	srv  *server
	ctl  *control
	rows []row
}

// phase runs load (nil: nothing) while sampling the server every 100 ms
// for at least hold, and records the figures.
func (s *soak) phase(name string, hold time.Duration, load func(ctx context.Context) string) {
	r := row{name: name, rssBefore: s.srv.rssKB(), fdBefore: s.srv.fds()}
	r.rssPeak, r.fdPeak = r.rssBefore, r.fdBefore
	s.ctl.take()
	ctx, cancel := context.WithCancel(context.Background())
	notes := make(chan string, 1)
	go func() {
		if load == nil {
			notes <- ""
			return
		}
		notes <- load(ctx)
	}()
	end := time.Now().Add(hold)
	var note string
	loadDone := false
	for !loadDone || time.Now().Before(end) {
		select {
		case note = <-notes:
			loadDone = true
		case <-time.After(100 * time.Millisecond):
		}
		r.rssPeak = max(r.rssPeak, s.srv.rssKB())
		r.fdPeak = max(r.fdPeak, s.srv.fds())
		if time.Now().After(end.Add(60 * time.Second)) {
			cancel()
		}
	}
	cancel()
	time.Sleep(500 * time.Millisecond)
	r.rssEnd, r.fdEnd = s.srv.rssKB(), s.srv.fds()
	lat, errs := s.ctl.take()
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	r.ctlErrs, r.note = errs, note
	s.rows = append(s.rows, r)
	fmt.Fprintf(os.Stderr, "soak: %s done: %s\n", name, note)
}

func (s *soak) report() {
	fmt.Println("| phase | RSS before → peak → after (MB) | fds before → peak → after | control p50 / p99 (ms) | control errors | notes |")
	fmt.Println("|---|---|---|---|---|---|")
	mb := func(kb int64) string { return strconv.FormatFloat(float64(kb)/1024, 'f', 1, 64) }
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
	for _, r := range s.rows {
		fmt.Printf("| %s | %s → %s → %s | %d → %d → %d | %s / %s | %d | %s |\n", r.name,
			mb(r.rssBefore), mb(r.rssPeak), mb(r.rssEnd), r.fdBefore, r.fdPeak, r.fdEnd, ms(r.p50), ms(r.p99), r.ctlErrs, r.note)
	}
}

// halfOpenFlood opens connections that never send anything, holds them
// for 3 s and closes them.
func (s *soak) halfOpenFlood(ctx context.Context) string {
	var conns []net.Conn
	refused := 0
	for i := 0; i < *halfOpen && ctx.Err() == nil; i++ {
		addr := s.srv.pg
		if i%2 == 1 {
			addr = s.srv.my
		}
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, nc)
	}
	time.Sleep(3 * time.Second)
	// Count the connections the server has already closed (refused over
	// max_handshakes, answered with an error).
	closed := 0
	for _, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(time.Millisecond))
		buf := make([]byte, 512)
		for {
			_, err := nc.Read(buf)
			if err == nil {
				continue
			}
			if !isTimeout(err) {
				closed++
			}
			break
		}
		nc.Close()
	}
	return fmt.Sprintf("%d opened (%d refused by the OS); %d closed by dpproxy (over max_handshakes) while held", len(conns), refused, closed)
}

// oversizedHeaders sends, before logging in, the largest length headers:
// a 16 MiB MySQL packet and a 2 GiB PostgreSQL startup packet (both
// refused at once), and the largest each accepts before login (16 KiB,
// 10,000 bytes) followed by a trickle of 8 bytes, held open.
func (s *soak) oversizedHeaders(ctx context.Context) string {
	var held []net.Conn
	var refusedAtOnce atomic.Int64
	for i := 0; i < *oversize && ctx.Err() == nil; i++ {
		var nc net.Conn
		var err error
		switch i % 4 {
		case 0, 1: // MySQL: read the handshake, then the header
			nc, err = net.DialTimeout("tcp", s.srv.my, 2*time.Second)
			if err != nil {
				continue
			}
			nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			var hdr [4]byte
			if _, err := io.ReadFull(nc, hdr[:]); err != nil {
				nc.Close()
				continue
			}
			io.CopyN(io.Discard, nc, int64(hdr[0])|int64(hdr[1])<<8|int64(hdr[2])<<16)
			size := 16<<20 - 1
			if i%4 == 1 {
				size = 16 << 10
			}
			nc.Write([]byte{byte(size), byte(size >> 8), byte(size >> 16), 1, 1, 2, 3, 4, 5, 6, 7, 8})
		default: // PostgreSQL startup packet
			nc, err = net.DialTimeout("tcp", s.srv.pg, 2*time.Second)
			if err != nil {
				continue
			}
			size := uint32(1<<31 - 1)
			if i%4 == 3 {
				size = 10000
			}
			nc.Write([]byte{byte(size >> 24), byte(size >> 16), byte(size >> 8), byte(size), 0, 3, 0, 0, 'u', 's', 'e', 'r'})
		}
		held = append(held, nc)
	}
	time.Sleep(2 * time.Second)
	for _, nc := range held {
		nc.SetReadDeadline(time.Now().Add(time.Millisecond))
		buf := make([]byte, 256)
		if _, err := nc.Read(buf); err != nil && !isTimeout(err) {
			refusedAtOnce.Add(1)
		} else if err == nil {
			// an error message arrived: the server closes after it
			refusedAtOnce.Add(1)
		}
	}
	rss := s.srv.rssKB()
	for _, nc := range held {
		nc.Close()
	}
	return fmt.Sprintf("%d sent; %d answered and closed at once; RSS with the rest held: %.1f MB", len(held), refusedAtOnce.Load(), float64(rss)/1024)
}

// slowReaders send a query with a 12 MB result and read it at 64 KB a
// second; the statement timeout (10 s here, plus 5 s to deliver an
// error) covers sending, so the server cuts each off.
func (s *soak) slowReaders(ctx context.Context) string {
	var wg sync.WaitGroup
	var cut, finished atomic.Int64
	begin := time.Now()
	for i := 0; i < *slowN; i++ {
		c, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+s.srv.pg+"/demo?sslmode=disable")
		if err != nil {
			return "connect: " + err.Error()
		}
		msg, _ := (&pgproto3.Query{String: "SELECT a.name, b.name, c.name FROM clinics a, clinics b, clinics c, clinics d LIMIT 120000"}).Encode(nil)
		nc := c.PgConn().Conn()
		nc.Write(msg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			buf := make([]byte, 16<<10)
			var got []byte
			for {
				nc.SetReadDeadline(time.Now().Add(30 * time.Second))
				n, err := nc.Read(buf)
				got = append(got[max(0, len(got)-64):], buf[:n]...)
				if err != nil {
					if !isTimeout(err) {
						cut.Add(1)
					}
					return
				}
				if strings.Contains(string(got), "SELECT 120000") {
					finished.Add(1) // read to the end within the timeout
					return
				}
				time.Sleep(250 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%d of %d cut off by the server, %d read to the end (the clients read what the kernel had buffered for %.0f s)", cut.Load(), *slowN, finished.Load(), time.Since(begin).Seconds())
}

// hugeResults ask for 25⁵ = 9.8 million rows at once; the result caps stop
// each on the server.
func (s *soak) hugeResults(ctx context.Context) string {
	var wg sync.WaitGroup
	var capped atomic.Int64
	for i := 0; i < *hugeN; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, "postgres://analyst:analyst@"+s.srv.pg+"/demo?sslmode=disable")
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			rows, err := c.Query(ctx, "SELECT a.name, b.name, c.name, d.name, e.name FROM clinics a, clinics b, clinics c, clinics d, clinics e")
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
			}
			if err != nil && strings.Contains(err.Error(), "54000") {
				capped.Add(1)
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%d of %d stopped by the result caps (54000; the others by the statement timeout)", capped.Load(), *hugeN)
}

// failedLogins send wrong passwords from 8 clients on both protocols.
func (s *soak) failedLogins(ctx context.Context) string {
	var attempts atomic.Int64
	end := time.Now().Add(*loginFor)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				if w%2 == 0 {
					c, err := pgx.Connect(ctx, "postgres://analyst:wrong@"+s.srv.pg+"/demo?sslmode=disable&connect_timeout=30")
					if err == nil {
						c.Close(ctx)
					}
				} else {
					db, _ := sql.Open("mysql", "analyst:wrong@tcp("+s.srv.my+")/demo?timeout=30s")
					db.PingContext(ctx)
					db.Close()
				}
				attempts.Add(1)
			}
		}()
	}
	wg.Wait()
	secs := loginFor.Seconds()
	return fmt.Sprintf("%d wrong passwords in %.0f s (%.1f/s; without throttling: thousands per second)", attempts.Load(), secs, float64(attempts.Load())/secs)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
