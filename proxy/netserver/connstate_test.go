package netserver

import "testing"

func TestConnState(t *testing.T) {
	var s ConnState
	if p, take := s.TakeOverIfNotActive(); !take || p != Startup {
		t.Fatalf("a connection logging in is taken over: %v %v", p, take)
	}
	if ok, _ := s.EnterIdle(false); ok {
		t.Fatal("a taken-over connection went idle")
	}
	if s.EnterActive() {
		t.Fatal("a taken-over connection went active")
	}

	var busy ConnState
	busy.EnterIdle(false)
	busy.EnterActive()
	if _, take := busy.TakeOverIfNotActive(); take {
		t.Fatal("a busy connection was taken over")
	}
	if ok, notify := busy.EnterIdle(true); ok || !notify {
		t.Fatalf("a busy connection finishing during shutdown: ok=%v notify=%v, want to close and tell", ok, notify)
	}

	var idle ConnState
	idle.EnterIdle(false)
	if p, take := idle.TakeOverIfNotActive(); !take || p != Idle {
		t.Fatalf("an idle connection: %v %v", p, take)
	}
	if _, take := idle.TakeOverIfNotActive(); take {
		t.Fatal("taken over twice")
	}

	var forced ConnState
	forced.EnterIdle(false)
	forced.EnterActive()
	forced.TakeOver()
	if ok, notify := forced.EnterIdle(false); ok || notify {
		t.Fatalf("a force-closed connection: ok=%v notify=%v", ok, notify)
	}
}
