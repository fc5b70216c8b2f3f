package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Manifests parses a YAML (or JSON) stream into objects for Create.
func Manifests(stream string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(stream)), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// Create makes objs in the cluster, namespaces and nodes first, 16
// requests at a time. There is no kubelet and no controller: a pod's status
// in objs (its addresses) is written as a kubelet would, a container without
// an image gets one, and a namespace the server made itself (kube-system)
// takes the labels of objs.
func (c *Cluster) Create(ctx context.Context, objs []*unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	var first, rest []*unstructured.Unstructured
	for _, u := range objs {
		if k := u.GetKind(); k == "Namespace" || k == "Node" {
			first = append(first, u)
		} else {
			rest = append(rest, u)
		}
	}
	for _, batch := range [][]*unstructured.Unstructured{first, rest} {
		work := make(chan *unstructured.Unstructured)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []error
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for u := range work {
					if err := create(ctx, dyn, mapper, u.DeepCopy()); err != nil {
						mu.Lock()
						failed = append(failed, fmt.Errorf("%s %s: %w", u.GetKind(), ref(u), err))
						mu.Unlock()
					}
				}
			}()
		}
		for _, u := range batch {
			work <- u
		}
		close(work)
		wg.Wait()
		if len(failed) > 0 {
			return errors.Join(failed...)
		}
	}
	return nil
}

func create(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if ns := u.GetNamespace(); ns != "" {
		res = dyn.Resource(m.Resource).Namespace(ns)
	}
	status, _ := u.Object["status"].(map[string]any)
	hasStatus := len(status) > 0
	if gvk.Kind == "Pod" {
		setImages(u)
	}
	created, err := res.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) && gvk.Kind == "Namespace" {
		have, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		have.SetLabels(u.GetLabels())
		_, err = res.Update(ctx, have, metav1.UpdateOptions{})
		return err
	}
	if err != nil || gvk.Kind != "Pod" || !hasStatus {
		return err
	}
	created.Object["status"] = status
	if unstructured.SetNestedField(created.Object, "Running", "status", "phase") != nil {
		return fmt.Errorf("status is not an object")
	}
	ip, _, _ := unstructured.NestedString(created.Object, "status", "podIP")
	if _, found, _ := unstructured.NestedSlice(created.Object, "status", "podIPs"); !found && ip != "" {
		_ = unstructured.SetNestedSlice(created.Object, []any{map[string]any{"ip": ip}}, "status", "podIPs")
	}
	_, err = res.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// setImages gives every container an image: the API requires one, and
// policy manifests often leave it out.
func setImages(u *unstructured.Unstructured) {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["image"] == nil {
			m["image"] = "registry.example/app"
		}
	}
	if containers != nil {
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "containers")
	}
}

func ref(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}
