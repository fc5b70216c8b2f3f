package lab

import (
	"io"
	"net"
	"sync"
)

// Forward makes addr (an API server on the host's loopback, say) reachable
// at the same address inside the network namespace ns: it listens there
// and relays every connection to addr as dialled from the host. A lab
// agent then uses a host kubeconfig unchanged, as a DaemonSet pod with
// hostNetwork reaches its API server. close stops listening and cuts the
// relayed connections.
func Forward(ns, addr string) (close func(), err error) {
	// The loopback of a new namespace is down until someone sets it up.
	if err := ip("-n", ns, "link", "set", "lo", "up"); err != nil {
		return nil, err
	}
	var ln net.Listener
	err = inNamespace(ns, func() error {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				out, err := net.Dial("tcp", addr)
				if err != nil {
					in.Close()
					return
				}
				track(in, true)
				track(out, true)
				done := make(chan struct{}, 2)
				relay := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					done <- struct{}{}
				}
				go relay(out, in)
				go relay(in, out)
				<-done // one side ended: end both
				in.Close()
				out.Close()
				track(in, false)
				track(out, false)
			}()
		}
	}()
	return func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	}, nil
}
