// Package jsontext writes JSON as netpol's users read it: in a terminal,
// through jq, in a CI log. It is encoding/json without the HTML escaping
// of <, > and &, which would spell a flow "a -\u003e b". Every JSON that
// netpol writes for people goes through it; a MarshalJSON method too, since
// an outer encoder keeps what an inner Marshal escaped.
package jsontext

import (
	"bytes"
	"encoding/json"
	"io"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// NewEncoder is json.NewEncoder without HTML escaping.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
