package source

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/apis/kep"
)

// decodedTypes are the types netpol decodes objects into.
func decodedTypes() []reflect.Type {
	var types []reflect.Type
	for _, newValue := range constructors {
		types = append(types, reflect.TypeOf(newValue()).Elem())
	}
	for _, v := range []any{new(v1alpha1.AdminNetworkPolicy), new(v1alpha1.BaselineAdminNetworkPolicy), new(kep.AdminNetworkPolicy), new(kep.BaselineAdminNetworkPolicy)} {
		types = append(types, reflect.TypeOf(v).Elem())
	}
	return types
}

func TestFastDecode(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool // whether the fast path decodes it; kjson must agree when it does
	}{
		{"pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"creationTimestamp":null,"labels":{"app":"a"},"name":"a","namespace":"x"},"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":1}}}],"hostNetwork":true,"nodeName":"n1"},"status":{"podIPs":[{"ip":"198.18.0.5"}]}}`, true},
		{"spaces, escapes and an empty list", " { \"kind\" : \"P\\u006fd\\n\\\"\" , \"metadata\" : { \"name\" : \"a\" } , \"spec\" : { \"containers\" : [ ] } } ", true},
		{"timestamps and quantities", `{"metadata":{"name":"a","creationTimestamp":"2024-01-02T03:04:05Z","deletionGracePeriodSeconds":30},"spec":{"overhead":{"cpu":0.5}}}`, true},
		{"null clears", `{"metadata":{"name":"a","labels":null},"spec":{"containers":null,"priority":null,"nodeName":null}}`, true},
		{"unknown field", `{"metadata":{"name":"a"},"spec":{"colour":"red"}}`, false},
		{"field in another case", `{"Metadata":{"name":"a"}}`, false},
		{"duplicate field", `{"metadata":{"name":"a","name":"b"}}`, false},
		{"duplicate map key", `{"metadata":{"name":"a","labels":{"a":"1","a":"2"}}}`, false},
		{"wrong type", `{"metadata":{"name":5}}`, false},
		{"float into an integer", `{"spec":{"priority":1.5}}`, false},
		{"integer out of range", `{"spec":{"priority":2147483648}}`, false},
		{"escaped key", `{"\u006detadata":{"name":"a"}}`, false},
		{"surrogate escape", `{"metadata":{"name":"\ud83d\ude00"}}`, false},
		{"label key that is not UTF-8", "{\"metadata\":{\"labels\":{\"\xff\":\"\"}}}", false},
		{"label value that is not UTF-8", "{\"metadata\":{\"labels\":{\"a\":\"\xff\"}}}", false},
		{"bad quantity", `{"spec":{"overhead":{"cpu":"lots"}}}`, false},
		{"byte slice", `{"metadata":{"name":"a"},"data":{"x":"aGk="}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fastDecode([]byte(tc.in), new(corev1.Pod))
			if got != tc.want {
				t.Errorf("fastDecode = %v, want %v", got, tc.want)
			}
			checkFastDecode(t, []byte(tc.in))
		})
	}
}

// checkFastDecode fails when the fast path decodes js into one of the
// types and kjson does not give the very same value without a finding.
func checkFastDecode(t *testing.T, js []byte) {
	t.Helper()
	if !json.Valid(js) {
		return
	}
	for _, typ := range decodedTypes() {
		fast := reflect.New(typ).Interface()
		if !fastDecode(js, fast) {
			continue
		}
		want := reflect.New(typ).Interface()
		strict, err := kjson.UnmarshalStrict(js, want, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil || len(strict) > 0 {
			t.Fatalf("%v: fast path decoded %s; kjson: %v %v", typ, js, err, strict)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%v: fast path decoded %s as\n%+v\nkjson as\n%+v", typ, js, fast, want)
		}
	}
}

// TestFastDecodeRepoManifests: the repository's manifests take the fast
// path into their own type, with kjson's result.
func TestFastDecodeRepoManifests(t *testing.T) {
	fast, total := 0, 0
	for _, doc := range repoManifests(t) {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			continue
		}
		checkFastDecode(t, js)
		h, ok := peekHeader(js)
		if newValue := constructors[kindKey{h.APIVersion, h.Kind}]; ok && newValue != nil {
			total++
			if fastDecode(js, newValue()) {
				fast++
			}
		}
	}
	if fast < total*9/10 {
		t.Errorf("%d of %d objects took the fast path", fast, total)
	}
	t.Logf("%d of %d objects took the fast path", fast, total)
}

// FuzzFastDecode: whatever the fast path decodes, kjson decodes alike.
//
//	go test ./internal/source -run XXX -fuzz FuzzFastDecode
func FuzzFastDecode(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}`))
	for _, doc := range repoManifests(f) {
		if js, err := yaml.YAMLToJSON(doc); err == nil {
			f.Add(js)
		}
	}
	f.Fuzz(checkFastDecode)
}
