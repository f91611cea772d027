package pgwire

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"

	"github.com/dpproxy/dpproxy/internal/testcert"
)

// startTLSServer serves with a fresh self-signed certificate, returned
// as a file for clients that verify it.
func startTLSServer(t *testing.T, opts Options) (ts *testServer, certFile string) {
	t.Helper()
	certFile, keyFile := testcert.Write(t, t.TempDir())
	cfg, err := LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	opts.TLS = cfg
	return startServer(t, opts), certFile
}

func TestPgxTLS(t *testing.T) {
	ts, certFile := startTLSServer(t, Options{})
	for _, tc := range []struct{ mode, sslmode string }{
		{"", "sslmode=require"},
		{"simple_protocol", "sslmode=require"},
		{"", "sslmode=verify-full&sslrootcert=" + certFile},
	} {
		url := strings.Replace(ts.connStringMode(testUser, testPassword, tc.mode, ""), "sslmode=disable", tc.sslmode, 1)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("%s: %v", tc.sslmode, err)
		}
		if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
			t.Errorf("%s: connection is %T, not TLS", tc.sslmode, conn.PgConn().Conn())
		}
		var n int64
		if err := conn.QueryRow(ctx, "select canned").Scan(&n, nil, nil, nil, nil, nil, nil, nil); err != nil || n != 1 {
			t.Errorf("%s: query: %v", tc.sslmode, err)
		}
		if tc.mode == "" {
			if err := conn.QueryRow(ctx, "echo int8", int64(5)).Scan(&n); err != nil || n != 5 {
				t.Errorf("%s: extended query: %v", tc.sslmode, err)
			}
		}
		conn.Close(ctx)
	}
	// Plaintext clients are still served.
	assertServes(t, ts)
	if !strings.Contains(ts.logs.String(), "tls=true") {
		t.Error("sessions not logged as TLS")
	}
}

func TestRawTLSRefusesDataPipelinedAfterSSLRequest(t *testing.T) {
	ts, _ := startTLSServer(t, Options{})
	c := dialRaw(t, ts.addr)
	// CVE-2021-23214: a startup packet sent together with the SSLRequest,
	// before the handshake, must not be taken as if it came over TLS.
	c.write(append(packet(sslRequestCode), startupMessage(map[string]string{"user": testUser})...))
	e := c.expectError()
	if e.Severity != "FATAL" || e.Code != "08P01" || e.Message != "received unencrypted data after SSL request" {
		t.Errorf("got %s %s %q", e.Severity, e.Code, e.Message)
	}
	c.expectClosed()
	if len(ts.sessions.opened) != 0 {
		t.Error("a session was opened")
	}
	assertServes(t, ts)
}

func TestRawTLSHandshake(t *testing.T) {
	ts, _ := startTLSServer(t, Options{AuthTimeout: time.Second})
	// 'S', then a TLS session over which the protocol continues.
	c := dialRaw(t, ts.addr)
	c.write(packet(sslRequestCode))
	b := make([]byte, 1)
	if _, err := readFull(c, b); err != nil || b[0] != 'S' {
		t.Fatalf("got %q %v", b, err)
	}
	tc := tls.Client(c.nc, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tlsClient := newRawClient(t, tc)
	tlsClient.loginReady()
	tlsClient.send(&pgproto3.Query{String: "select canned"})
	if r := tlsClient.untilReady(); r.seq != "TDDCZ" {
		t.Errorf("got %s", r.seq)
	}

	// A second SSLRequest inside TLS is a protocol violation.
	c = dialRaw(t, ts.addr)
	c.write(packet(sslRequestCode))
	readFull(c, b)
	tc = tls.Client(c.nc, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tlsClient = newRawClient(t, tc)
	tlsClient.write(packet(sslRequestCode))
	if e := tlsClient.expectError(); e.Code != "08P01" || e.Message != "duplicate SSLRequest" {
		t.Errorf("got %s %q", e.Code, e.Message)
	}

	// A failed handshake or a client that stalls in it closes the
	// connection and nothing else.
	for _, after := range []string{"garbage that is not a ClientHello", ""} {
		c = dialRaw(t, ts.addr)
		c.write(packet(sslRequestCode))
		readFull(c, b)
		if after != "" {
			c.write([]byte(after))
		}
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 256)
		for {
			if _, err := c.nc.Read(buf); err != nil {
				break
			}
		}
	}
	assertServes(t, ts)

	// GSSENCRequest is still refused.
	c = dialRaw(t, ts.addr)
	c.write(packet(gssEncRequestCode))
	if _, err := readFull(c, b); err != nil || b[0] != 'N' {
		t.Errorf("GSSENCRequest: got %q %v", b, err)
	}
}

func TestPsqlTLS(t *testing.T) {
	ts, certFile := startTLSServer(t, Options{})
	for _, env := range [][]string{
		{"PGSSLMODE=require"},
		{"PGSSLMODE=verify-ca", "PGSSLROOTCERT=" + certFile},
	} {
		out, errOut, code := runPsqlEnv(t, ts, testPassword, "", env, "-A", "-t", "-c", `\conninfo`, "-c", "select canned")
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", env, code, errOut)
		}
		if !strings.Contains(out, "SSL connection (protocol: TLSv1.3") || !strings.Contains(out, "|12.50|") {
			t.Errorf("%v: output:\n%s", env, out)
		}
	}
	// sslmode=require fails against a server without TLS.
	plain := startServer(t, Options{})
	_, errOut, code := runPsqlEnv(t, plain, testPassword, "", []string{"PGSSLMODE=require"}, "-c", "select 1")
	if code == 0 || !strings.Contains(errOut, "server does not support SSL") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestLoadTLSErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	if _, err := LoadTLS(filepath.Join(dir, "missing.crt"), keyFile); err == nil || !strings.Contains(err.Error(), "missing.crt") {
		t.Errorf("missing certificate: %v", err)
	}
	otherCert, _ := testcert.Write(t, t.TempDir())
	if _, err := LoadTLS(otherCert, keyFile); err == nil {
		t.Error("a key that does not match the certificate was accepted")
	}
	cfg, err := LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 {
		t.Errorf("config %+v", cfg)
	}
}
