package proxy

import (
	"context"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/proxy/pgwire"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
)

// PostgresSessions opens sessions of a session.Server for the PostgreSQL front end.
type PostgresSessions struct{ Server *session.Server }

var _ pgwire.Sessions = PostgresSessions{}

// Sessions serve the simple and the extended query protocol.
var _ pgwire.Session = (*session.Session)(nil)

// SCRAMVerifier implements pgwire.Sessions.
func (p PostgresSessions) SCRAMVerifier(user string) (auth.SCRAMVerifier, bool) {
	return p.Server.Engine().SCRAMVerifier(user)
}

// Open implements pgwire.Sessions.
func (p PostgresSessions) Open(ctx context.Context, user, database string, params map[string]string) (pgwire.Session, error) {
	s, err := session.New(p.Server, user, rewrite.PostgresFrontEnd)
	if err != nil {
		return nil, err
	}
	s.SetStartupParameters(database, params)
	s.SetClient(netserver.RemoteAddr(ctx))
	return s, nil
}
