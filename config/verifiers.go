package config

import (
	"errors"
	"fmt"

	"github.com/dpproxy/dpproxy/auth"
)

// parsedVerifiers is the decoded form of a Verifiers, built once at load
// time. Each src field records the string the value was parsed from, so a
// Verifiers whose strings were changed afterwards is re-parsed rather than
// answered from a stale cache.
type parsedVerifiers struct {
	scramSrc string
	scram    auth.SCRAMVerifier

	nativeSrc string
	native    []byte

	sha2Src string
	sha2    []byte
}

// NewVerifiers derives all three verifiers for password: SCRAM-SHA-256 with
// a fresh random salt, mysql_native_password and caching_sha2_password.
// `dpproxy passwd` prints the result for pasting into a policy file.
func NewVerifiers(password string) (Verifiers, error) {
	if password == "" {
		return Verifiers{}, errors.New("config: password must not be empty")
	}
	scram, err := auth.NewSCRAMVerifier(password)
	if err != nil {
		return Verifiers{}, fmt.Errorf("config: %w", err)
	}
	v := Verifiers{
		SCRAMSHA256:         scram.String(),
		MySQLNativePassword: auth.MySQLNativeVerifier(password),
		CachingSHA2Password: auth.CachingSHA2Verifier(password),
	}
	if err := v.parse(); err != nil {
		// Cannot happen: the auth package parses what it prints.
		return Verifiers{}, fmt.Errorf("config: %w", err)
	}
	return v, nil
}

// parse decodes every set verifier and caches the results. It returns the
// first error; use parseEach to see them all.
func (v *Verifiers) parse() error {
	for _, err := range v.parseEach() {
		if err != nil {
			return err
		}
	}
	return nil
}

// parseEach decodes every set verifier, caches the results and returns one
// error (or nil) per verifier, in the order scram_sha_256,
// mysql_native_password, caching_sha2_password. The cache is replaced
// only when all set verifiers parse.
func (v *Verifiers) parseEach() [3]error {
	var errs [3]error
	p := &parsedVerifiers{}
	if v.SCRAMSHA256 != "" {
		p.scram, errs[0] = auth.ParseSCRAMVerifier(v.SCRAMSHA256)
		p.scramSrc = v.SCRAMSHA256
	}
	if v.MySQLNativePassword != "" {
		p.native, errs[1] = auth.ParseMySQLNativeVerifier(v.MySQLNativePassword)
		p.nativeSrc = v.MySQLNativePassword
	}
	if v.CachingSHA2Password != "" {
		p.sha2, errs[2] = auth.ParseCachingSHA2Verifier(v.CachingSHA2Password)
		p.sha2Src = v.CachingSHA2Password
	}
	if errs == [3]error{} {
		v.parsed = p
	}
	return errs
}

// SCRAM returns the parsed SCRAM-SHA-256 verifier, and false when the
// analyst has none (or it does not parse, which Load rules out). The
// returned slices are shared and must not be modified.
func (v Verifiers) SCRAM() (auth.SCRAMVerifier, bool) {
	if v.SCRAMSHA256 == "" {
		return auth.SCRAMVerifier{}, false
	}
	if p := v.parsed; p != nil && p.scramSrc == v.SCRAMSHA256 {
		return p.scram, true
	}
	s, err := auth.ParseSCRAMVerifier(v.SCRAMSHA256)
	return s, err == nil
}

// MySQLNative returns the 20-byte SHA1(SHA1(password)) of the
// mysql_native_password verifier, and false when the analyst has none. The
// returned slice is shared and must not be modified.
func (v Verifiers) MySQLNative() ([]byte, bool) {
	if v.MySQLNativePassword == "" {
		return nil, false
	}
	if p := v.parsed; p != nil && p.nativeSrc == v.MySQLNativePassword {
		return p.native, true
	}
	b, err := auth.ParseMySQLNativeVerifier(v.MySQLNativePassword)
	return b, err == nil
}

// CachingSHA2 returns the 32-byte SHA256(SHA256(password)) of the
// caching_sha2_password verifier, and false when the analyst has none. The
// returned slice is shared and must not be modified.
func (v Verifiers) CachingSHA2() ([]byte, bool) {
	if v.CachingSHA2Password == "" {
		return nil, false
	}
	if p := v.parsed; p != nil && p.sha2Src == v.CachingSHA2Password {
		return p.sha2, true
	}
	b, err := auth.ParseCachingSHA2Verifier(v.CachingSHA2Password)
	return b, err == nil
}

// Empty reports whether no verifier is set.
func (v Verifiers) Empty() bool {
	return v.SCRAMSHA256 == "" && v.MySQLNativePassword == "" && v.CachingSHA2Password == ""
}
