package pgwire

import (
	"crypto/tls"
	"fmt"

	"github.com/jackc/pgproto3/v2"
)

// LoadTLS reads a PEM certificate (chain) and its private key for
// Options.TLS. The config accepts TLS 1.2 and newer and asks clients for
// no certificate.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("pgwire: loading TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// startTLS runs the server side of the TLS handshake after 'S' was sent
// for an SSLRequest, within the authentication deadline already set on
// the connection, and switches reading and writing to TLS.
func (c *conn) startTLS() error {
	tc := tls.Server(c.raw, c.srv.opts.TLS)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		c.log.Info("pgwire: TLS handshake failed", "err", err)
		return fmt.Errorf("pgwire: TLS handshake: %w", err)
	}
	c.nc = tc
	c.tls = true
	c.rd = newLimitedReader(tc, maxStartupPacketLen)
	c.be = pgproto3.NewBackend(c.rd, tc)
	return nil
}
