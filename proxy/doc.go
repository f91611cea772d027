// Package proxy wires sessions (package session) to the wire-protocol
// front ends (subpackages pgwire and mysqlwire). Its adapters are the only
// code that knows both a session and a wire protocol's session interface;
// the front ends themselves know only the leaf types of package sqltypes.
package proxy
