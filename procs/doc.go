// Package procs sizes the Go scheduler's processor count (GOMAXPROCS) to
// the process's load: one processor while the process uses less than
// most of one core and rarely waits in a system call, every processor the
// runtime gave it otherwise.
//
// Why: with more processors than its load needs, Go's scheduler spends
// CPU coordinating them: a goroutine woken by a socket may be run by an
// idle processor whose thread must itself be woken, and threads spin
// looking for work before they sleep. A proxy wakes goroutines twice per
// query. On the development machine (2 paravirtualized vCPUs shared with
// the database and the clients) a passthrough query cost dpproxy 33–43 µs
// of CPU on two processors and 28–34 µs sized by this package, at a
// slightly higher rate (BENCHMARKS.md, workload 4).
//
// Why not always one: a goroutine in a blocking system call (the ledger's
// fsync) holds the lone processor until Go's monitor thread takes it
// back, and every other goroutine waits: charged queries then gathered
// 1.6 charges per ledger transaction instead of 7, at about half the
// rate. And a load that needs more than a core needs more than one
// processor.
//
// How: Start puts the process on one processor, and from then on looks
// every tick at how many goroutines are in a system call
// (runtime/metrics) beyond the fewest ever seen (os/signal's loop waits in
// one for good), and every period at the CPU time the process used
// (getrusage). Goroutines that wait in the kernel on purpose (the
// ledger's commit) also declare how long they waited (Waited): on one
// processor the ticks see too little of such a wait, since the ticker
// itself needs the processor the waiter holds (on the development
// machine workload 5 stayed on one processor for seconds at a time, at
// 3 charges per ledger transaction and about 60 % of its rate). On one
// processor, a period in which the process used upCores of a core, or
// waited in system calls for upBlocked of the period (of the ticks, or of
// the time declared), gives the runtime its default count back at once
// (every processor the machine and its CPU limit allow). On that count,
// downAfter periods in a row below downCores and downBlocked lower it to
// one. The band between the two leaves room for the extra CPU the same
// load costs on more processors, so that a load does not move back and
// forth. That extra CPU can also hold a load in the band for good: a
// burst (logins, a batch of system calls) raises the count, and the same
// steady load then costs more than downCores on the most though it took
// less than upCores on one (a passthrough load on the development machine
// stayed at 0.7–0.8 of a core on two processors, 30–40 % more CPU per
// query than on one, where it took 0.55–0.68). So on the most, a load
// below probeCores (1.2 cores, above upCores: what fits on one processor
// costs more here) that does not wait in system calls (below downBlocked)
// is tried on one processor after probeAfter periods in a row (2 s), and
// stays there unless it turns busy within downAfter periods; each try
// that goes back up doubles the wait before the next, up to
// probeAfterMost periods (32 s), so a load that needs the most loses
// about one period in 128 to the tries.
//
// The price: on one processor a goroutine that computes for long holds
// up the others, up to the scheduler's 10 ms time slice at a time, until
// the period's CPU time raises the count (a burst of logins, whose SCRAM
// key derivation is deliberately slow, is the common case); and a load
// that takes most of a core shared with other processes (16 clients
// hitting the cache on the development machine: 0.6–0.7 of a core) stays
// on one processor at a lower rate than on two.
//
// listen.processors in the policy, or the GOMAXPROCS environment
// variable, fixes the count; Start then does nothing (it checks the
// variable itself).
package procs
