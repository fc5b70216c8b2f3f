package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// stagedANP would let batch reach web (which web-ingress isolates) and
// deny web -> batch.
const stagedANP = `---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: trial, annotations: {netpol.io/staged: "true"}}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {team: shop}}}
  ingress:
  - {name: allow-batch, action: Allow, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: batch}}}}]}
  - {name: deny-web, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}]}
`

func TestMatrixStaged(t *testing.T) {
	code, out, stderr := run(t, cluster+stagedANP, "matrix", "-f", "-", "--staged", "-o", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `from,to,port,protocol,allowed,staged
shop/batch,shop/batch,8080,TCP,true,true
shop/batch,shop/web,8080,TCP,false,true
shop/web,shop/batch,8080,TCP,true,false
shop/web,shop/web,8080,TCP,true,true
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	code, out, stderr = run(t, cluster+stagedANP, "matrix", "-f", "-", "--staged")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	wantText := `8080/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied; staged: ! would be denied, + would be allowed)
              12
shop 1 batch  .+
     2 web    !.

2 pods, 1 port: 2 behaviour classes decided
`
	if out != wantText {
		t.Errorf("text matrix:\n%s\nwant:\n%s", out, wantText)
	}
	// Without --staged the staged policy changes nothing.
	_, out, _ = run(t, cluster+stagedANP, "matrix", "-f", "-", "-o", "csv")
	if !strings.Contains(out, "shop/batch,shop/web,8080,TCP,false\n") || !strings.Contains(out, "shop/web,shop/batch,8080,TCP,true\n") {
		t.Errorf("enforced matrix:\n%s", out)
	}
}

func TestExplainStaged(t *testing.T) {
	args := []string{"explain", "-f", "-", "--from", "shop/batch", "--to", "shop/web", "--port", "http", "--staged"}
	code, out, stderr := run(t, cluster+stagedANP, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v struct {
		Allowed bool
		Staged  *struct {
			Allowed bool
			Ingress struct {
				Steps []struct{ Tier, Rule, Action string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Allowed || v.Staged == nil || !v.Staged.Allowed || len(v.Staged.Ingress.Steps) != 1 ||
		v.Staged.Ingress.Steps[0].Rule != "allow-batch" || v.Staged.Ingress.Steps[0].Action != "Allow" {
		t.Errorf("enforced %v, staged %+v; want denied, then allowed by trial allow-batch", v.Allowed, v.Staged)
	}
	code, out, stderr = run(t, cluster+stagedANP, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"staged (1 staged policy)", "AdminNetworkPolicy trial rule allow-batch"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestMatrixStagedClassesOfTheirOwn: the staged policies tell pods apart
// that the enforced ones do not (here none is enforced: one class), so
// each verdict is read in the classes of its own engine.
func TestMatrixStagedClassesOfTheirOwn(t *testing.T) {
	const in = `
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop, labels: {app: a}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: shop, labels: {app: b}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: shop, labels: {app: c}}
spec: {containers: [{name: c}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: trial, annotations: {netpol.io/staged: "true"}}
spec:
  priority: 5
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: c}}}}
  ingress:
  - {name: deny-a, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: a}}}}]}
`
	want := `from,to,port,protocol,allowed,staged
shop/a,shop/a,80,TCP,true,true
shop/a,shop/b,80,TCP,true,true
shop/a,shop/c,80,TCP,true,false
shop/b,shop/a,80,TCP,true,true
shop/b,shop/b,80,TCP,true,true
shop/b,shop/c,80,TCP,true,true
shop/c,shop/a,80,TCP,true,true
shop/c,shop/b,80,TCP,true,true
shop/c,shop/c,80,TCP,true,true
`
	code, out, stderr := run(t, in, "matrix", "-f", "-", "--staged", "--ports", "80", "-o", "csv")
	if code != 0 || out != want {
		t.Errorf("exit %d, %s\ngot:\n%s\nwant:\n%s", code, stderr, out, want)
	}
}
