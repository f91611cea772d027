// Package proxy wires the engine to the wire-protocol front ends
// (subpackage pgwire) and owns the backends (subpackage backend). Its
// adapters are the only code that knows both an engine Session and a wire
// protocol's session interface.
package proxy
