package proxy

import (
	"context"

	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/proxy/mysqlwire"
	"github.com/dpproxy/dpproxy/rewrite"
)

// MySQLSessions adapts an Engine to the MySQL front end.
type MySQLSessions struct{ Engine *engine.Engine }

var _ mysqlwire.Sessions = MySQLSessions{}

// The engine's sessions serve the MySQL text and binary protocols.
var _ mysqlwire.Session = (*engine.Session)(nil)

// MySQLVerifiers implements mysqlwire.Sessions.
func (m MySQLSessions) MySQLVerifiers(user string) (native, sha2 []byte, ok bool) {
	a, ok := m.Engine.Policy().Analyst(user)
	if !ok {
		return nil, nil, false
	}
	native, _ = a.Password.MySQLNative()
	sha2, _ = a.Password.CachingSHA2()
	return native, sha2, true
}

// Open implements mysqlwire.Sessions. A database the engine does not serve
// is refused (1049 Unknown database).
func (m MySQLSessions) Open(_ context.Context, user, database string) (mysqlwire.Session, error) {
	s, err := m.Engine.NewSession(user, rewrite.MySQLFrontEnd)
	if err != nil {
		return nil, err
	}
	if database != "" {
		if err := s.UseDatabase(database); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}
