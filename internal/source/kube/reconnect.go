package kube

import (
	"context"
	"errors"
	"math"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
)

// reconnect spaces an informer's attempts while the API server cannot be
// reached: at most 2-3 s apart, so that the informer catches up within
// seconds of the server's return. That is 0.4 requests a second per
// informer, below the 1 a second that client-go's reflectors retried at
// before they backed off further.
var reconnect = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: 2 * time.Second, Steps: math.MaxInt32}

// reconnecting is an informer's ListerWatcher that retries, itself, the
// calls that fail because the API server cannot be reached.
//
// client-go's reflector meets such a failure with an exponential backoff
// that reaches [30 s, 60 s) between attempts (reflector.go: 800 ms doubling
// to 30 s, jitter 1.0), and neither the informer factories nor
// NewSharedIndexInformerWithOptions let a caller change it. After a
// one-minute outage each informer slept up to a minute past the server's
// return, so the first change after it waited as long: 62.6 s reported,
// 25.6 s measured; 1.2 s with this (TestKubeFaultCatchesUpAfterOutage).
// Answered here, those failures never reach the reflector's backoff.
type reconnecting struct {
	lw       cache.ListerWatcherWithContext
	resource string // for the logs
	// noWatchList passes on what the client says of watch-list requests
	// (client-go's fakes cannot serve them), as the informer factories do.
	noWatchList bool
}

// newReconnecting wraps lw, which calls client.
func newReconnecting(lw *cache.ListWatch, client any, resource string) reconnecting {
	return reconnecting{lw: lw, resource: resource, noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(client)}
}

func (r reconnecting) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return retryUnreachable(ctx, r.resource, func() (runtime.Object, error) { return r.lw.ListWithContext(ctx, opts) })
}

func (r reconnecting) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return retryUnreachable(ctx, r.resource, func() (watch.Interface, error) { return r.lw.WatchWithContext(ctx, opts) })
}

// List and Watch complete cache.ListerWatcher, which informers take; their
// reflectors call the context-aware methods.
func (r reconnecting) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r reconnecting) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported is how a reflector asks (package
// k8s.io/client-go/util/watchlist).
func (r reconnecting) IsWatchListSemanticsUnSupported() bool { return r.noWatchList }

// retryUnreachable calls call until it succeeds, fails for another reason
// than an unreachable server, or ctx ends, spaced by reconnect.
func retryUnreachable[T any](ctx context.Context, resource string, call func() (T, error)) (T, error) {
	b := reconnect
	var since time.Time
	for {
		v, err := call()
		if err == nil && !since.IsZero() {
			klog.InfoS("The API server answers again", "resource", resource, "after", time.Since(since).Round(time.Millisecond))
		}
		if err == nil || !unreachable(err) || ctx.Err() != nil {
			return v, err
		}
		if since.IsZero() {
			since = time.Now()
			klog.ErrorS(err, "The API server cannot be reached; retrying every few seconds", "resource", resource)
		}
		t := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
	}
}

// unreachable reports whether err means that no API server answered (a
// connection refused, reset, cut or timed out: a restart, an outage) or
// that it is not ready to (503, 504): what an outage looks like. Other
// errors (403, or 410 Gone, which asks the reflector to list again) are the
// reflector's to handle.
func unreachable(err error) bool {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case utilnet.IsProbableEOF(err), utilnet.IsConnectionReset(err), utilnet.IsHTTP2ConnectionLost(err):
		return true
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
