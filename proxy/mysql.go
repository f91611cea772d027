package proxy

import (
	"context"

	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/session"
)

// MySQLSessions opens sessions of a session.Server for the MySQL front end.
type MySQLSessions struct{ Server *session.Server }

var _ mysqlwire.Sessions = MySQLSessions{}

// Sessions serve the MySQL text and binary protocols.
var _ mysqlwire.Session = (*session.Session)(nil)

// MySQLVerifiers implements mysqlwire.Sessions.
func (m MySQLSessions) MySQLVerifiers(user string) (native, sha2 []byte, ok bool) {
	a, ok := m.Server.Engine().Policy().Analyst(user)
	if !ok {
		return nil, nil, false
	}
	native, _ = a.Password.MySQLNative()
	sha2, _ = a.Password.CachingSHA2()
	return native, sha2, true
}

// Open implements mysqlwire.Sessions. A database the engine does not serve
// is refused (1049 Unknown database).
func (m MySQLSessions) Open(ctx context.Context, user, database string) (mysqlwire.Session, error) {
	s, err := session.New(m.Server, user, rewrite.MySQLFrontEnd)
	if err != nil {
		return nil, err
	}
	if database != "" {
		if err := s.UseDatabase(database); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.SetClient(netserver.RemoteAddr(ctx))
	return s, nil
}
