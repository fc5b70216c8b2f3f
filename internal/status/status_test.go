package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

var anps = schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha1", Resource: "adminnetworkpolicies"}

// applied is one status apply the writer sent: the policy and its
// conditions as "Type=Status/Reason".
type applied struct {
	name  string
	conds []string
}

// recording is a fake dynamic client that records every status apply and
// fails the next ones while failures > 0.
func recording(t *testing.T) (*dynamicfake.FakeDynamicClient, *[]applied, *int) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{anps: "AdminNetworkPolicyList"})
	var got []applied
	failures := 0
	client.PrependReactor("patch", "adminnetworkpolicies", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetSubresource() != "status" {
			t.Errorf("patch of %q, want the status subresource", p.GetSubresource())
		}
		if failures > 0 {
			failures--
			return true, nil, errors.New("injected: the API server is away")
		}
		var obj struct {
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(p.GetPatch(), &obj); err != nil {
			t.Fatal(err)
		}
		a2 := applied{name: p.GetName()}
		for _, c := range obj.Status.Conditions {
			a2.conds = append(a2.conds, c.Type+"="+string(c.Status)+"/"+c.Reason)
		}
		got = append(got, a2)
		return true, nil, nil
	})
	return client, &got, &failures
}

// TestWriterReportsConditions: an invalid policy is Accepted=False with a
// Warning Event, a valid one Accepted and Programmed; the same outcome again
// sends nothing; a node that cannot program adds its own condition, and
// releases it when it recovers; a failed apply is retried on the next
// report.
func TestWriterReportsConditions(t *testing.T) {
	client, got, failures := recording(t)
	rec := record.NewFakeRecorder(10)
	policies := []kube.AdminPolicy{
		{Resource: anps, Kind: "AdminNetworkPolicy", Name: "bad", UID: "u1", Generation: 1},
		{Resource: anps, Kind: "AdminNetworkPolicy", Name: "good", UID: "u2", Generation: 3},
	}
	w := &status.Writer{Node: "node-1", Client: client, Recorder: rec, Policies: func() []kube.AdminPolicy { return policies },
		Now: func() time.Time { return time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC) }}
	ctx := context.Background()
	findings := diag.List{{Severity: diag.Error, Object: "AdminNetworkPolicy bad", Field: "spec.priority", Message: "must be between 0 and 1000"}}

	if err := w.Report(ctx, findings, nil); err != nil {
		t.Fatal(err)
	}
	want := []applied{
		{"bad", []string{"Accepted=False/Invalid", "Programmed=False/FailedClosed"}},
		{"good", []string{"Accepted=True/Valid", "Programmed=True/Programmed"}},
	}
	if !same(*got, want) {
		t.Fatalf("applied %v, want %v", *got, want)
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d events, want 1", len(rec.Events))
	}
	if e := <-rec.Events; e != "Warning InvalidPolicy netpol enforces this policy failed closed, not as written (an invalid rule denies all traffic, an invalid Allow rule matches nothing): spec.priority: must be between 0 and 1000" {
		t.Errorf("event %q", e)
	}

	if err := w.Report(ctx, findings, nil); err != nil || len(*got) != 2 {
		t.Errorf("the same outcome again: %d applies (%v), want none more", len(*got)-2, err)
	}

	*failures = 1
	if err := w.Report(ctx, findings, errors.New("nftables: operation not permitted")); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("a failed apply: %v, want its error", err)
	}
	if err := w.Report(ctx, findings, errors.New("nftables: operation not permitted")); err != nil {
		t.Fatal(err)
	}
	// The node's own condition, under its own manager; the shared ones
	// are not the failing node's to touch. The apply for bad failed once
	// and came again.
	want = append(want, applied{"good", []string{"netpol.io/NotProgrammed.node-1=True/ProgrammingFailed"}},
		applied{"bad", []string{"netpol.io/NotProgrammed.node-1=True/ProgrammingFailed"}})
	if !same(*got, want) {
		t.Errorf("after the node failed to program, and one apply failed: %v, want %v", *got, want)
	}
	// Recovered: the node releases its condition (applies none).
	if err := w.Report(ctx, findings, nil); err != nil {
		t.Fatal(err)
	}
	want = append(want, applied{"bad", nil}, applied{"good", nil})
	if !same(*got, want) {
		t.Errorf("after the node recovered: %v, want %v", *got, want)
	}
	if len(rec.Events) != 0 {
		t.Errorf("%d more events, want none: the invalid policy was reported already", len(rec.Events))
	}
}

// same compares the applies in any order: each node walks the policies in
// an order of its own (walkOrder).
func same(a, b []applied) bool {
	key := func(l []applied) []string {
		var out []string
		for _, x := range l {
			out = append(out, x.name+":"+strings.Join(x.conds, ","))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}
