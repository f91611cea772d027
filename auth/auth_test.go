package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// scramClient computes what a SCRAM-SHA-256 client sends (RFC 5802 §3).
func scramClient(t *testing.T, s *SCRAMServer, password string) ([]byte, error) {
	t.Helper()
	clientFirstBare := "n=,r=clientnonce123"
	serverFirst, err := s.First([]byte("n,," + clientFirstBare))
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := parseSCRAMAttrs(string(serverFirst))
	if err != nil {
		t.Fatal(err)
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	salted, _ := pbkdf2.Key(sha256.New, password, salt, SCRAMIterations, 32)
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=biws,r=" + attrs["r"]
	authMessage := clientFirstBare + "," + string(serverFirst) + "," + withoutProof
	sig := hmacSHA256(stored[:], []byte(authMessage))
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	final, err := s.Final([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
	if err != nil {
		return nil, err
	}
	serverKey := hmacSHA256(salted, []byte("Server Key"))
	want := "v=" + base64.StdEncoding.EncodeToString(hmacSHA256(serverKey, []byte(authMessage)))
	if string(final) != want {
		t.Errorf("server signature %q, want %q", final, want)
	}
	return final, nil
}

func TestSCRAMExchange(t *testing.T) {
	v, err := NewSCRAMVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseSCRAMVerifier(v.String())
	if err != nil {
		t.Fatal(err)
	}
	s := NewSCRAMServer(parsed)
	if _, err := scramClient(t, s, "correct horse"); err != nil || !s.Authenticated() {
		t.Fatalf("right password: %v", err)
	}
	s = NewSCRAMServer(parsed)
	if _, err := scramClient(t, s, "wrong"); !errors.Is(err, ErrSCRAMFailed) || s.Authenticated() {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestSCRAMRejectsMalformedMessages(t *testing.T) {
	v, _ := NewSCRAMVerifier("pw")
	for _, first := range []string{"", "x,,n=,r=a", "p=tls-server-end-point,,n=,r=a", "n,,n=", "n,,garbage", "n,"} {
		if _, err := NewSCRAMServer(v).First([]byte(first)); err == nil {
			t.Errorf("client-first %q accepted", first)
		}
	}
	s := NewSCRAMServer(v)
	if _, err := s.Final([]byte("c=biws,r=x,p=AAAA")); err == nil {
		t.Error("final before first accepted")
	}
	s.First([]byte("n,,n=,r=abc"))
	for _, final := range []string{"c=biws,r=wrongnonce,p=AAAA", "no proof here", "c=biws,r=abc"} {
		if _, err := s.Final([]byte(final)); err == nil {
			t.Errorf("client-final %q accepted", final)
		}
	}
}

func TestParseVerifiersRejectsBadForms(t *testing.T) {
	for _, s := range []string{"", "md5abc", "SCRAM-SHA-256$x:c2FsdA==$a:b", "SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA", "SCRAM-SHA-256$4096c2FsdA==$a:b"} {
		if _, err := ParseSCRAMVerifier(s); err == nil {
			t.Errorf("ParseSCRAMVerifier(%q) accepted", s)
		}
	}
	if _, err := ParseMySQLNativeVerifier("*ZZ"); err == nil {
		t.Error("short mysql verifier accepted")
	}
	if _, err := ParseCachingSHA2Verifier(strings.Repeat("0", 63)); err == nil {
		t.Error("short caching_sha2 verifier accepted")
	}
}

// The MySQL scrambles, computed as a client does.
func TestMySQLScrambles(t *testing.T) {
	nonce := []byte("0123456789abcdefghij")
	password := "s3cret"

	stage2, err := ParseMySQLNativeVerifier(MySQLNativeVerifier(password))
	if err != nil {
		t.Fatal(err)
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	mask := sha1.Sum(append(append([]byte{}, nonce...), h2[:]...))
	resp := make([]byte, 20)
	for i := range resp {
		resp[i] = h1[i] ^ mask[i]
	}
	if !VerifyMySQLNative(stage2, nonce, resp) {
		t.Error("mysql_native_password: right scramble refused")
	}
	resp[0] ^= 1
	if VerifyMySQLNative(stage2, nonce, resp) {
		t.Error("mysql_native_password: wrong scramble accepted")
	}

	cs2, err := ParseCachingSHA2Verifier(CachingSHA2Verifier(password))
	if err != nil {
		t.Fatal(err)
	}
	s1 := sha256.Sum256([]byte(password))
	s2 := sha256.Sum256(s1[:])
	m := sha256.New()
	m.Write(s2[:])
	m.Write(nonce)
	mask2 := m.Sum(nil)
	resp2 := make([]byte, 32)
	for i := range resp2 {
		resp2[i] = s1[i] ^ mask2[i]
	}
	if !VerifyCachingSHA2Fast(cs2, nonce, resp2) || !VerifyCachingSHA2Full(cs2, password) {
		t.Error("caching_sha2_password: right password refused")
	}
	if VerifyCachingSHA2Full(cs2, "other") || hmac.Equal(resp2, make([]byte, 32)) {
		t.Error("caching_sha2_password: wrong password accepted")
	}
}

// A SCRAM verifier checks a password sent in the clear (HTTP basic
// authentication): the right one passes, any other fails.
func TestSCRAMVerify(t *testing.T) {
	v, err := NewSCRAMVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Verify("correct horse") {
		t.Error("the password does not verify")
	}
	for _, wrong := range []string{"", "correct horse ", "Correct horse", "battery"} {
		if v.Verify(wrong) {
			t.Errorf("%q verifies", wrong)
		}
	}
}
