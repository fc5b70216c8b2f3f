package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// crdSources are the upstream CRD manifests the test control plane serves,
// read from the Go module cache so that they are exactly what upstream
// released. Each dir holds a kustomization.yaml whose resources list the
// manifests; none of them patches anything.
var crdSources = []struct{ module, dir string }{
	// AdminNetworkPolicy and BaselineAdminNetworkPolicy (v1alpha1) left
	// the API after v0.1.x, and v0.1.7 is their last release. The
	// experimental channel serves every field, nodes and networks peers
	// included, which the standard channel prunes.
	{"sigs.k8s.io/network-policy-api@v0.1.7", "config/crd/experimental"},
	// ClusterNetworkPolicy (v1alpha2), at the version go.mod requires, so
	// that the schema matches the Go types netpol compiles against.
	{"sigs.k8s.io/network-policy-api", "config/crd/experimental"},
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CRDs of crdSources and waits until each is
// Established and all its served versions appear in discovery, so that a
// test may create custom objects, or start informers, right away. Start
// calls it; a cluster started WithoutCRDs gets them when a test calls it.
//
// "Right away" has one upstream catch: the API server holds any create of a
// custom object for 2s while its CRD is less than 2s Established (so that
// HA peers catch up), so the first create in a test is slow by design.
func (c *Cluster) InstallCRDs(t testing.TB) {
	t.Helper()
	cfg := c.Config
	paths, err := CRDManifests()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	var crds []*unstructured.Unstructured
	for _, path := range paths {
		crd, err := readCRD(path)
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		crds = append(crds, crd)
	}

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	ctx := context.Background()
	for _, crd := range crds {
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("kubetest: create CRD %s: %v", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		name := crd.GetName()
		err := poll(nil, func() error {
			got, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return established(got)
		})
		if err != nil {
			t.Fatalf("kubetest: CRD %s: %v", name, err)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		for _, version := range servedVersions(crd) {
			gv := group + "/" + version
			err := poll(nil, func() error {
				list, err := disc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
					return fmt.Errorf("%s not in %s", plural, gv)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("kubetest: discovery of %s in %s: %v", plural, gv, err)
			}
		}
	}
}

// moduleDir returns the module cache directory of a module, downloading it
// if needed. Run in the netpol module root, a query without @version means
// the version go.mod requires; go mod download never edits go.mod or go.sum.
func moduleDir(root, query string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", query)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s: %s", query, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s: %w", query, err)
	case info.Dir == "":
		return "", fmt.Errorf("go mod download %s: no directory in %s", query, out)
	}
	return info.Dir, nil
}

// CRDManifests returns the paths, in the Go module cache, of the upstream
// CRD manifests that Start installs, in the order it installs them, so that
// a test can check that a copy of them (deploy/crds) is still verbatim.
func CRDManifests() ([]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, src := range crdSources {
		dir, err := moduleDir(root, src.module)
		if err != nil {
			return nil, err
		}
		ps, err := KustomizationResources(filepath.Join(dir, src.dir))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.module, err)
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

// KustomizationResources returns the paths (dir joined with each) that
// dir/kustomization.yaml lists under resources. Nothing else is supported:
// the upstream CRD directories and deploy/ use nothing else.
func KustomizationResources(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("%s/kustomization.yaml lists no resources", dir)
	}
	paths := make([]string, len(k.Resources))
	for i, r := range k.Resources {
		paths[i] = filepath.Join(dir, r)
	}
	return paths, nil
}

func readCRD(path string) (*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if obj.GetKind() != "CustomResourceDefinition" {
		return nil, fmt.Errorf("%s: kind %q, want CustomResourceDefinition", path, obj.GetKind())
	}
	return obj, nil
}

func established(crd *unstructured.Unstructured) error {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("condition Established=%v: %v", m["status"], m["message"])
		}
	}
	return errors.New("no Established condition yet")
}

func servedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["served"] == true {
			served = append(served, name)
		}
	}
	return served
}
