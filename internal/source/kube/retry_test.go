package kube

import (
	"context"
	"errors"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRetryUnreachable: an informer's call that fails because no API
// server answers is retried here, never handed to the reflector (whose
// backoff reaches a minute); any other error goes to the reflector at once;
// a cancelled context ends the retries.
func TestRetryUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, c := range []struct {
		name      string
		errs      []error // the call's answers, in turn; then success
		wantCalls int
		wantErr   bool
	}{
		{"refused three times, then answers", []error{refused, refused, refused}, 4, false},
		{"503 while it starts, then answers", []error{apierrors.NewServiceUnavailable("starting")}, 2, false},
		{"403 goes to the reflector", []error{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))}, 1, true},
		{"410 Gone goes to the reflector", []error{apierrors.NewResourceExpired("too old")}, 1, true},
	} {
		calls := 0
		_, err := retryUnreachable(context.Background(), "pods", func() (int, error) {
			calls++
			if calls <= len(c.errs) {
				return 0, c.errs[calls-1]
			}
			return 1, nil
		})
		if calls != c.wantCalls || (err != nil) != c.wantErr {
			t.Errorf("%s: %d calls, err %v; want %d calls, error %v", c.name, calls, err, c.wantCalls, c.wantErr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := retryUnreachable(ctx, "pods", func() (int, error) {
		calls++
		if calls == 2 {
			cancel()
		}
		return 0, refused
	})
	if err == nil || calls != 2 {
		t.Errorf("cancelled: %d calls, err %v; want 2 calls and the last error", calls, err)
	}
}
