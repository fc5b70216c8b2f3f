package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/l4"
)

// Servers listens on every pod's declared TCP and UDP ports until Close.
// A TCP server accepts and closes; a UDP server echoes one datagram.
type Servers struct {
	closers []interface{ Close() error }
}

// Serve opens the listeners of every pod of l.
func (l *Lab) Serve() (*Servers, error) {
	s := &Servers{}
	for _, p := range l.Pods {
		err := inNamespace(p.Namespace, func() error {
			for _, port := range p.Ports {
				addr := net.JoinHostPort(p.IP.String(), strconv.Itoa(int(port.Num)))
				switch port.Proto {
				case l4.TCP:
					ln, err := net.Listen("tcp4", addr)
					if err != nil {
						return err
					}
					s.closers = append(s.closers, ln)
					go acceptLoop(ln)
				case l4.UDP:
					pc, err := net.ListenPacket("udp4", addr)
					if err != nil {
						return err
					}
					s.closers = append(s.closers, pc)
					go echoLoop(pc)
				}
			}
			return nil
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serving pod %s: %w", p.Key, err)
		}
	}
	return s, nil
}

// Close stops every listener.
func (s *Servers) Close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
}

func acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			// Hold the connection until the client closes it, so that a
			// test can keep a connection open across a policy change.
			buf := make([]byte, 64)
			for {
				n, err := c.Read(buf)
				if err != nil {
					_ = c.Close()
					return
				}
				if _, err := c.Write(buf[:n]); err != nil {
					_ = c.Close()
					return
				}
			}
		}()
	}
}

func echoLoop(pc net.PacketConn) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo(buf[:n], from)
	}
}

// ProbeTimeout is how long a probe waits: denied traffic is dropped, so a
// denied probe always takes this long.
const ProbeTimeout = 1200 * time.Millisecond

// Probe reports whether src reaches dst on port with a real connection: a
// TCP handshake, or a UDP datagram echoed back.
func (l *Lab) Probe(src Pod, dst netip.Addr, port l4.Port) (bool, error) {
	addr := net.JoinHostPort(dst.String(), strconv.Itoa(int(port.Num)))
	var conn net.Conn
	var dialErr error
	err := inNamespace(src.Namespace, func() error {
		d := net.Dialer{Timeout: ProbeTimeout}
		switch port.Proto {
		case l4.TCP:
			conn, dialErr = d.Dial("tcp4", addr)
		case l4.UDP:
			conn, dialErr = d.Dial("udp4", addr)
		default:
			return fmt.Errorf("cannot probe %s", port)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if dialErr != nil {
		var ne net.Error
		if errors.As(dialErr, &ne) && ne.Timeout() {
			return false, nil
		}
		return false, dialErr // refused or unreachable: the lab is broken, not the policy
	}
	defer conn.Close()
	if port.Proto == l4.TCP {
		return true, nil
	}
	_ = conn.SetDeadline(time.Now().Add(ProbeTimeout))
	if _, err := conn.Write([]byte("netpol")); err != nil {
		return false, err
	}
	buf := make([]byte, 16)
	if _, err := conn.Read(buf); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Cell is one probed flow.
type Cell struct {
	From, To string
	Port     l4.Port
	Observed bool
	Err      error
}

// ProbeAll probes every ordered pair of distinct pods on every port the
// destination serves among ports (all its ports when ports is nil), in
// parallel. Probes that time out are tried once more, together, before
// they count as denied: a denied flow never connects, an allowed one may be
// unlucky once.
func (l *Lab) ProbeAll(ctx context.Context, ports []l4.Port) []Cell {
	var cells []Cell
	for _, src := range l.Pods {
		for _, dst := range l.Pods {
			if src.Key == dst.Key {
				continue
			}
			for _, port := range dst.Ports {
				if ports == nil || contains(ports, port) {
					cells = append(cells, Cell{From: src.Key, To: dst.Key, Port: port})
				}
			}
		}
	}
	byKey := map[string]Pod{}
	for _, p := range l.Pods {
		byKey[p.Key] = p
	}
	probe := func(idx []int) {
		sem := make(chan struct{}, 128)
		var wg sync.WaitGroup
		for _, i := range idx {
			if ctx.Err() != nil {
				cells[i].Err = ctx.Err()
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func(c *Cell) {
				defer func() { <-sem; wg.Done() }()
				c.Observed, c.Err = l.Probe(byKey[c.From], byKey[c.To].IP, c.Port)
			}(&cells[i])
		}
		wg.Wait()
	}
	all := make([]int, len(cells))
	for i := range cells {
		all[i] = i
	}
	probe(all)
	var again []int
	for i, c := range cells {
		if !c.Observed && c.Err == nil {
			again = append(again, i)
		}
	}
	probe(again)
	return cells
}

func contains(ports []l4.Port, p l4.Port) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// Dial opens a TCP connection from src that the caller keeps.
func (l *Lab) Dial(src Pod, dst netip.Addr, port l4.Port) (net.Conn, error) {
	var conn net.Conn
	var dialErr error
	err := inNamespace(src.Namespace, func() error {
		d := net.Dialer{Timeout: ProbeTimeout}
		conn, dialErr = d.Dial("tcp4", net.JoinHostPort(dst.String(), strconv.Itoa(int(port.Num))))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return conn, dialErr
}
