package mysqlwire_test

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
)

// panicLog records log messages about panics.
type panicLog struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		p.mu.Lock()
		p.panics = append(p.panics, r.Message)
		p.mu.Unlock()
	}
	return nil
}
func (p *panicLog) WithAttrs([]slog.Attr) slog.Handler { return p }
func (p *panicLog) WithGroup(string) slog.Handler      { return p }

// rawLogin logs in as analyst with mysql_native_password over a raw
// connection and returns it ready for commands.
func rawLogin(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := readRaw(t, nc)
	// version NUL, connection id, nonce part 1 (8), filler, capabilities,
	// charset, status, capabilities, auth data length, 10 reserved, nonce
	// part 2 (12) NUL, plugin name.
	i := strings.IndexByte(string(hs[1:]), 0) + 2 + 4
	nonce := append([]byte{}, hs[i:i+8]...)
	i += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
	nonce = append(nonce, hs[i:i+12]...)
	h1 := sha1.Sum([]byte("analyst"))
	h2 := sha1.Sum(h1[:])
	h3 := sha1.Sum(append(append([]byte{}, nonce...), h2[:]...))
	scramble := make([]byte, 20)
	for j := range scramble {
		scramble[j] = h1[j] ^ h3[j]
	}
	const caps = 1<<9 | 1<<15 | 1<<19 | 1<<3 | 1<<24 // protocol 41, secure conn, plugin auth, with db, deprecate EOF
	p := binary.LittleEndian.AppendUint32(nil, caps)
	p = binary.LittleEndian.AppendUint32(p, 1<<24)
	p = append(p, 45)
	p = append(p, make([]byte, 23)...)
	p = append(p, "analyst\x00"...)
	p = append(p, 20)
	p = append(p, scramble...)
	p = append(p, "demo\x00mysql_native_password\x00"...)
	nc.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 1}, p...))
	if ok := readRaw(t, nc); ok[0] != 0 {
		t.Fatalf("login: %q", ok)
	}
	return nc
}

// FuzzCommands sends any command packet (COM_QUERY, COM_STMT_PREPARE,
// COM_STMT_EXECUTE with any parameter bytes, COM_INIT_DB, COM_FIELD_LIST,
// unknown commands, ...) to a logged-in connection of a real engine. The
// server never panics, answers or closes within a second, and keeps
// serving other clients.
func FuzzCommands(f *testing.F) {
	for _, seed := range [][]byte{
		append([]byte{0x03}, "SELECT COUNT(*) FROM patients"...),
		append([]byte{0x03}, "SET NAMES utf8mb4"...),
		append([]byte{0x03}, "SHOW VARIABLES LIKE 'max%'"...),
		append([]byte{0x03}, "SELECT * FROM information_schema.COLUMNS"...),
		append([]byte{0x16}, "SELECT COUNT(*) FROM patients WHERE age > ?"...),
		{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 42, 0, 0, 0, 0, 0, 0, 0},
		{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 0xfc, 0xff, 0xff},
		append([]byte{0x02}, "nosuch"...),
		append([]byte{0x04}, "patients\x00"...),
		{0x0e}, {0x09}, {0x18, 1, 0, 0, 0, 0, 'x'}, {0x19, 1, 0, 0, 0}, {0x1a, 1, 0, 0, 0}, {0xff}, {},
	} {
		f.Add(seed)
	}
	rec := &panicLog{}
	addr := startServer(f, mysqlwire.Options{Logger: slog.New(rec), StatementTimeout: time.Second})
	f.Fuzz(func(t *testing.T, cmd []byte) {
		nc := rawLogin(t, addr)
		defer nc.Close()
		if len(cmd) >= 1<<24-1 {
			return
		}
		nc.Write(append([]byte{byte(len(cmd)), byte(len(cmd) >> 8), byte(len(cmd) >> 16), 0}, cmd...))
		if cmd0 := append(cmd, 0)[0]; cmd0 != 0x19 && cmd0 != 0x18 { // CLOSE and SEND_LONG_DATA have no answer
			nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			var hdr [4]byte
			if _, err := io.ReadFull(nc, hdr[:]); err != nil && !isClosed(err) {
				t.Fatalf("command %q: no answer: %v", cmd, err)
			}
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.panics) > 0 {
			t.Fatalf("command %q: the server panicked: %v", cmd, rec.panics)
		}
	})
}

func isClosed(err error) bool {
	return err == io.EOF || strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "closed")
}
