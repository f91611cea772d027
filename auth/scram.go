package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SCRAMMechanism is the SASL mechanism name dpproxy offers.
const SCRAMMechanism = "SCRAM-SHA-256"

// ErrSCRAMFailed means the client's proof did not match: a wrong password or
// an unknown user. The two are indistinguishable to the client on purpose.
var ErrSCRAMFailed = errors.New("password authentication failed")

// SCRAMServer runs the server side of one SCRAM-SHA-256 exchange (RFC 5802,
// RFC 7677) without channel binding: dpproxy terminates TLS itself, so the
// client's channel could never match the backend's.
type SCRAMServer struct {
	v                  SCRAMVerifier
	clientFirstBare    string
	serverFirst        string
	nonce              string
	authenticationDone bool
}

// NewSCRAMServer starts an exchange against verifier v. For an unknown user,
// pass a verifier made from a random password so that the exchange looks
// the same and fails at the proof.
func NewSCRAMServer(v SCRAMVerifier) *SCRAMServer { return &SCRAMServer{v: v} }

// First consumes the client-first-message and returns the server-first-message.
func (s *SCRAMServer) First(clientFirst []byte) ([]byte, error) {
	msg := string(clientFirst)
	// gs2 header: "n,," or "y,," (no channel binding); "p=" is refused.
	var rest string
	switch {
	case strings.HasPrefix(msg, "n,"), strings.HasPrefix(msg, "y,"):
		rest = msg[2:]
	case strings.HasPrefix(msg, "p="):
		return nil, errors.New("SCRAM channel binding is not supported: dpproxy terminates TLS; connect with channel_binding=disable or prefer")
	default:
		return nil, errors.New("malformed SCRAM client-first-message: bad GS2 header")
	}
	// authzid (ignored: must be empty or the user itself) up to the next ','.
	i := strings.IndexByte(rest, ',')
	if i < 0 {
		return nil, errors.New("malformed SCRAM client-first-message: no authzid separator")
	}
	s.clientFirstBare = rest[i+1:]
	attrs, err := parseSCRAMAttrs(s.clientFirstBare)
	if err != nil {
		return nil, err
	}
	clientNonce, ok := attrs["r"]
	if !ok || clientNonce == "" {
		return nil, errors.New("malformed SCRAM client-first-message: no nonce")
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("auth: server nonce: %w", err)
	}
	s.nonce = clientNonce + base64.StdEncoding.EncodeToString(raw)
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(s.v.Salt), s.v.Iterations)
	return []byte(s.serverFirst), nil
}

// Final consumes the client-final-message, checks the proof and returns the
// server-final-message. It returns ErrSCRAMFailed for a wrong password.
func (s *SCRAMServer) Final(clientFinal []byte) ([]byte, error) {
	if s.serverFirst == "" {
		return nil, errors.New("SCRAM client-final-message before client-first-message")
	}
	msg := string(clientFinal)
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, errors.New("malformed SCRAM client-final-message: no proof")
	}
	withoutProof := msg[:i]
	attrs, err := parseSCRAMAttrs(msg)
	if err != nil {
		return nil, err
	}
	if attrs["r"] != s.nonce {
		return nil, errors.New("SCRAM nonce mismatch")
	}
	if cb := attrs["c"]; cb != "biws" && cb != "eSws" { // base64 of "n,," and "y,,"
		return nil, errors.New("SCRAM channel binding data not supported")
	}
	proof, err := base64.StdEncoding.DecodeString(attrs["p"])
	if err != nil || len(proof) != sha256.Size {
		return nil, errors.New("malformed SCRAM client proof")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	signature := hmacSHA256(s.v.StoredKey, []byte(authMessage))
	clientKey := make([]byte, sha256.Size)
	for j := range clientKey {
		clientKey[j] = proof[j] ^ signature[j]
	}
	stored := sha256.Sum256(clientKey)
	if !hmac.Equal(stored[:], s.v.StoredKey) {
		return nil, ErrSCRAMFailed
	}
	s.authenticationDone = true
	serverSig := hmacSHA256(s.v.ServerKey, []byte(authMessage))
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

// Authenticated reports whether Final accepted the client's proof.
func (s *SCRAMServer) Authenticated() bool { return s.authenticationDone }

func parseSCRAMAttrs(s string) (map[string]string, error) {
	attrs := make(map[string]string)
	for _, part := range strings.Split(s, ",") {
		if len(part) < 2 || part[1] != '=' {
			return nil, fmt.Errorf("malformed SCRAM attribute %q", part)
		}
		attrs[part[:1]] = part[2:]
	}
	return attrs, nil
}
