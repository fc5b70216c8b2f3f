package source

import (
	"encoding/json"
	"testing"
)

func TestPeekHeader(t *testing.T) {
	cases := []struct {
		name, in string
		want     header // zero: peekHeader must give up
	}{
		{"object", `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"kind":"x"},"name":"a","namespace":"x"},"spec":{"kind":[1,{"a":"}"}]}}`,
			header{APIVersion: "v1", Kind: "Pod", Metadata: headerMetadata{"a", "x"}}},
		{"spaces and numbers", " { \"a\" : 1 , \"kind\" : \"Pod\" , \"b\" : [ 2 , 3 ] , \"c\" : -1.5e3 }\n", header{Kind: "Pod"}},
		{"key in another case", `{"apiVersion":"v1","Kind":"Pod"}`, header{}},
		{"key with the Kelvin sign", `{"apiVersion":"v1","` + "\u212a" + `ind":"Pod"}`, header{}},
		{"escaped key", `{"apiVersion":"v1","\u006bind":"Pod"}`, header{}},
		{"escaped value", `{"apiVersion":"v1","kind":"P\u006fd"}`, header{}},
		{"value that is not UTF-8", "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"\xff\"}}", header{}},
		{"duplicate", `{"kind":"Pod","kind":"Namespace"}`, header{}},
		{"duplicate metadata", `{"kind":"Pod","metadata":{"name":"a"},"metadata":{"namespace":"x"}}`, header{}},
		{"name in another case", `{"kind":"Pod","metadata":{"Name":"a"}}`, header{}},
		{"number kind", `{"kind":5}`, header{}},
		{"null kind", `{"kind":null}`, header{}},
		{"null metadata", `{"kind":"Pod","metadata":null}`, header{}},
		{"list", `{"kind":"List","items":[]}`, header{}},
		{"not an object", `[1]`, header{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := peekHeader([]byte(tc.in))
			wantOK := tc.want.Kind != ""
			if ok != wantOK || (ok && (got.APIVersion != tc.want.APIVersion || got.Kind != tc.want.Kind || got.Metadata != tc.want.Metadata)) {
				t.Errorf("got %+v, %v; want %+v", got, ok, tc.want)
			}
			checkPeekHeader(t, []byte(tc.in))
		})
	}
}

// checkPeekHeader fails when peekHeader reads valid JSON otherwise than
// json.Unmarshal.
func checkPeekHeader(t *testing.T, js []byte) {
	t.Helper()
	if !json.Valid(js) {
		return
	}
	got, ok := peekHeader(js)
	if !ok {
		return
	}
	var want header
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatalf("peekHeader read %s as %+v; json.Unmarshal: %v", js, got, err)
	}
	if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Metadata != want.Metadata || want.Items != nil {
		t.Fatalf("peekHeader read %s as %+v; json.Unmarshal as %+v", js, got, want)
	}
}

// FuzzPeekHeader: whatever peekHeader reads, json.Unmarshal reads alike.
func FuzzPeekHeader(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"x"}}`))
	f.Add([]byte(`{"kind":"List","items":[{"kind":"Pod"}], "metadata": {"name": "\"}"}}`))
	for _, tc := range fastYAMLCases {
		var c yamlToJSON
		if js, ok := c.convert([]byte(tc.in)); ok {
			f.Add(append([]byte(nil), js...))
		}
	}
	f.Fuzz(checkPeekHeader)
}
