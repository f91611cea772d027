package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/auditlog"
	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/demo"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var adminListening = regexp.MustCompile(`msg="admin listening" addr=(127\.0\.0\.1:\d+)`)

// adminYAML is a policy's admin section: a listener on a free port, user
// ops, password opspw.
func adminYAML(t testing.TB) string {
	t.Helper()
	v, err := auth.NewSCRAMVerifier("opspw")
	if err != nil {
		t.Fatal(err)
	}
	return "admin:\n  listen: 127.0.0.1:0\n  user: ops\n  password:\n    scram_sha_256: " + strconv.Quote(v.String()) + "\n"
}

// adminAddress is the address dpproxy's admin listener logged.
func (p *proxyProcess) adminAddress(t testing.TB) string {
	t.Helper()
	m := adminListening.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no admin listening line:\n%s", p.stderr.String())
	}
	return m[1]
}

// operatedProxy is `dpproxy serve` on the demo data with the admin
// listener (user ops, password opspw) and the audit log on.
func operatedProxy(t *testing.T) (p *proxyProcess, adminURL, auditPath string) {
	t.Helper()
	return operatedProxyWith(t, "")
}

// operatedProxyWith is operatedProxy with listen settings added to its
// policy (YAML lines indented under listen:).
func operatedProxyWith(t *testing.T, listen string) (p *proxyProcess, adminURL, auditPath string) {
	t.Helper()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "demo.db")
	if err := demo.GenerateSQLite(context.Background(), dbPath); err != nil {
		t.Fatal(err)
	}
	auditPath = filepath.Join(dir, "audit", "audit.jsonl")
	ops := "backend:\n  kind: sqlite\n  path: " + strconv.Quote(dbPath) + "\n" + adminYAML(t) +
		"audit:\n  path: " + strconv.Quote(auditPath) + "\n"
	if listen != "" {
		ops = "listen:\n" + listen + ops
	}
	policy := writeMySQLPolicy(t, ops, 10)
	p = startProxy(t, "serve", "--config", policy, "--pg-addr", "127.0.0.1:0", "--mysql-addr", "127.0.0.1:0")
	return p, "http://" + p.adminAddress(t), auditPath
}

// get fetches an admin path as ops (password "" sends no credentials).
func get(t *testing.T, url, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		req.SetBasicAuth("ops", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// scrape fetches and parses the admin listener's /metrics as ops.
func scrape(t *testing.T, adminURL string) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := get(t, adminURL+"/metrics", "opspw")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families
}

// metricValue sums a family's samples whose labels include want.
func metricValue(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	total := 0.0
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// A scripted session through psql and the mariadb client, then a scrape:
// the metrics count what was sent — statements by protocol, kind and
// outcome, ε charged, the analyst's budget, cache hits, failed logins —
// and the audit log has one line per statement with its decision.
func TestMetricsAndAuditLog(t *testing.T) {
	p, adminURL, auditPath := operatedProxy(t)
	for _, tc := range []struct {
		path, password string
		status         int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "wrong", http.StatusUnauthorized},
		{"/healthz", "opspw", http.StatusOK},
		{"/readyz", "opspw", http.StatusOK},
	} {
		if status, body := get(t, adminURL+tc.path, tc.password); status != tc.status {
			t.Errorf("GET %s with password %q: %d %s, want %d", tc.path, tc.password, status, body, tc.status)
		}
	}
	r := psql(t, p, "analyst", "analyst", `SELECT COUNT(*) FROM patients;
SELECT COUNT(*) FROM patients;
SELECT clinic_id FROM clinics;
SELECT * FROM patients;
SET dpproxy.epsilon = 0.25;
SELEC 1;
SELECT relname FROM pg_catalog.pg_class LIMIT 1;
SELECT AVG(age) FROM patients;
`)
	if !strings.Contains(r.stderr, "42501") || !strings.Contains(r.stderr, "42601") {
		t.Fatalf("psql: %v\n%s", r.err, r.stderr)
	}
	if bad := psql(t, p, "analyst", "not the password", "SELECT 1;"); bad.err == nil {
		t.Fatal("a wrong password logged in")
	}
	mysqlCLI(t, p.mysqlAddress(t), "demo", "SELECT COUNT(*) FROM visits;\n")

	families := scrape(t, adminURL)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "dp", "outcome": "answered"}, 2},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "cached", "outcome": "answered"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "public", "outcome": "answered"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "dp", "outcome": "refused", "sqlstate_class": "42"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "session", "outcome": "refused", "sqlstate_class": "42"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "catalog", "outcome": "answered"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "postgres", "kind": "session", "outcome": "answered"}, 1},
		{"dpproxy_statements_total", map[string]string{"protocol": "mysql", "kind": "dp", "outcome": "answered"}, 1},
		{"dpproxy_statement_duration_seconds", map[string]string{"kind": "dp"}, 4},
		{"dpproxy_epsilon_charged_total", map[string]string{"analyst": "analyst"}, 0.1 + 0.25 + 0.1},
		{"dpproxy_budget_epsilon_spent", map[string]string{"scope": "analyst", "name": "analyst"}, 0.1 + 0.25 + 0.1},
		{"dpproxy_budget_epsilon_limit", map[string]string{"scope": "analyst", "name": "analyst"}, 10},
		{"dpproxy_cache_hits_total", nil, 1},
		{"dpproxy_rows_released_total", map[string]string{"kind": "public"}, 25},
		{"dpproxy_login_failures_total", nil, 2}, // psql's, and the admin request's above
		{"dpproxy_audit_errors_total", nil, 0},
		{"dpproxy_backend_connections", map[string]string{"state": "max"}, 10},
	} {
		if got := metricValue(families, c.name, c.labels); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := metricValue(families, "dpproxy_client_connections", nil); got < 0 {
		t.Errorf("dpproxy_client_connections missing")
	}

	// The audit log: one line per statement, in order, each as it ended.
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var audit []auditlog.Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l auditlog.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		audit = append(audit, l)
	}
	var psqlLines []auditlog.Line
	for _, l := range audit {
		if l.Protocol == "postgres" {
			psqlLines = append(psqlLines, l)
		}
		if l.Analyst != "analyst" || !strings.HasPrefix(l.Client, "127.0.0.1:") || l.Time.IsZero() {
			t.Errorf("audit line %+v", l)
		}
	}
	want := []struct {
		statement, kind, decision, sqlstate string
		epsilon                             float64
	}{
		{"SELECT COUNT(*) FROM patients;", "dp", "answered", "", 0.1},
		{"SELECT COUNT(*) FROM patients;", "cached", "answered", "", 0},
		{"SELECT clinic_id FROM clinics;", "public", "answered", "", 0},
		{"SELECT * FROM patients;", "dp", "refused", "42501", 0},
		{"SET dpproxy.epsilon = 0.25;", "session", "answered", "", 0},
		{"SELEC 1;", "session", "refused", "42601", 0},
		{"SELECT relname FROM pg_catalog.pg_class LIMIT 1;", "catalog", "answered", "", 0},
		{"SELECT AVG(age) FROM patients;", "dp", "answered", "", 0.25},
	}
	if len(psqlLines) != len(want) {
		t.Fatalf("%d audit lines from psql, want %d: %+v", len(psqlLines), len(want), psqlLines)
	}
	for i, w := range want {
		l := psqlLines[i]
		if l.Statement != w.statement || l.Kind != w.kind || l.Decision != w.decision || l.SQLState != w.sqlstate || l.Epsilon != w.epsilon {
			t.Errorf("audit line %d: %+v, want %+v", i, l, w)
		}
	}
	if psqlLines[2].Rows != 25 || psqlLines[0].Rows != 1 {
		t.Errorf("rows in the audit log: %d and %d", psqlLines[2].Rows, psqlLines[0].Rows)
	}
}

// chromium runs headless Chromium with args; the test skips without it.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (scripts/test.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--no-first-run", "--disable-extensions"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// The budget page in a real browser (headless Chromium): its DOM has the
// analyst's budget row with the spending the session left, the chart and
// the statements; its screenshot is a drawn page, not a blank one.
func TestBudgetPageInChromium(t *testing.T) {
	p, adminURL, _ := operatedProxy(t)
	psql(t, p, "analyst", "analyst", "SELECT COUNT(*) FROM patients;\nSELECT AVG(age) FROM patients;\nSELECT * FROM patients;\n")
	pageURL := strings.Replace(adminURL, "http://", "http://ops:opspw@", 1) + "/"
	dom := chromium(t, "--dump-dom", pageURL)
	for _, want := range []string{
		`<h1>dpproxy budgets</h1>`,
		`data-scope="analyst" data-name="analyst"`,
		`<td class="num">0.2</td><td class="num">10</td><td class="num">9.8</td>`,
		`<svg`, `class="refusal"`, `class="statement"`, `SELECT AVG(age) FROM patients;`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page Chromium rendered lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	if dir := os.Getenv("DPPROXY_KEEP_SCREENSHOT"); dir != "" {
		shot = filepath.Join(dir, "budget-page.png")
	}
	chromium(t, "--screenshot="+shot, "--window-size=1200,1400", "--hide-scrollbars", pageURL)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 1400 {
		t.Errorf("screenshot %v, want 1200×1400", b)
	}
	// Drawn: many distinct colours (text, the bar, the chart's lines),
	// and the chart's blue line among them.
	colours, blue := map[[3]uint32]bool{}, false
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 2 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			if r>>8 < 60 && g>>8 > 90 && g>>8 < 150 && b>>8 > 150 {
				blue = true
			}
		}
	}
	if len(colours) < 20 || !blue {
		t.Errorf("the screenshot has %d colours (blue line drawn: %v): a blank or unstyled page", len(colours), blue)
	}
}
