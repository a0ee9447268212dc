package testpeer

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// HangTB is the part of testing.TB Hanging uses.
type HangTB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Hanging listens on loopback, accepts every connection, reads what is sent
// and never answers: a server that hangs after the connect. accepted counts
// the connections; all close with tb's cleanup.
func Hanging(tb HangTB) (addr string, accepted *atomic.Int32) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	accepted = &atomic.Int32{}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), accepted
}
