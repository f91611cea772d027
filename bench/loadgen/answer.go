package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// `loadgen answer` is the floor of workload 3's cache hit: a server that
// answers every query from memory with the same rows (the shape of the
// cache-hit query's answer: eight regions, a count and an average), over
// the PostgreSQL or the MySQL protocol, and does nothing else: no
// authentication, no parsing, no session, no cache. A goroutine per
// connection reads a message and writes the prepared answer. What a
// client waits for it is what one round trip costs on this machine
// with that client and a Go server, whatever the server does.

// answerRows is the answer: the cache-hit query's eight groups.
var answerRows = [][3]string{
	{"central", "22064", "38422.425866094956"}, {"north", "17940", "38234.42400774436"},
	{"south", "15982", "37616.08253036771"}, {"east", "13994", "38357.68883870935"},
	{"west", "12022", "38392.80128402014"}, {"coast", "9000", "38266.292463542195"},
	{"mountain", "6034", "38581.68813148015"}, {"islands", "2960", "38109.05144926492"},
}

var answerColumns = [3]string{"region", "count", "avg"}

func cmdAnswer(args []string) error {
	fs := flag.NewFlagSet("answer", flag.ExitOnError)
	protocol := fs.String("protocol", "postgres", "postgres or mysql")
	listen := fs.String("listen", "127.0.0.1:0", "address to accept clients on")
	life := fs.Duration("for", time.Hour, "stop after this long")
	fs.Parse(args)
	var serve func(net.Conn) error
	switch *protocol {
	case "postgres":
		serve = answerPostgres(pgAnswer())
	case "mysql":
		serve = answerMySQL(myAnswer())
	default:
		return fmt.Errorf("answer: unknown protocol %q", *protocol)
	}
	return serveFor("answer", *listen, *life, answerEach(serve))
}

// answerEach runs serve on a connection until it ends or ctx does.
func answerEach(serve func(net.Conn) error) func(context.Context, net.Conn) {
	return func(ctx context.Context, c net.Conn) {
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		if err := serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			fmt.Fprintln(os.Stderr, "answer:", err)
		}
	}
}

// pgAnswer is the PostgreSQL answer's bytes: RowDescription, the rows,
// CommandComplete and ReadyForQuery.
func pgAnswer() []byte {
	types := [3]uint32{25, 20, 701} // text, int8, float8
	var fields []pgproto3.FieldDescription
	for i, name := range answerColumns {
		fields = append(fields, pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: types[i], DataTypeSize: -1, TypeModifier: -1})
	}
	b, _ := (&pgproto3.RowDescription{Fields: fields}).Encode(nil)
	for _, r := range answerRows {
		b, _ = (&pgproto3.DataRow{Values: [][]byte{[]byte(r[0]), []byte(r[1]), []byte(r[2])}}).Encode(b)
	}
	b, _ = (&pgproto3.CommandComplete{CommandTag: []byte(fmt.Sprintf("SELECT %d", len(answerRows)))}).Encode(b)
	b, _ = (&pgproto3.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	return b
}

// answerPostgres serves one PostgreSQL connection: any startup is
// accepted without a password, any simple query gets answer, a Sync
// gets ReadyForQuery.
func answerPostgres(answer []byte) func(net.Conn) error {
	return func(c net.Conn) error {
		be := pgproto3.NewBackend(bufio.NewReader(c), c)
		for {
			m, err := be.ReceiveStartupMessage()
			if err != nil {
				return err
			}
			if _, ok := m.(*pgproto3.SSLRequest); ok {
				if _, err := c.Write([]byte{'N'}); err != nil {
					return err
				}
				continue
			}
			if _, ok := m.(*pgproto3.StartupMessage); !ok {
				return fmt.Errorf("startup: %T", m)
			}
			break
		}
		be.Send(&pgproto3.AuthenticationOk{})
		for _, p := range [][2]string{{"server_version", "15.0"}, {"client_encoding", "UTF8"}, {"standard_conforming_strings", "on"}, {"DateStyle", "ISO, MDY"}} {
			be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
		}
		be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
		be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		if err := be.Flush(); err != nil {
			return err
		}
		ready, _ := (&pgproto3.ReadyForQuery{TxStatus: 'I'}).Encode(nil)
		for {
			m, err := be.Receive()
			if err != nil {
				return err
			}
			switch m.(type) {
			case *pgproto3.Query:
				_, err = c.Write(answer)
			case *pgproto3.Sync:
				_, err = c.Write(ready)
			case *pgproto3.Terminate:
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// MySQL protocol: capabilities the answer server announces (4.1 protocol,
// secure connection and plugin authentication, no CLIENT_DEPRECATE_EOF:
// result sets end with EOF packets).
const (
	myClientLongPassword  = 1 << 0
	myClientLongFlag      = 1 << 2
	myClientConnectWithDB = 1 << 3
	myClientProtocol41    = 1 << 9
	myClientTransactions  = 1 << 13
	myClientSecureConn    = 1 << 15
	myClientPluginAuth    = 1 << 19
	myServerCaps          = myClientLongPassword | myClientLongFlag | myClientConnectWithDB | myClientProtocol41 |
		myClientTransactions | myClientSecureConn | myClientPluginAuth
)

// myPacket appends a MySQL packet (3-byte length, sequence) holding
// payload.
func myPacket(b []byte, seq byte, payload []byte) []byte {
	b = append(b, byte(len(payload)), byte(len(payload)>>8), byte(len(payload)>>16), seq)
	return append(b, payload...)
}

func myLenEncString(b []byte, s string) []byte {
	return append(append(b, byte(len(s))), s...) // every string here is shorter than 251 bytes
}

// myAnswer is the MySQL answer's packets after the command (sequence 1
// on): column count, the column definitions, EOF, the rows, EOF.
func myAnswer() []byte {
	seq := byte(1)
	var b []byte
	next := func(payload []byte) { b = myPacket(b, seq, payload); seq++ }
	next([]byte{byte(len(answerColumns))})
	types := [3]byte{0xfd, 0x08, 0x05} // VAR_STRING, LONGLONG, DOUBLE
	for i, name := range answerColumns {
		var p []byte
		for _, s := range []string{"def", "", "", "", name, name} {
			p = myLenEncString(p, s)
		}
		p = append(p, 0x0c, 45, 0) // fixed fields' length, utf8mb4_general_ci
		p = binary.LittleEndian.AppendUint32(p, 64)
		p = append(p, types[i], 0, 0, 0x1f, 0, 0)
		next(p)
	}
	eof := []byte{0xfe, 0, 0, 2, 0} // no warnings, autocommit
	next(eof)
	for _, r := range answerRows {
		var p []byte
		for _, v := range r {
			p = myLenEncString(p, v)
		}
		next(p)
	}
	next(eof)
	return b
}

// myOK is an OK packet (no rows affected, autocommit).
var myOK = []byte{0, 0, 0, 2, 0, 0, 0}

// answerMySQL serves one MySQL connection: any login is accepted, a
// COM_QUERY gets answer, COM_QUIT ends it, any other command gets OK.
func answerMySQL(answer []byte) func(net.Conn) error {
	return func(c net.Conn) error {
		r := bufio.NewReader(c)
		var hs []byte
		hs = append(hs, 10)
		hs = append(hs, "10.11.0-answer"...)
		hs = append(hs, 0)
		hs = binary.LittleEndian.AppendUint32(hs, 1)
		nonce := []byte("abcdefghijklmnopqrst") // 20 bytes; any proof is accepted
		hs = append(hs, nonce[:8]...)
		hs = append(hs, 0)
		hs = binary.LittleEndian.AppendUint16(hs, uint16(myServerCaps&0xffff))
		hs = append(hs, 45)
		hs = binary.LittleEndian.AppendUint16(hs, 2)
		hs = binary.LittleEndian.AppendUint16(hs, uint16(myServerCaps>>16))
		hs = append(hs, 21)
		hs = append(hs, make([]byte, 10)...)
		hs = append(hs, nonce[8:]...)
		hs = append(hs, 0)
		hs = append(hs, "mysql_native_password"...)
		hs = append(hs, 0)
		if _, err := c.Write(myPacket(nil, 0, hs)); err != nil {
			return err
		}
		if _, _, err := readMyPacket(r); err != nil { // the handshake response
			return err
		}
		if _, err := c.Write(myPacket(nil, 2, myOK)); err != nil {
			return err
		}
		for {
			p, _, err := readMyPacket(r)
			if err != nil {
				return err
			}
			if len(p) == 0 {
				return errors.New("empty command")
			}
			switch p[0] {
			case 0x03: // COM_QUERY
				_, err = c.Write(answer)
			case 0x01: // COM_QUIT
				return nil
			default:
				_, err = c.Write(myPacket(nil, 1, myOK))
			}
			if err != nil {
				return err
			}
		}
	}
}

// readMyPacket reads one MySQL packet (payloads under 16 MB).
func readMyPacket(r *bufio.Reader) (payload []byte, seq byte, err error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, 0, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, err
	}
	return payload, h[3], nil
}
