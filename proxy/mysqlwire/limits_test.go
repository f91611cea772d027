package mysqlwire_test

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
)

// errCode reads the error number of an ERR packet.
func errCode(pkt []byte) uint16 {
	if len(pkt) < 3 || pkt[0] != 0xff {
		return 0
	}
	return uint16(pkt[1]) | uint16(pkt[2])<<8
}

// Before login every packet is held to 16 KiB: a handshake response of
// exactly 16 KiB is read (and refused as a bad handshake), one byte more is
// refused unread with ERR 1153.
func TestPreLoginPacketLimit(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{})
	for _, tc := range []struct {
		size int
		code uint16
		msg  string
	}{
		{16 << 10, mysqlwire.ErrUnknown, "Bad handshake"},
		{16<<10 + 1, mysqlwire.ErrNetPacketTooLarge, "(16384)"},
	} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			readRaw(t, nc) // handshake
			pkt := append([]byte{byte(tc.size), byte(tc.size >> 8), byte(tc.size >> 16), 1}, bytes.Repeat([]byte{0xff}, tc.size)...)
			nc.Write(pkt)
			reply := readRaw(t, nc)
			if errCode(reply) != tc.code || !strings.Contains(string(reply), tc.msg) {
				t.Errorf("reply %q, want ERR %d with %q", reply, tc.code, tc.msg)
			}
		})
	}
}

// Unauthenticated clients cannot make the server allocate what they
// announce: 100 connections announcing 16 MiB packets (the most a header
// can say) and 100 announcing 16 KiB and sending 8 bytes of it add a few
// MiB to the heap, not 1.6 GB.
func TestPreLoginMemoryBounded(t *testing.T) {
	addr := startServer(t, mysqlwire.Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		readRaw(t, nc)
		if i%2 == 0 {
			nc.Write([]byte{0xff, 0xff, 0xff, 1, 1, 2, 3, 4, 5, 6, 7, 8})
		} else {
			nc.Write([]byte{0x00, 0x40, 0x00, 1, 1, 2, 3, 4, 5, 6, 7, 8})
		}
	}
	time.Sleep(200 * time.Millisecond) // the server reads what was sent
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap grew by %d KiB for 200 half-open connections", grown>>10)
	if grown > 16<<20 {
		t.Errorf("heap grew by %d MiB for 200 unauthenticated connections; want a few MiB", grown>>20)
	}
}

// After login, listen.max_message_size (MaxPacketSize) bounds a
// statement: at the limit it runs, one byte over it is refused with
// ERR 1153, and the server keeps serving.
func TestMaxPacketSizeEdge(t *testing.T) {
	const limit = 64 << 10
	addr := startServer(t, mysqlwire.Options{MaxPacketSize: limit})
	query := func(payload int) error {
		db := openDB(t, addr, "analyst", "analyst", "demo", "")
		db.SetMaxOpenConns(1)
		// COM_QUERY: one command byte, then the statement.
		sql := "SELECT 1 /*" + strings.Repeat("x", payload-1-len("SELECT 1 /**/")) + "*/"
		var n int64
		return db.QueryRow(sql).Scan(&n)
	}
	if err := query(limit); err != nil {
		t.Fatalf("a statement at the limit: %v", err)
	}
	err := query(limit + 1)
	if code := mysqlErrNumber(err); code != mysqlwire.ErrNetPacketTooLarge {
		t.Fatalf("a statement one byte over the limit: %v, want ERR %d", err, mysqlwire.ErrNetPacketTooLarge)
	}
	if err := query(100); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}
