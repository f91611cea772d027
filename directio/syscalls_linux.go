//go:build linux && !race

package directio

import (
	"syscall"
	"unsafe"
)

// readFD and writeFD are read(2) and write(2) without the scheduler's
// bookkeeping (syscall.RawSyscall); p is not empty.
func readFD(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}

func writeFD(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}
