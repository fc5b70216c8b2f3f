package nflog

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonflog "github.com/florianl/go-nflog/v2"
	"github.com/vishvananda/netns"
)

// BenchmarkNFLOGPeers: the kernel logs UDP datagrams (an nftables log
// statement on the output hook of a throwaway namespace) and a reader
// takes each one's prefix, addresses and ports, with this package's Reader
// and with github.com/florianl/go-nflog/v2 (its callback, the headers read
// from the payload), in one run. Reported: the time per packet from the
// first datagram sent to the last one read.
//
//	go test -run '^$' -bench NFLOGPeers ./internal/dataplane/nflog
func BenchmarkNFLOGPeers(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ns := "netpol-nflog-bench-" + strconv.Itoa(os.Getpid())
	run(b, "ip", "netns", "add", ns)
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run(b, "ip", "-n", ns, "link", "set", "lo", "up")
	run(b, "ip", "-n", ns, "addr", "add", "198.18.7.1/32", "dev", "lo")
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(`table inet bench {
  chain out {
    type filter hook output priority 0; policy accept;
    udp dport 9999 log group 8 prefix "np:0123456789ab:"
  }
}
`)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("nft: %v: %s", err, out)
	}
	const n = 2000
	inNS(b, ns, func() { // a sink, so that no port unreachable comes back
		sink, err := net.ListenPacket("udp", "198.18.7.1:9999")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sink.Close() })
		go func() {
			buf := make([]byte, 16)
			for {
				if _, _, err := sink.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
	})
	send := func() {
		inNS(b, ns, func() {
			c, err := net.Dial("udp", "198.18.7.1:9999")
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for range n {
				if _, err := c.Write([]byte("x")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	perPacket := func(b *testing.B, took time.Duration, got int64) {
		if got != n*int64(b.N) {
			b.Fatalf("read %d packets, want %d", got, n*b.N)
		}
		b.ReportMetric(float64(took.Nanoseconds())/float64(got), "ns/packet")
	}
	b.Run("netpol", func(b *testing.B) {
		var r *Reader
		inNS(b, ns, func() {
			var err error
			if r, err = Open(8); err != nil {
				b.Fatal(err)
			}
		})
		defer r.Close()
		start := time.Now()
		var got int64
		for range b.N {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for seen := 0; seen < n; {
					ps, err := r.Read()
					if err != nil {
						b.Error(err)
						return
					}
					for _, p := range ps {
						if p.Prefix == "np:0123456789ab:" && p.DstPort == 9999 {
							seen++
							atomic.AddInt64(&got, 1)
						}
					}
				}
			}()
			send()
			<-done
		}
		perPacket(b, time.Since(start), got)
	})
	b.Run("go-nflog", func(b *testing.B) {
		var nf *gonflog.Nflog
		var got int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// go-nflog's socket lives on a thread of its own: it is told the
		// namespace rather than opened from a thread in it.
		target, err := netns.GetFromName(ns)
		if err != nil {
			b.Fatal(err)
		}
		defer target.Close()
		{
			var err error
			if nf, err = gonflog.Open(&gonflog.Config{Group: 8, Copymode: gonflog.CopyPacket, Bufsize: 128, QThresh: 1, NetNS: int(target)}); err != nil {
				b.Fatal(err)
			}
			if err := nf.Con.SetReadBuffer(1 << 20); err != nil { // as Open does here
				b.Fatal(err)
			}
			err = nf.RegisterWithErrorFunc(ctx, func(a gonflog.Attribute) int {
				if a.Prefix == nil || a.Payload == nil || len(*a.Payload) < 24 {
					return 0
				}
				p := *a.Payload
				src, _ := netip.AddrFromSlice(p[12:16])
				dst, _ := netip.AddrFromSlice(p[16:20])
				ihl := int(p[0]&0xf) * 4
				if *a.Prefix == "np:0123456789ab:" && src.IsValid() && dst.IsValid() && len(p) >= ihl+4 && int(p[ihl+2])<<8|int(p[ihl+3]) == 9999 {
					atomic.AddInt64(&got, 1)
				}
				return 0
			}, func(err error) int {
				if ctx.Err() == nil {
					b.Error(err)
				}
				return 1
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		defer func() { cancel(); nf.Close() }() // Close waits for the context's end
		start := time.Now()
		for i := range b.N {
			send()
			want := int64(n * (i + 1))
			for deadline := time.Now().Add(5 * time.Second); atomic.LoadInt64(&got) < want; time.Sleep(10 * time.Microsecond) {
				if time.Now().After(deadline) {
					b.Fatalf("go-nflog read %d packets of %d", atomic.LoadInt64(&got), want)
				}
			}
		}
		perPacket(b, time.Since(start), atomic.LoadInt64(&got))
	})
}
