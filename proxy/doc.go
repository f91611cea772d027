// Package proxy wires the engine to the wire-protocol front ends
// (subpackages pgwire and mysqlwire). Its adapters are the only code that
// knows both an engine Session and a wire protocol's session interface.
package proxy
