package pgwire

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgproto3/v2"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/proxy/netserver"
	"github.com/dpproxy/dpproxy/sqlerr"
)

// authenticate runs SCRAM-SHA-256 (RFC 5802/7677, no channel binding) with
// the client and ends with AuthenticationOk queued. An unknown user goes
// through the same exchange against a mock verifier and fails at the
// proof, with the same message as a wrong password.
func (c *conn) authenticate() error {
	v, known := c.srv.sessions.SCRAMVerifier(c.user)
	if !known {
		v = c.srv.mockVerifier(c.user)
	}
	scram := auth.NewSCRAMServer(v)

	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{auth.SCRAMMechanism}})
	if err := c.flush(); err != nil {
		return err
	}
	// pgproto3 decodes 'p' messages by the authentication step it was told.
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	msg, err := c.receiveAuth()
	if err != nil {
		return err
	}
	initial, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return c.unexpectedAuthMessage(msg)
	}
	switch {
	case initial.AuthMechanism == auth.SCRAMMechanism+"-PLUS" || bytes.HasPrefix(initial.Data, []byte("p=")):
		return c.fatal(sqlerr.New(sqlerr.FeatureNotSupported, "SCRAM channel binding is not supported").
			WithHint("dpproxy terminates the client connection itself; connect with channel_binding=disable or channel_binding=prefer."))
	case initial.AuthMechanism != auth.SCRAMMechanism:
		return c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "client selected an invalid SASL authentication mechanism"))
	}
	serverFirst, err := scram.First(initial.Data)
	if err != nil {
		c.log.Info("pgwire: malformed SCRAM message", "err", err)
		return c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message").WithDetail("%v", err))
	}

	c.send(&pgproto3.AuthenticationSASLContinue{Data: serverFirst})
	if err := c.flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	msg, err = c.receiveAuth()
	if err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return c.unexpectedAuthMessage(msg)
	}
	serverFinal, err := scram.Final(resp.Data)
	switch {
	case errors.Is(err, auth.ErrSCRAMFailed) || (err == nil && !known):
		lock := c.srv.opts.Throttle.Failed(c.user, netserver.RemoteIP(c.raw))
		c.log.Warn("pgwire: password authentication failed", "known_user", known, "locked_out_for", lock)
		// Unknown names and wrong passwords wait alike before the answer.
		netserver.SleepCtx(c.ctx, lock)
		return c.fatal(sqlerr.New(sqlerr.InvalidPassword, "password authentication failed for user %q", c.user))
	case err != nil:
		c.log.Info("pgwire: malformed SCRAM message", "err", err)
		return c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "malformed SCRAM message").WithDetail("%v", err))
	}

	c.send(&pgproto3.AuthenticationSASLFinal{Data: serverFinal})
	c.send(&pgproto3.AuthenticationOk{})
	if err := c.be.SetAuthType(pgproto3.AuthTypeOk); err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	return nil
}

// receiveAuth reads a message during authentication. A client that leaves
// is not an error worth a message: psql disconnects when it learns that it
// needs a password, asks for one and connects again.
func (c *conn) receiveAuth() (pgproto3.FrontendMessage, error) {
	msg, err := c.receive()
	if err == nil {
		return msg, nil
	}
	var tl *tooLargeError
	var pe *protocolError
	switch {
	case errors.As(err, &tl):
		c.log.Info("pgwire: authentication message too large", "size", tl.size)
		return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "invalid SASL response length"))
	case errors.As(err, &pe):
		c.log.Info("pgwire: protocol violation during authentication", "err", pe)
		return nil, c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "%s", pe.msg))
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Info("pgwire: authentication timed out")
	}
	return nil, fmt.Errorf("pgwire: reading authentication response: %w", err)
}

func (c *conn) unexpectedAuthMessage(msg pgproto3.FrontendMessage) error {
	if _, ok := msg.(*pgproto3.Terminate); ok {
		return errors.New("pgwire: client terminated during authentication")
	}
	return c.fatal(sqlerr.New(sqlerr.ProtocolViolation, "expected SASL response, got message type %q", messageTypeName(msg)))
}

// mockVerifier returns a verifier for an unknown user. Its salt is derived
// from the user name with a per-server secret, so repeated attempts see the
// same salt as they would for a real user; its keys are random, so no
// proof can match.
func (s *Server) mockVerifier(user string) auth.SCRAMVerifier {
	m := hmac.New(sha256.New, s.mockSecret[:])
	m.Write([]byte("pgwire mock SCRAM salt\x00"))
	m.Write([]byte(user))
	keys := make([]byte, 2*sha256.Size)
	if _, err := rand.Read(keys); err != nil {
		panic(fmt.Sprintf("pgwire: reading random bytes: %v", err))
	}
	return auth.SCRAMVerifier{
		Iterations: auth.SCRAMIterations,
		Salt:       m.Sum(nil)[:16],
		StoredKey:  keys[:sha256.Size],
		ServerKey:  keys[sha256.Size:],
	}
}
