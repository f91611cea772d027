// Package directio makes a socket's small reads and writes as raw system
// calls, inside the network poller's callbacks, instead of the runtime's
// scheduler-aware ones.
//
// Why: a goroutine in an ordinary system call lets the runtime's monitor
// thread (sysmon) take its processor for another thread once the call has
// spanned one of sysmon's 20 µs ticks. On a virtualized machine a loopback
// write often does, and every hand-off then costs a thread wake-up and two
// context switches, each a trip through the hypervisor; sysmon itself,
// seeing hand-offs, keeps waking every 20 µs. A proxy makes several such
// calls per query. On the development machine (2 paravirtualized vCPUs)
// the wrapped sockets cut dpproxy's CPU per MySQL passthrough query by
// 11–19 % (BENCHMARKS.md, workload 9).
//
// Why it is safe: every socket the net package makes is non-blocking, so a
// read or write returns at once, with EAGAIN when the socket is not ready;
// the poller then parks the goroutine exactly as net.Conn's own methods
// do, honouring deadlines and Close. Only transfers of at most 64 KiB go
// the direct way, so a raw call holds its processor for a bounded copy;
// larger ones take net.Conn's path.
//
// Raw calls are made only while the process is busy (more sockets made a
// call in the last millisecond than there are processors): a lone
// client's round trip is faster with ordinary calls, whose bookkeeping
// keeps a thread awake for the next packet (activity_linux.go).
// SetEnabled(false) (the policy's listen.direct_io: false) leaves sockets
// as they are.
//
// Under the race detector the calls inside the callbacks are syscall.Read
// and syscall.Write, which tell the detector what raw calls cannot (the
// buffers they touch, and that a write happens before the read that gets
// its bytes).
package directio
