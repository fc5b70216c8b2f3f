package jsontext_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/netpol/netpol/internal/jsontext"
)

type flow struct{ Flow string }

// arrow's MarshalJSON goes through Marshal, as netpol's own methods do.
type arrow struct{}

func (arrow) MarshalJSON() ([]byte, error) { return jsontext.Marshal("a -> b & <c>") }

func TestNoHTMLEscaping(t *testing.T) {
	got, err := jsontext.Marshal(flow{"a -> b & <c>"})
	if err != nil || string(got) != `{"Flow":"a -> b & <c>"}` {
		t.Errorf("Marshal = %s, %v", got, err)
	}
	var b bytes.Buffer
	if err := jsontext.NewEncoder(&b).Encode([]any{arrow{}}); err != nil || b.String() != "[\"a -> b & <c>\"]\n" {
		t.Errorf("Encode = %q, %v", b.String(), err)
	}
	// What encoding/json would write, for contrast: the reason for the package.
	std, _ := json.Marshal("->")
	if string(std) != `"-\u003e"` {
		t.Errorf("encoding/json now writes %s: this package may no longer be needed", std)
	}
}
