package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/dpproxy/dpproxy/directio"
	"github.com/dpproxy/dpproxy/procs"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// cmdRelay is the floor of any proxy written in Go on this machine: it
// accepts connections and copies bytes between each and a new connection
// to the target, one goroutine per direction, through a user-space buffer
// (a proxy that reads the protocol must bring each message into its own
// memory; io.Copy would splice TCP to TCP in the kernel), with the
// direct system calls dpproxy's sockets use (directio) and its processor
// count sized to the load (procs). It parses
// nothing, checks nothing and pools nothing, so a workload through it
// costs what the two extra sockets, their system calls and Go's scheduler
// cost and nothing else. bench/run.sh runs the passthrough workloads
// through it next to dpproxy, PgBouncer and direct access.
//
//	loadgen relay --listen 127.0.0.1:PORT --target 127.0.0.1:PORT [--for D]
//
// It stops after --for (default 1 h), on SIGINT or SIGTERM.
func cmdRelay(args []string) error {
	fs := flag.NewFlagSet("relay", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to accept clients on")
	target := fs.String("target", "", "address of the server (host:port)")
	life := fs.Duration("for", time.Hour, "stop after this long")
	fs.Parse(args)
	if *target == "" {
		return errors.New("relay: --target is required")
	}
	return serveFor("relay", *listen, *life, func(ctx context.Context, client net.Conn) {
		relayConn(ctx, client, *target)
	})
}

// serveFor accepts connections on listen, prints its address, and runs
// handle for each on its own goroutine until life has passed or SIGINT or
// SIGTERM comes; it then waits for the handlers (ctx ends with it). name
// prefixes its errors.
func serveFor(name, listen string, life time.Duration, handle func(ctx context.Context, c net.Conn)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, life)
	defer cancel()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Println(ln.Addr().String())
	procs.Start(ctx) // as dpproxy sizes its processors
	return serveOn(ctx, name, ln, handle)
}

// serveOn runs handle for each connection ln accepts until ctx ends (it
// closes ln), then waits for the handlers.
func serveOn(ctx context.Context, name string, ln net.Listener, handle func(ctx context.Context, c net.Conn)) error {
	go func() { <-ctx.Done(); ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		c = directio.Wrap(c) // as dpproxy's own sockets
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(ctx, c)
		}()
	}
}

// relayConn copies bytes both ways between client and a new connection to
// target until either side closes or ctx ends.
func relayConn(ctx context.Context, client net.Conn, target string) {
	defer client.Close()
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return
	}
	defer server.Close()
	server = directio.Wrap(server)
	stop := context.AfterFunc(ctx, func() { client.Close(); server.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	pump := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pump(server, client)
	go pump(client, server)
	<-done
	<-done
}
