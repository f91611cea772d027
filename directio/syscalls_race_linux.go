//go:build linux && race

package directio

import "syscall"

// Under the race detector, reads and writes go through syscall.Read and
// syscall.Write: raw calls would hide from the detector both the buffers
// they touch and the order a socket's write puts before its read (which
// syscall's own functions tell it), and report races that are not there.
// The poller's callbacks, the part this package adds, are the same.

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	return errnoOf(syscall.Read(int(fd), p))
}

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	return errnoOf(syscall.Write(int(fd), p))
}
