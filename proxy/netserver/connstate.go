package netserver

import "sync"

// Phase is where a connection is in its life, as Shutdown sees it.
type Phase int

const (
	// Startup: the client has not logged in yet.
	Startup Phase = iota
	// Idle: waiting for the client's next message.
	Idle
	// Active: handling a message.
	Active
)

// ConnState is a connection's phase and whether Shutdown or ForceClose
// has taken it over, shared by the goroutine serving the connection and
// the one shutting the server down. Both protocols keep one per
// connection; the zero value is a connection in Startup.
type ConnState struct {
	mu      sync.Mutex
	phase   Phase
	closing bool
}

// EnterIdle marks the connection idle before it waits for a message. ok is
// false when the connection must close instead; notify then says whether
// the client still needs to be told (the server began shutting down while
// the connection was busy).
func (s *ConnState) EnterIdle(shuttingDown bool) (ok, notify bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false, false
	}
	if shuttingDown {
		s.closing = true
		return false, true
	}
	s.phase = Idle
	return true, false
}

// EnterActive marks the connection busy after a message arrived; false if
// Shutdown took it over meanwhile.
func (s *ConnState) EnterActive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.phase = Active
	return true
}

// TakeOverIfNotActive is Shutdown's step for the connection: one that is
// not handling a message is marked closing, and take is true with the
// phase it was in, for the caller to tell the client (Idle) and close it;
// a busy one is left to finish (EnterIdle then refuses it). take is false
// for a connection already taken over.
func (s *ConnState) TakeOverIfNotActive() (phase Phase, take bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.phase == Active {
		return s.phase, false
	}
	s.closing = true
	return s.phase, true
}

// TakeOver marks the connection closing whatever it is doing (ForceClose).
func (s *ConnState) TakeOver() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}
