package source_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

var seeds = []string{
	"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec: {containers: [{name: c, ports: [{containerPort: 80, name: http}]}]}\n",
	"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.18.1.0/24]}}], ports: [{port: 80, endPort: 90}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: {priority: 3, subject: {namespaces: {}}, egress: [{action: Deny, to: [{networks: [198.18.0.0/15]}], ports: [{portRange: {start: 1, end: 9}}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: k}\nspec: {priority: 3, subject: {namespaces: {}}, ingress: [{action: Pass, from: [{namespaces: {sameLabels: [t]}}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\nspec: {tier: Baseline, priority: 1, subject: {namespaces: {}}, ingress: [{action: Accept, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 80}}}]}]}\n",
	`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "template": {"spec": {"containers": []}}}}]}`,
	"---\n---\nkind: x\n",
}

// FuzzDecode feeds arbitrary bytes through the whole pipeline: nothing may
// panic, and every decoded object must be complete.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	if files, _ := filepath.Glob("../../examples/*/*.yaml"); len(files) > 0 {
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := &source.Decoder{}
		objs := dec.Decode("fuzz.yaml", data)
		for _, o := range objs {
			if o.Kind == "" || o.Name == "" || o.Value == nil {
				t.Fatalf("incomplete object %+v", o)
			}
		}
		c, _ := state.Build(objs, state.Options{})
		set, _ := policy.Normalize(c.Policies)
		e := engine.New(c, set, engine.Options{})
		if len(c.Pods) >= 2 {
			m := e.Matrix(c.Pods[:2], c.Pods[:2], []l4.Port{{Proto: l4.TCP, Num: 80}})
			_ = m.Allowed(0, 1, 0)
		}
	})
}
