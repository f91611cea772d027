package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/dpproxy/dpproxy/sqlerr"
)

// Startup packet codes (the word after the length).
const (
	maxStartupPacketLen = 10000 // MAX_STARTUP_PACKET_LENGTH in PostgreSQL
	protocolMajor3      = 3
	cancelRequestCode   = 1234<<16 | 5678
	sslRequestCode      = 1234<<16 | 5679
	gssEncRequestCode   = 1234<<16 | 5680
)

// errCancelRequest ends a connection that only carried a CancelRequest.
var errCancelRequest = errors.New("pgwire: cancel request handled")

// startup reads packets until the StartupMessage and returns its
// parameters. An SSLRequest is answered 'S' and the connection upgraded
// when Options.TLS is set, and refused with 'N' otherwise, as is every
// GSSENCRequest (the client then continues in plaintext or gives up); a
// CancelRequest is served and ends the connection.
func (c *conn) startup() (map[string]string, error) {
	var sslSeen, gssSeen bool
	for {
		hdr, err := c.rd.Next(4)
		if err != nil {
			return nil, fmt.Errorf("pgwire: reading startup packet: %w", err)
		}
		n := binary.BigEndian.Uint32(hdr)
		if n < 8 || n > maxStartupPacketLen {
			// Like PostgreSQL, answer nothing: this is probably not a
			// PostgreSQL client at all (a TLS ClientHello, an HTTP request).
			c.log.Info("pgwire: invalid length of startup packet", "length", n)
			return nil, fmt.Errorf("pgwire: invalid length of startup packet: %d", n)
		}
		body, err := c.rd.Next(int(n) - 4)
		if err != nil {
			return nil, fmt.Errorf("pgwire: reading startup packet: %w", err)
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case sslRequestCode, gssEncRequestCode:
			name, seen := "SSLRequest", &sslSeen
			if code == gssEncRequestCode {
				name, seen = "GSSENCRequest", &gssSeen
			}
			if n != 8 {
				return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "invalid length of %s", name))
			}
			if *seen {
				return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "duplicate %s", name))
			}
			*seen = true
			if code == sslRequestCode && c.srv.opts.TLS != nil {
				// Bytes after the SSLRequest that arrived before the
				// handshake were not encrypted and may have been injected
				// by a man in the middle (CVE-2021-23214): refuse them.
				if c.rd.buffered() > 0 {
					c.log.Info("pgwire: unencrypted data after SSLRequest", "bytes", c.rd.buffered())
					return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "received unencrypted data after SSL request").
						WithDetail("This could be either a client-software bug or evidence of an attempted man-in-the-middle attack."))
				}
				c.wbuf = append(c.wbuf, 'S')
				if err := c.flush(); err != nil {
					return nil, err
				}
				if err := c.startTLS(); err != nil {
					return nil, err
				}
				continue
			}
			// No GSS encryption, and no TLS unless configured.
			c.wbuf = append(c.wbuf, 'N')
			if err := c.flush(); err != nil {
				return nil, err
			}
			continue
		case cancelRequestCode:
			c.handleCancelRequest(body[4:])
			return nil, errCancelRequest
		}
		major, minor := code>>16, code&0xffff
		if major != protocolMajor3 {
			return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation,
				"unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", major, minor))
		}
		if c.srv.opts.RequireTLS && !c.tls {
			c.log.Info("pgwire: plaintext connection refused: TLS is required")
			return nil, c.fatal(sqlerr.New(sqlerr.InvalidAuthorization, "this server requires TLS: plaintext connections are refused").
				WithHint("connect with sslmode=require (or verify-full)"))
		}
		params, err := parseStartupParameters(body[4:])
		if err != nil {
			return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "invalid startup packet layout: %v", err))
		}
		var unrecognized []string
		for name := range params {
			if strings.HasPrefix(name, "_pq_.") {
				unrecognized = append(unrecognized, name)
				delete(params, name)
			}
		}
		if minor > 0 || len(unrecognized) > 0 {
			slices.Sort(unrecognized)
			c.sendNegotiateProtocolVersion(unrecognized)
		}
		return params, nil
	}
}

// parseStartupParameters parses name\0value\0...\0. Unknown names are kept:
// clients send GUCs from their environment and must not be refused for it.
func parseStartupParameters(b []byte) (map[string]string, error) {
	params := make(map[string]string)
	for {
		if len(b) == 0 {
			return nil, errors.New("expected terminator as last byte")
		}
		if b[0] == 0 {
			if len(b) != 1 {
				return nil, errors.New("expected terminator as last byte")
			}
			return params, nil
		}
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, errors.New("parameter name is not terminated")
		}
		name := string(b[:i])
		b = b[i+1:]
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return nil, fmt.Errorf("missing value for parameter %q", name)
		}
		params[name] = string(b[:j])
		b = b[j+1:]
	}
}

// sendNegotiateProtocolVersion tells a client that asked for protocol 3.x
// (x > 0) or for "_pq_." options that the server speaks 3.0 and does not
// know those options; the client may go on with 3.0.
func (c *conn) sendNegotiateProtocolVersion(unrecognized []string) {
	start := len(c.wbuf)
	c.wbuf = append(c.wbuf, 'v', 0, 0, 0, 0)
	c.wbuf = binary.BigEndian.AppendUint32(c.wbuf, 0) // newest minor version supported
	c.wbuf = binary.BigEndian.AppendUint32(c.wbuf, uint32(len(unrecognized)))
	for _, name := range unrecognized {
		c.wbuf = append(c.wbuf, name...)
		c.wbuf = append(c.wbuf, 0)
	}
	binary.BigEndian.PutUint32(c.wbuf[start+1:], uint32(len(c.wbuf)-start-1))
}

// handleCancelRequest cancels the query running on the connection that a
// CancelRequest names. Like PostgreSQL, it answers nothing either way.
func (c *conn) handleCancelRequest(b []byte) {
	if len(b) != 8 {
		c.log.Info("pgwire: malformed CancelRequest", "length", len(b)+8)
		return
	}
	c.srv.cancel(b, c)
}

// cancel serves a CancelRequest's body (process ID and secret key) from
// connection from (nil when it was refused over the limits).
func (s *Server) cancel(b []byte, from *conn) {
	pid, secret := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	target := s.connByPID(pid)
	if target == nil || target == from {
		s.log.Debug("pgwire: CancelRequest for unknown process", "pid", pid)
		return
	}
	if target.cancelRunningQuery(secret) {
		s.log.Debug("pgwire: query canceled", "pid", pid)
	}
}

// refuseTooMany answers a connection over the server's limits the way
// PostgreSQL does when max_connections is reached: it reads the startup
// packet (declining TLS and GSS encryption, which would cost a handshake)
// and sends FATAL 53300. A CancelRequest is still served: a flood must not
// stop anyone from cancelling a runaway query. It never allocates more
// than the startup limit.
func (s *Server) refuseTooMany(nc net.Conn) {
	rd := newLimitedReader(nc, maxStartupPacketLen)
	for range 3 { // at most SSLRequest, GSSENCRequest, StartupMessage
		hdr, err := rd.Next(4)
		if err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr)
		if n < 8 || n > maxStartupPacketLen {
			return
		}
		body, err := rd.Next(int(n) - 4)
		if err != nil {
			return
		}
		switch binary.BigEndian.Uint32(body) {
		case sslRequestCode, gssEncRequestCode:
			if _, err := nc.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		case cancelRequestCode:
			if n == 16 {
				s.cancel(body[4:], nil)
			}
			return
		}
		msg, err := errorResponse("FATAL", sqlerr.New(sqlerr.TooManyConnections, "sorry, too many clients already").
			WithHint("dpproxy's listen.max_connections or listen.max_handshakes is reached; try again later")).Encode(nil)
		if err == nil {
			_, _ = nc.Write(msg)
		}
		return
	}
}
