package lab

import (
	"strings"
	"testing"
)

const labManifests = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec: {podSelector: {}}
`

func TestApplyManifestsReplacesByKindNamespaceName(t *testing.T) {
	got, err := ApplyManifests([]byte(labManifests), []byte(`apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec: {podSelector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: other}
spec: {podSelector: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := `---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec: {podSelector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: other}
spec: {podSelector: {}}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDeleteManifests(t *testing.T) {
	got, err := DeleteManifests([]byte(labManifests), []byte("kind: NetworkPolicy\nmetadata: {name: web, namespace: shop}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	_, err = DeleteManifests([]byte(labManifests), []byte("kind: NetworkPolicy\nmetadata: {name: api, namespace: shop}\n"))
	if err == nil || !strings.Contains(err.Error(), "NetworkPolicy shop/api is not in the lab") {
		t.Errorf("deleting a missing object: got %v", err)
	}
}
