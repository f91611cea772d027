//go:build !linux

package directio

import "net"

// Wrap returns nc unchanged: direct system calls are made on Linux only.
func Wrap(nc net.Conn) net.Conn { return nc }

// SetEnabled does nothing: direct system calls are made on Linux only.
func SetEnabled(bool) {}
