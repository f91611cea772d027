package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// The raw client of `loadgen idle`: a PostgreSQL connection opened with
// pgproto3 directly, authenticated with SCRAM-SHA-256 (or trust or a
// cleartext password), one simple-protocol "SELECT 1", then only the
// socket is kept. The server does all its usual work (the whole SCRAM
// exchange, the proof checked against its verifier); the client derives
// the salted password (PBKDF2, 4096 iterations of HMAC-SHA-256 by
// default) once per salt and reuses it, where pgx derives it again for
// every connection. Opening 10,000 connections is then bounded by the
// server's work, not by the load generator's PBKDF2 on the same cores.

// rawTarget is the parsed DSN of the raw client.
type rawTarget struct {
	addr     string
	params   map[string]string
	password string
	keys     scramKeyCache
}

func newRawTarget(dsn string) (*rawTarget, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.TLSConfig != nil {
		return nil, errors.New("the raw client speaks plaintext only: use sslmode=disable (or --client pgx)")
	}
	params := map[string]string{"user": cfg.User, "database": cfg.Database}
	for k, v := range cfg.RuntimeParams {
		params[k] = v
	}
	return &rawTarget{addr: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), params: params, password: cfg.Password}, nil
}

// scramKeyCache holds the keys derived from the password for one salt and
// iteration count (the analyst's verifier: the same for every connection).
type scramKeyCache struct {
	mu                   sync.Mutex
	salt                 []byte
	iter                 int
	clientKey, serverKey []byte
}

func (c *scramKeyCache) get(password string, salt []byte, iter int) (clientKey, serverKey []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientKey != nil && c.iter == iter && bytes.Equal(c.salt, salt) {
		return c.clientKey, c.serverKey, nil
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		return nil, nil, err
	}
	c.salt, c.iter = slices.Clone(salt), iter
	c.clientKey, c.serverKey = hmacSHA256(salted, "Client Key"), hmacSHA256(salted, "Server Key")
	return c.clientKey, c.serverKey, nil
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// open connects, logs in, runs "SELECT 1" and returns the idle socket.
func (t *rawTarget) open(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc.SetDeadline(deadline)
	if err := t.login(nc); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}

func (t *rawTarget) login(nc net.Conn) error {
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: t.params})
	if err := fe.Flush(); err != nil {
		return err
	}
	var (
		clientFirstBare, authMessage string
		clientNonce                  string
		serverKey                    []byte
		queried                      bool
	)
	for {
		msg, err := fe.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.AuthenticationOk:
		case *pgproto3.AuthenticationCleartextPassword:
			fe.Send(&pgproto3.PasswordMessage{Password: t.password})
		case *pgproto3.AuthenticationSASL:
			if !slices.Contains(m.AuthMechanisms, "SCRAM-SHA-256") {
				return fmt.Errorf("server offers SASL %v, not SCRAM-SHA-256", m.AuthMechanisms)
			}
			raw := make([]byte, 18)
			rand.Read(raw)
			clientNonce = base64.RawStdEncoding.EncodeToString(raw)
			clientFirstBare = "n=,r=" + clientNonce
			fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,," + clientFirstBare)})
		case *pgproto3.AuthenticationSASLContinue:
			serverFirst := string(m.Data)
			var nonce, salt64, iters string
			for _, a := range strings.Split(serverFirst, ",") {
				switch {
				case strings.HasPrefix(a, "r="):
					nonce = a[2:]
				case strings.HasPrefix(a, "s="):
					salt64 = a[2:]
				case strings.HasPrefix(a, "i="):
					iters = a[2:]
				}
			}
			salt, err1 := base64.StdEncoding.DecodeString(salt64)
			iter, err2 := strconv.Atoi(iters)
			if err1 != nil || err2 != nil || !strings.HasPrefix(nonce, clientNonce) || iter < 1 {
				return fmt.Errorf("malformed SCRAM server-first-message %q", serverFirst)
			}
			clientKey, sk, err := t.keys.get(t.password, salt, iter)
			if err != nil {
				return err
			}
			serverKey = sk
			storedKey := sha256.Sum256(clientKey)
			withoutProof := "c=biws,r=" + nonce
			authMessage = clientFirstBare + "," + serverFirst + "," + withoutProof
			sig := hmacSHA256(storedKey[:], authMessage)
			proof := make([]byte, len(clientKey))
			for i := range proof {
				proof[i] = clientKey[i] ^ sig[i]
			}
			fe.Send(&pgproto3.SASLResponse{Data: []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))})
		case *pgproto3.AuthenticationSASLFinal:
			want := "v=" + base64.StdEncoding.EncodeToString(hmacSHA256(serverKey, authMessage))
			if serverKey == nil || !hmac.Equal(m.Data, []byte(want)) {
				return errors.New("SCRAM: bad server signature")
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("%s: %s (SQLSTATE %s)", m.Severity, m.Message, m.Code)
		case *pgproto3.ReadyForQuery:
			if queried {
				return nil
			}
			// One round trip: the session is fully set up.
			fe.Send(&pgproto3.Query{String: "SELECT 1"})
			queried = true
		case *pgproto3.AuthenticationMD5Password, *pgproto3.AuthenticationGSS:
			return fmt.Errorf("unsupported authentication request %T (use --client pgx)", m)
		default:
			// ParameterStatus, BackendKeyData, NoticeResponse,
			// RowDescription, DataRow, CommandComplete.
		}
		if err := fe.Flush(); err != nil {
			return err
		}
	}
}
