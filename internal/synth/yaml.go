package synth

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/source"
)

// WriteYAML writes objs as one multi-document YAML stream, as `kubectl get
// -o yaml` would write them one by one: a dump of any size for the
// front-end benchmarks (decode, explain, matrix), the agent's file source
// and anyone who wants to reproduce them.
func WriteYAML(w io.Writer, objs []source.Object) error {
	for i, o := range objs {
		data, err := yaml.Marshal(o.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Ref(), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
