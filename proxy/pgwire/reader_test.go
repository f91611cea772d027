package pgwire

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jackc/pgproto3/v2"
)

// FuzzDecodeParse: messageReader decodes every Parse body as pgproto3's
// own decoder does (the same name, text and parameter types, or an error
// from both), whatever Parse came before it.
func FuzzDecodeParse(f *testing.F) {
	for _, p := range []pgproto3.Parse{
		{Query: "select 1"},
		{Name: "s", Query: "select $1, $2", ParameterOIDs: []uint32{23, 25}},
		{Query: ""},
	} {
		f.Add(msgBody(&p), msgBody(&pgproto3.Parse{Query: "select 1"}))
	}
	f.Add([]byte("s\x00q\x00\xff\xff\x00\x00"), []byte{})
	f.Add([]byte("no terminator"), []byte("q\x00\x00\x00"))
	f.Add([]byte("\x00q\x00\x00"), []byte("\x00q\x00\x00"))
	f.Fuzz(func(t *testing.T, before, body []byte) {
		r := &messageReader{}
		_ = r.decodeParse(before)
		gotErr := r.decodeParse(body)
		var want pgproto3.Parse
		wantErr := want.Decode(body)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("body %q: error %v, pgproto3's %v", body, gotErr, wantErr)
		}
		if gotErr == nil && fmt.Sprintf("%q %q %v", r.parse.Name, r.parse.Query, r.parse.ParameterOIDs) !=
			fmt.Sprintf("%q %q %v", want.Name, want.Query, want.ParameterOIDs) {
			t.Fatalf("body %q: %+v, pgproto3's %+v", body, r.parse, want)
		}
	})
}

// TestDecodeParseKeepsText: a Parse of the text the last one had reuses
// its string; another text gets its own.
func TestDecodeParseKeepsText(t *testing.T) {
	r := &messageReader{}
	body := msgBody(&pgproto3.Parse{Query: "select $1", ParameterOIDs: []uint32{20}})
	if err := r.decodeParse(body); err != nil {
		t.Fatal(err)
	}
	first := r.parse.Query
	if allocs := testing.AllocsPerRun(100, func() { _ = r.decodeParse(body) }); allocs != 0 {
		t.Errorf("%v allocations for the same Parse again, want 0", allocs)
	}
	if r.parse.Query != first || fmt.Sprint(r.parse.ParameterOIDs) != "[20]" {
		t.Errorf("again: %+v", r.parse)
	}
	if err := r.decodeParse(msgBody(&pgproto3.Parse{Query: "select 2"})); err != nil || r.parse.Query != "select 2" || r.parse.ParameterOIDs != nil {
		t.Errorf("another text: %+v, %v", r.parse, err)
	}
}

// msgBody is a message's body, without its type and length.
func msgBody(msg pgproto3.FrontendMessage) []byte {
	return bytes.Clone(msgBytes(msg)[5:])
}
