package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SCRAMIterations is the PBKDF2 iteration count for new verifiers,
// PostgreSQL's default.
const SCRAMIterations = 4096

// SCRAMVerifier is a parsed SCRAM-SHA-256 verifier.
type SCRAMVerifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// NewSCRAMVerifier derives a verifier for password with a fresh random salt.
func NewSCRAMVerifier(password string) (SCRAMVerifier, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return SCRAMVerifier{}, fmt.Errorf("auth: reading salt: %w", err)
	}
	return scramVerifierFromSalt(password, salt, SCRAMIterations)
}

func scramVerifierFromSalt(password string, salt []byte, iterations int) (SCRAMVerifier, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return SCRAMVerifier{}, fmt.Errorf("auth: deriving key: %w", err)
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	return SCRAMVerifier{
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  stored[:],
		ServerKey:  hmacSHA256(salted, []byte("Server Key")),
	}, nil
}

// Verify reports whether password is the verifier's (for logins that
// send the password itself, as HTTP basic authentication does): its
// StoredKey is derived again and compared in constant time.
func (v SCRAMVerifier) Verify(password string) bool {
	w, err := scramVerifierFromSalt(password, v.Salt, v.Iterations)
	return err == nil && subtle.ConstantTimeCompare(w.StoredKey, v.StoredKey) == 1
}

// String renders the verifier in PostgreSQL's stored form.
func (v SCRAMVerifier) String() string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", v.Iterations, b64(v.Salt), b64(v.StoredKey), b64(v.ServerKey))
}

// ParseSCRAMVerifier parses PostgreSQL's stored form
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>.
func ParseSCRAMVerifier(s string) (SCRAMVerifier, error) {
	const prefix = "SCRAM-SHA-256$"
	bad := func(why string) (SCRAMVerifier, error) {
		return SCRAMVerifier{}, fmt.Errorf("not a SCRAM-SHA-256 verifier (%s); expected SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> as printed by `dpproxy passwd`", why)
	}
	if !strings.HasPrefix(s, prefix) {
		return bad("missing SCRAM-SHA-256$ prefix")
	}
	iterSalt, keys, ok := strings.Cut(s[len(prefix):], "$")
	if !ok {
		return bad("missing $ before the keys")
	}
	iterStr, saltStr, ok1 := strings.Cut(iterSalt, ":")
	storedStr, serverStr, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return bad("missing ':' separator")
	}
	iter, err := strconv.Atoi(iterStr)
	if err != nil || iter < 1 {
		return bad("iteration count is not a positive integer")
	}
	var v SCRAMVerifier
	v.Iterations = iter
	dec := base64.StdEncoding.DecodeString
	if v.Salt, err = dec(saltStr); err != nil || len(v.Salt) == 0 {
		return bad("salt is not base64")
	}
	if v.StoredKey, err = dec(storedStr); err != nil || len(v.StoredKey) != sha256.Size {
		return bad("StoredKey is not 32 bytes of base64")
	}
	if v.ServerKey, err = dec(serverStr); err != nil || len(v.ServerKey) != sha256.Size {
		return bad("ServerKey is not 32 bytes of base64")
	}
	return v, nil
}

// MySQLNativeVerifier returns "*" + upper hex SHA1(SHA1(password)), the form
// MySQL stores for mysql_native_password.
func MySQLNativeVerifier(password string) string {
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(h2[:]))
}

// ParseMySQLNativeVerifier returns the 20-byte SHA1(SHA1(password)).
func ParseMySQLNativeVerifier(s string) ([]byte, error) {
	if len(s) != 41 || s[0] != '*' {
		return nil, errors.New(`not a mysql_native_password verifier; expected "*" followed by 40 hex digits, as printed by ` + "`dpproxy passwd`")
	}
	b, err := hex.DecodeString(s[1:])
	if err != nil {
		return nil, errors.New("mysql_native_password verifier is not hex after '*'")
	}
	return b, nil
}

// CachingSHA2Verifier returns hex SHA256(SHA256(password)).
func CachingSHA2Verifier(password string) string {
	h1 := sha256.Sum256([]byte(password))
	h2 := sha256.Sum256(h1[:])
	return hex.EncodeToString(h2[:])
}

// ParseCachingSHA2Verifier returns the 32-byte SHA256(SHA256(password)).
func ParseCachingSHA2Verifier(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("not a caching_sha2_password verifier; expected 64 hex digits, as printed by `dpproxy passwd`")
	}
	return b, nil
}

// VerifyMySQLNative checks a mysql_native_password scramble: the client sends
// SHA1(pw) XOR SHA1(nonce ‖ SHA1(SHA1(pw))).
func VerifyMySQLNative(stage2, nonce, response []byte) bool {
	if len(response) != sha1.Size || len(stage2) != sha1.Size {
		return false
	}
	h := sha1.New()
	h.Write(nonce)
	h.Write(stage2)
	mask := h.Sum(nil)
	stage1 := make([]byte, sha1.Size)
	for i := range stage1 {
		stage1[i] = response[i] ^ mask[i]
	}
	got := sha1.Sum(stage1)
	return hmac.Equal(got[:], stage2)
}

// VerifyCachingSHA2Fast checks a caching_sha2_password fast-path scramble:
// the client sends SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) ‖ nonce).
func VerifyCachingSHA2Fast(stage2, nonce, response []byte) bool {
	if len(response) != sha256.Size || len(stage2) != sha256.Size {
		return false
	}
	h := sha256.New()
	h.Write(stage2)
	h.Write(nonce)
	mask := h.Sum(nil)
	stage1 := make([]byte, sha256.Size)
	for i := range stage1 {
		stage1[i] = response[i] ^ mask[i]
	}
	got := sha256.Sum256(stage1)
	return hmac.Equal(got[:], stage2)
}

// VerifyCachingSHA2Full checks a cleartext password received over a secure
// channel (caching_sha2_password full authentication).
func VerifyCachingSHA2Full(stage2 []byte, password string) bool {
	h1 := sha256.Sum256([]byte(password))
	h2 := sha256.Sum256(h1[:])
	return hmac.Equal(h2[:], stage2)
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
