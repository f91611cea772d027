package auth

import "testing"

// FuzzSCRAMServer drives the server side of SCRAM-SHA-256 with any
// client-first and client-final messages. It never panics, and nothing
// authenticates: a valid proof covers the server's random nonce, which a
// fixed input cannot know.
func FuzzSCRAMServer(f *testing.F) {
	v, err := NewSCRAMVerifier("pencil")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("n,,n=,r=rOprNGfwEbeRWgbNEkqO"), []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("y,,n=user,r=abc"), []byte("c=eSws,r=abc,p=AAAA"))
	f.Add([]byte("p=tls-server-end-point,,n=,r=x"), []byte(""))
	f.Add([]byte("n,a=admin,n=,r=x,e=ext"), []byte("c=biws,r=x,x=extra,p=="))
	f.Add([]byte("n,,m=mandatory,n=,r=x"), []byte("c=biws"))
	f.Add([]byte("n,,n=,r="), []byte("c=biws,r=,p=AAAA"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewSCRAMServer(v)
		if _, err := s.First(first); err != nil {
			return
		}
		if _, err := s.Final(final); err == nil || s.Authenticated() {
			t.Fatalf("authenticated by bytes not made from the password: %q / %q", first, final)
		}
	})
}

// FuzzParseSCRAMVerifier: any text is either refused or a verifier with
// the fields a SCRAM exchange needs.
func FuzzParseSCRAMVerifier(f *testing.F) {
	f.Add("SCRAM-SHA-256$4096:AKJlzvT0L3Yl8dGrNHGF0Q==$10z/ljTtokZGF0fgZQj8wiR1hWxLssvdON/R5HwQ9v8=:XzL5XZGjBdDj5s8M6TL0PcVHvKxVSJWDCBOCwfR2PXU=")
	f.Add("SCRAM-SHA-256$0:$:")
	f.Add("md5abc")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSCRAMVerifier(s)
		if err != nil {
			return
		}
		if v.Iterations <= 0 || len(v.Salt) == 0 || len(v.StoredKey) != 32 || len(v.ServerKey) != 32 {
			t.Fatalf("%q parsed to an unusable verifier %+v", s, v)
		}
	})
}
