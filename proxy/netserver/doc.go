// Package netserver is the protocol-independent part of dpproxy's wire
// front ends (packages pgwire and mysqlwire): it accepts connections on
// listeners, retrying temporary accept errors with backoff, keeps the
// registry of live connections, and shuts down gracefully — listeners
// closed, idle connections closed at once, busy ones left to finish their
// command, and whatever is left force-closed when the deadline passes.
//
// It also keeps a connection's timeouts cheap ([Deadline],
// [StatementTimer]): the idle, write and statement deadlines move a
// runtime timer only now and then, not for every message, since each move
// wakes a thread on another core.
//
// It knows nothing about any protocol: each connection is a [Conn] that
// the front end creates and serves.
package netserver
