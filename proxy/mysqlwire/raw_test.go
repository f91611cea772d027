package mysqlwire_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
)

// readPacket reads one packet from a raw connection.
func readRaw(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	if _, err := io.ReadFull(nc, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Malformed, oversized and out-of-order packets get an ERR packet and a
// closed connection; the server keeps serving others.
func TestRawRobustness(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{MaxPacketSize: 1 << 16})
	for _, c := range []struct {
		name string
		send []byte
		code uint16
	}{
		{"oversized", []byte{0xff, 0xff, 0xff, 1}, mysqlwire.ErrNetPacketTooLarge},
		{"wrong sequence id", []byte{4, 0, 0, 7, 1, 2, 3, 4}, mysqlwire.ErrNetPacketsOutOfOrder},
		{"truncated handshake response", []byte{4, 0, 0, 1, 0, 2, 0, 0}, mysqlwire.ErrUnknown},
		{"garbage response", append([]byte{40, 0, 0, 1}, bytes.Repeat([]byte{0xff}, 40)...), mysqlwire.ErrUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if hs := readRaw(t, nc); hs[0] != 10 {
				t.Fatalf("handshake %x", hs)
			}
			nc.Write(c.send)
			errPkt := readRaw(t, nc)
			if errPkt[0] != 0xff || uint16(errPkt[1])|uint16(errPkt[2])<<8 != c.code {
				t.Errorf("got %x, want ERR %d", errPkt, c.code)
			}
			if _, err := nc.Read(make([]byte, 1)); err == nil {
				t.Error("connection still open")
			}
		})
	}
	db := openDB(t, addr, "analyst", "analyst", "demo", "")
	if err := db.Ping(); err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
	var n int64
	if err := db.QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1: %d %v", n, err)
	}
}
