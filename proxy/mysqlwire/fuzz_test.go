package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/dpproxy/dpproxy/sqltypes"
)

// FuzzPacketParsing feeds arbitrary bytes to every parser of client
// input: packet framing, the handshake response and COM_STMT_EXECUTE
// parameters. None may panic or read out of bounds.
func FuzzPacketParsing(f *testing.F) {
	resp := []byte{}
	resp = binary.LittleEndian.AppendUint32(resp, serverCapabilities)
	resp = append(resp, make([]byte, 4+1+23)...)
	resp = append(resp, "analyst\x00"...)
	resp = append(resp, 20)
	resp = append(resp, bytes.Repeat([]byte{1}, 20)...)
	resp = append(resp, "demo\x00caching_sha2_password\x00"...)
	f.Add(resp)
	f.Add([]byte{1, 0, 0, 0, 0x0e})
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 1, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 1, 0x0c, 0, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 1, 0xfd, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var seq uint8
		if len(data) > 3 {
			seq = data[3]
		}
		pr := &packetReader{r: bytes.NewReader(data), max: 1 << 16}
		_, _ = pr.readPacket(&seq)
		if len(data) >= 4 {
			d := &decoder{b: data}
			caps := d.uint32()
			_, _ = parseHandshakeResponse(d, caps)
		}
		c := &conn{}
		for n := 1; n <= 3; n++ {
			st := &statement{p: &sqltypes.Prepared{Params: make([]sqltypes.Type, n)}}
			_, _ = c.decodeParams(st, data)
		}
	})
}
