package mysqlwire_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"net"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dpproxy/dpproxy/internal/testcert"
	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
)

// testTLSConfig is a server configuration with a fresh self-signed
// certificate for 127.0.0.1.
func testTLSConfig(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(testcert.Write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// joinedSSLRequest is a client socket that holds back the SSL request (a
// 32-byte packet, sequence id 1) and sends it in one write with the TLS
// ClientHello that follows: both then reach the server together, as they
// may from any client, since the protocol has no answer between them.
type joinedSSLRequest struct {
	net.Conn
	held   []byte
	joined *atomic.Bool
}

func (c *joinedSSLRequest) Write(p []byte) (int, error) {
	if c.held == nil && len(p) == 4+32 && p[0] == 32 && p[3] == 1 {
		c.held = append([]byte{}, p...)
		return len(p), nil
	}
	if len(c.held) > 0 {
		joined := append(c.held, p...)
		c.held = c.held[:0]
		if _, err := c.Conn.Write(joined); err != nil {
			return 0, err
		}
		c.joined.Store(true)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// TestTLSHandshakeArrivingWithTheSSLRequest: the server reads the client's
// socket through a buffer, so the start of the TLS handshake can be read
// together with the SSL request; the handshake must still get those
// bytes. A client that sends both in one write logs in over TLS and is
// answered.
func TestTLSHandshakeArrivingWithTheSSLRequest(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{TLS: testTLSConfig(t)})
	var joined atomic.Bool
	mysql.RegisterDialContext("joined-ssl-request", func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &joinedSSLRequest{Conn: nc, joined: &joined}, nil
	})
	db, err := sql.Open("mysql", "analyst:analyst@joined-ssl-request("+addr+")/demo?timeout=10s&tls=skip-verify")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("over TLS, the SSL request sent with the handshake: %d, %v", one, err)
	}
	if !joined.Load() {
		t.Fatal("the client never sent the SSL request together with the TLS handshake: the test tested nothing")
	}
}
