package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/dpproxy/dpproxy/auth"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure the admin server.
type Options struct {
	// User and Verifier are the one login accepted.
	User     string
	Verifier auth.SCRAMVerifier
	// Throttle slows down repeated failed logins (shared with the front
	// ends; nil for none).
	Throttle *auth.Throttle
	Metrics  *Metrics
	// Ready checks what answering needs (the backend, the ledger); a
	// non-nil error makes /readyz answer 503 with its message.
	Ready func(context.Context) error
	// Policy, Accountant and Recent feed the budget page (GET /); it is
	// not served without Policy and Accountant.
	Policy     func() *config.Policy
	Accountant *budget.Accountant
	Recent     *Recent
	// Reload reads the policy file again and puts it in force (POST
	// /reload); nil answers 404.
	Reload func(context.Context) ReloadResult
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// ReloadResult is what a policy reload did: whether the new policy is in
// force, the errors that kept it out (file:line each), and the sections
// that changed but take effect only after a restart.
type ReloadResult struct {
	Applied       bool     `json:"applied"`
	Errors        []string `json:"errors,omitempty"`
	RestartNeeded []string `json:"restart_needed,omitempty"`
}

// readyTimeout bounds a readiness check.
const readyTimeout = 3 * time.Second

// Server is the admin HTTP server.
type Server struct {
	opts Options
	http *http.Server

	mu sync.Mutex
	// accepted is a digest of the last credentials that verified, so that
	// a scraper's repeated requests cost a hash, not a key derivation.
	accepted [sha256.Size]byte
	hasAny   bool
}

// New returns the admin server.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics.Registry(), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.ready)
	if opts.Reload != nil {
		mux.HandleFunc("POST /reload", s.reload)
	}
	if opts.Policy != nil && opts.Accountant != nil {
		mux.HandleFunc("GET /{$}", s.page)
	}
	s.http = &http.Server{
		Handler:           s.authenticated(mux),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	return s
}

// Serve answers admin requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server, letting requests in progress finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Handler is the server's handler, authentication included (for tests).
func (s *Server) Handler() http.Handler { return s.http.Handler }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ready")
}

// reload answers the reload's result as JSON: 200 when the new policy is
// in force, 422 when it was rejected (the old one stays).
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	// A browser holding the admin login sends it with a form another site
	// posts here; browsers say where such a request comes from (found in
	// review). Scripts (curl) send no Origin.
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host && origin != "https://"+r.Host {
		http.Error(w, "dpproxy admin: a reload must come from this listener's own origin or a script", http.StatusForbidden)
		return
	}
	res := s.opts.Reload(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if !res.Applied {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	json.NewEncoder(w).Encode(res)
}

// authenticated lets through requests that log in as the admin user.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if !ok || !s.login(r.Context(), user, password, r.RemoteAddr) {
			w.Header().Set("WWW-Authenticate", `Basic realm="dpproxy admin", charset="UTF-8"`)
			http.Error(w, "dpproxy admin: log in as the policy's admin.user", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login checks credentials: a digest of the last ones that verified is
// compared first; others are verified against the SCRAM verifier, after
// any lockout the throttle imposes on the name or address.
func (s *Server) login(ctx context.Context, user, password, remote string) bool {
	digest := sha256.Sum256([]byte(user + "\x00" + password))
	s.mu.Lock()
	known := s.hasAny && subtle.ConstantTimeCompare(digest[:], s.accepted[:]) == 1
	s.mu.Unlock()
	if known {
		return true
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if err := s.opts.Throttle.Wait(ctx, user, host, readyTimeout); err != nil {
		return false
	}
	// The key derivation runs whatever the name (found in review: skipping
	// it told the admin user's name by timing).
	passwordOK := s.opts.Verifier.Verify(password)
	if subtle.ConstantTimeCompare([]byte(user), []byte(s.opts.User)) != 1 || !passwordOK {
		s.opts.Throttle.Failed(user, host)
		s.opts.Logger.Warn("admin: failed login", "user", user, "addr", remote)
		return false
	}
	s.opts.Throttle.Succeeded(user)
	s.mu.Lock()
	s.accepted, s.hasAny = digest, true
	s.mu.Unlock()
	return true
}
