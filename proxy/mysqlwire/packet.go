package mysqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// maxPayload is the largest payload of one physical packet; a logical
// packet of this size or more continues in the next physical packet.
const maxPayload = 1<<24 - 1

// errPacketTooLarge is returned by readPacket for a logical packet longer
// than the configured maximum; nothing beyond the header has been read.
var errPacketTooLarge = errors.New("mysqlwire: packet larger than the maximum packet size")

// errSequence is returned by readPacket when a packet's sequence id is not
// the expected one.
var errSequence = errors.New("mysqlwire: packet out of order")

// packetReader reads logical packets (physical packets joined).
type packetReader struct {
	r   io.Reader
	max int
	hdr [4]byte
}

// readChunk bounds each allocation while a packet body arrives: the buffer
// grows with the bytes actually received, never from the length a client
// announces, so an unauthenticated client announcing 16 MiB and sending
// nothing costs this much, not 16 MiB.
const readChunk = 16 << 10

// readPacket reads one logical packet whose first sequence id must be
// *seq; it advances *seq past every physical packet read. The length is
// checked against max before anything is read, and the body is read into
// a buffer that grows as it arrives (see readChunk).
func (pr *packetReader) readPacket(seq *uint8) ([]byte, error) {
	var payload []byte
	for {
		if _, err := io.ReadFull(pr.r, pr.hdr[:]); err != nil {
			return nil, err
		}
		n := int(uint32(pr.hdr[0]) | uint32(pr.hdr[1])<<8 | uint32(pr.hdr[2])<<16)
		if pr.hdr[3] != *seq {
			return nil, fmt.Errorf("%w: got sequence id %d, want %d", errSequence, pr.hdr[3], *seq)
		}
		*seq++
		if len(payload)+n > pr.max {
			return nil, errPacketTooLarge
		}
		for left := n; left > 0; {
			chunk := min(left, readChunk)
			start := len(payload)
			payload = slices.Grow(payload, chunk)[:start+chunk]
			if _, err := io.ReadFull(pr.r, payload[start:]); err != nil {
				return nil, fmt.Errorf("mysqlwire: reading packet body: %w", err)
			}
			left -= chunk
		}
		if payload == nil {
			payload = []byte{}
		}
		if n < maxPayload {
			return payload, nil
		}
	}
}

// appendPacket appends payload framed as one or more physical packets
// starting at sequence id *seq, advancing *seq.
func appendPacket(dst, payload []byte, seq *uint8) []byte {
	for {
		n := min(len(payload), maxPayload)
		dst = append(dst, byte(n), byte(n>>8), byte(n>>16), *seq)
		*seq++
		dst = append(dst, payload[:n]...)
		payload = payload[n:]
		if n < maxPayload {
			return dst
		}
	}
}

// Length-encoded integers and strings (Protocol::LengthEncodedInteger).

func appendLenEncInt(b []byte, n uint64) []byte {
	switch {
	case n < 251:
		return append(b, byte(n))
	case n < 1<<16:
		return append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		return append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, n)
}

func appendLenEncString(b []byte, s string) []byte {
	b = appendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

func appendLenEncBytes(b []byte, s []byte) []byte {
	b = appendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

// errMalformed reports a packet that ends early or holds an impossible
// value.
var errMalformed = errors.New("mysqlwire: malformed packet")

// decoder reads fields from a packet payload. The first failure is sticky:
// every later read returns zero values, and err reports it.
type decoder struct {
	b   []byte
	pos int
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errMalformed
	}
}

func (d *decoder) remaining() int { return len(d.b) - d.pos }

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > d.remaining() {
		d.fail()
		return nil
	}
	v := d.b[d.pos : d.pos+n]
	d.pos += n
	return v
}

func (d *decoder) uint8() uint8 {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) uint16() uint16 {
	b := d.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (d *decoder) uint32() uint32 {
	b := d.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (d *decoder) uint64() uint64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// lenEncInt reads a length-encoded integer; null is true for 0xfb.
func (d *decoder) lenEncInt() (n uint64, null bool) {
	first := d.uint8()
	switch {
	case d.err != nil:
		return 0, false
	case first < 0xfb:
		return uint64(first), false
	case first == 0xfb:
		return 0, true
	case first == 0xfc:
		return uint64(d.uint16()), false
	case first == 0xfd:
		b := d.bytes(3)
		if b == nil {
			return 0, false
		}
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16, false
	case first == 0xfe:
		return d.uint64(), false
	}
	d.fail() // 0xff is not a length
	return 0, false
}

// lenEncBytes reads a length-encoded string (NULL is an error).
func (d *decoder) lenEncBytes() []byte {
	n, null := d.lenEncInt()
	if null || n > math.MaxInt32 {
		d.fail()
		return nil
	}
	return d.bytes(int(n))
}

// nulString reads a NUL-terminated string.
func (d *decoder) nulString() string {
	if d.err != nil {
		return ""
	}
	for i := d.pos; i < len(d.b); i++ {
		if d.b[i] == 0 {
			s := string(d.b[d.pos:i])
			d.pos = i + 1
			return s
		}
	}
	d.fail()
	return ""
}

// rest returns the unread bytes.
func (d *decoder) rest() []byte {
	if d.err != nil {
		return nil
	}
	v := d.b[d.pos:]
	d.pos = len(d.b)
	return v
}
