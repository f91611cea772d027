// Package auditlog writes dpproxy's audit trail: one JSON line per
// statement any session ran — when, who, from where, over which
// protocol, the statement's text, what dpproxy decided, the ε and δ
// charged, how many rows were released, whether the answer came from the
// cache, how long it took and its SQLSTATE — and never a value the
// statement released or read (only what the client itself sent or was
// told).
//
// The file is rotated by size (gopkg.in/natefinch/lumberjack.v2): past
// max_size_mb it is renamed with a timestamp and a new one started; the
// max_files newest rotated files are kept. Each line is written with one
// write(2) when its statement ends, before the answer is sent, so a line
// is never interleaved with another and survives dpproxy crashing; with
// fsync: always the file is also fsynced then, so that it survives the
// machine crashing too, at the cost of a disk flush per statement. A
// line that cannot be written is reported in dpproxy's log and counted
// (Log.Errors); the statement is answered regardless.
package auditlog
