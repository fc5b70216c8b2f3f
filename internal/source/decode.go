package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/apis/kep"
	"github.com/netpol/netpol/internal/diag"
)

// ANPShape chooses how AdminNetworkPolicy and BaselineAdminNetworkPolicy peers
// are read; both shapes share policy.networking.k8s.io/v1alpha1.
type ANPShape string

const (
	ShapeAuto   ANPShape = "auto"   // decide per object from its peers; ambiguous means Released
	ShapeV017   ANPShape = "v0.1.7" // released shape: namespaces is a label selector
	ShapeKEP    ANPShape = "kep"    // KEP-2091 / v0.1.1 shape: namespaces is {namespaceSelector|sameLabels|notSameLabels|related}
	policyGroup          = "policy.networking.k8s.io"
)

// ParseANPShape validates a --anp-shape value.
func ParseANPShape(s string) (ANPShape, error) {
	switch ANPShape(s) {
	case ShapeAuto, ShapeV017, ShapeKEP:
		return ANPShape(s), nil
	case "":
		return ShapeAuto, nil
	}
	return "", fmt.Errorf("unknown AdminNetworkPolicy shape %q (want auto, v0.1.7 or kep)", s)
}

// Options tune decoding.
type Options struct {
	ANPShape ANPShape
	// Lenient reads a policy with unknown fields without them, with a
	// warning, instead of refusing it (see RefusesUnknownFields).
	Lenient bool
	// CompactPods hands Pod objects over as *Pod, which keeps what policy
	// reads of them only, instead of *corev1.Pod: for an agent, which
	// keeps every pod of the cluster.
	CompactPods bool
}

// strictKinds are the kinds whose unknown fields make the object invalid:
// the policies. In a policy a dropped field changes what a rule matches:
// "port:" for "ports:" leaves a rule that allows every port. kubectl's
// strict field validation refuses such an object, and so do we.
var strictKinds = map[string]bool{"NetworkPolicy": true, "AdminNetworkPolicy": true, "BaselineAdminNetworkPolicy": true, "ClusterNetworkPolicy": true}

// RefusesUnknownFields reports whether an unknown field makes an object of
// kind invalid (unless Options.Lenient).
func RefusesUnknownFields(kind string) bool { return strictKinds[kind] }

// UnknownFieldRefused is the message for an unknown field that makes an
// object invalid.
const UnknownFieldRefused = "unknown field: kubectl's strict field validation refuses it, and without it the policy may match other traffic than written (--lenient drops it with a warning)"

// kindKey is apiVersion + kind.
type kindKey struct{ apiVersion, kind string }

// constructors for every kind netpol reads. NetworkPolicy is also accepted in
// the extensions/v1beta1 group of the original proposal: its fields are a
// subset of networking.k8s.io/v1.
var constructors = map[kindKey]func() any{
	{"v1", "Namespace"}:                                 func() any { return new(corev1.Namespace) },
	{"v1", "Pod"}:                                       func() any { return new(corev1.Pod) },
	{"v1", "Node"}:                                      func() any { return new(corev1.Node) },
	{"v1", "Service"}:                                   func() any { return new(corev1.Service) },
	{"discovery.k8s.io/v1", "EndpointSlice"}:            func() any { return new(discoveryv1.EndpointSlice) },
	{"v1", "ReplicationController"}:                     func() any { return new(corev1.ReplicationController) },
	{"apps/v1", "Deployment"}:                           func() any { return new(appsv1.Deployment) },
	{"apps/v1", "StatefulSet"}:                          func() any { return new(appsv1.StatefulSet) },
	{"apps/v1", "DaemonSet"}:                            func() any { return new(appsv1.DaemonSet) },
	{"apps/v1", "ReplicaSet"}:                           func() any { return new(appsv1.ReplicaSet) },
	{"batch/v1", "Job"}:                                 func() any { return new(batchv1.Job) },
	{"batch/v1", "CronJob"}:                             func() any { return new(batchv1.CronJob) },
	{"networking.k8s.io/v1", "NetworkPolicy"}:           func() any { return new(networkingv1.NetworkPolicy) },
	{"extensions/v1beta1", "NetworkPolicy"}:             func() any { return new(networkingv1.NetworkPolicy) },
	{policyGroup + "/v1alpha2", "ClusterNetworkPolicy"}: func() any { return new(v1alpha2.ClusterNetworkPolicy) },
}

// adminKinds have two shapes under one apiVersion; see decodeAdmin.
var adminKinds = map[string]bool{"AdminNetworkPolicy": true, "BaselineAdminNetworkPolicy": true}

// Decoder turns bytes into Objects, collecting findings.
type Decoder struct {
	Options
	Diags diag.List
	// Documents counts the documents decoded so far; another goroutine may
	// read it (the CLI's progress line).
	Documents atomic.Int64

	fastYAML yamlToJSON    // its buffers serve one document after another
	progress *atomic.Int64 // a worker's: the Documents of the Decoder it works for
	// fullParsers turns the fast paths off (the YAML converter, the
	// header peek, the typed decoder): the reference they are tested
	// against.
	fullParsers bool

	// ignored counts the objects of kinds netpol does not read, reported
	// in one finding at Diags[ignoredFinding-1] (0: none yet).
	ignored        ignoredObjects
	ignoredFinding int
}

// Decode reads every document of data (YAML, multi-document YAML, or JSON).
// A large stream is decoded on every CPU, a slice of its documents each;
// objects and findings come out in the order of the documents all the
// same.
func (d *Decoder) Decode(file string, data []byte) []Object {
	out := d.decode(file, data)
	d.reportIgnored()
	return out
}

// decode is Decode without the finding that counts the ignored objects.
func (d *Decoder) decode(file string, data []byte) []Object {
	docs := SplitDocuments(data)
	workers := min(runtime.GOMAXPROCS(0), len(docs)/minDocumentsPerWorker)
	if workers < 2 {
		return d.decodeDocuments(file, docs, 0, len(docs))
	}
	parts := make([]*Decoder, workers)
	objects := make([][]Object, workers)
	var wg sync.WaitGroup
	for w := range workers {
		parts[w] = d.worker()
		wg.Go(func() {
			objects[w] = parts[w].decodeDocuments(file, docs, w*len(docs)/workers, (w+1)*len(docs)/workers)
		})
	}
	wg.Wait()
	for _, part := range parts {
		d.merge(part)
	}
	return slices.Concat(objects...)
}

// worker is a Decoder for another goroutine: d's options, d's progress.
func (d *Decoder) worker() *Decoder {
	return &Decoder{Options: d.Options, progress: d.progressCounter(), fullParsers: d.fullParsers}
}

// merge takes over the findings and counts of a worker's Decoder.
func (d *Decoder) merge(part *Decoder) {
	d.Diags = append(d.Diags, part.Diags...)
	d.ignored.addAll(part.ignored)
}

// minDocumentsPerWorker keeps small inputs on one goroutine, where
// starting others would cost more than it saves.
const minDocumentsPerWorker = 256

// decodeDocuments decodes docs[from:to], the documents of file.
func (d *Decoder) decodeDocuments(file string, docs [][]byte, from, to int) []Object {
	out := make([]Object, 0, to-from) // most documents are one object
	progress := d.progressCounter()
	for i := from; i < to; i++ {
		out = d.decodeDocument(out, docOrigin(file, i, len(docs)), docs[i])
		progress.Add(1)
	}
	return out
}

// progressCounter is where decoded documents are counted: the Decoder's
// own, or the one of the Decoder a worker decodes for.
func (d *Decoder) progressCounter() *atomic.Int64 {
	if d.progress != nil {
		return d.progress
	}
	return &d.Documents
}

// reportIgnored keeps the one finding that counts the ignored objects up
// to date: added the first time, rewritten after each input.
func (d *Decoder) reportIgnored() {
	if len(d.ignored.byKind) == 0 {
		return
	}
	f := d.ignored.finding()
	if i := d.ignoredFinding - 1; i >= 0 && i < len(d.Diags) && strings.HasPrefix(d.Diags[i].Message, "ignored ") {
		d.Diags[i] = f
		return
	}
	d.Diags = append(d.Diags, f)
	d.ignoredFinding = len(d.Diags)
}

// skips reports whether objects of kind are ignored whatever their
// apiVersion, so that a document of that kind need not be decoded. A kind
// ending in "List" may hold items netpol reads.
func skips(kind string) bool {
	return !knownKinds[kind] && !strings.HasSuffix(kind, "List")
}

// docOrigin names the i-th of n documents of file (a file of one document
// is named without a number).
func docOrigin(file string, i, n int) diag.Origin {
	if n == 1 {
		return diag.Origin{File: file}
	}
	return diag.Origin{File: file, Doc: i + 1}
}

// decodeDocument decodes one document of a stream, appending its objects
// to out.
func (d *Decoder) decodeDocument(out []Object, origin diag.Origin, doc []byte) []Object {
	if kind, ok := peekYAMLKind(doc, skips); ok {
		d.ignored.add(kind, origin.File, 1)
		return out
	}
	js, err := d.toJSON(origin, doc)
	if err != nil {
		d.report(origin, "", "", "not valid YAML or JSON: %v", err)
		return out
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return out
	}
	return d.decodeObject(out, origin, js, kindKey{})
}

// toJSON converts one document to JSON. A JSON document is kept as it is, so
// that the strict decoder can name a duplicate field by its path. YAML goes
// through the strict converter first only to notice duplicate keys, which the
// API server accepts with a warning (the last value wins), as we do.
func (d *Decoder) toJSON(origin diag.Origin, doc []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		return trimmed, nil
	}
	if !d.fullParsers {
		if js, ok := d.fastYAML.convert(doc); ok {
			return js, nil
		}
	}
	// One parse in the common case: the strict converter's output is the
	// same when it succeeds; only a failure (a duplicate key, or input that
	// is not YAML) pays for a second parse, which tells the two apart.
	js, strictErr := yaml.YAMLToJSONStrict(doc)
	if strictErr == nil {
		return js, nil
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	msg := strings.TrimSpace(strings.TrimPrefix(strictErr.Error(), "error converting YAML to JSON:"))
	msg = strings.Join(strings.Fields(strings.TrimPrefix(msg, "yaml: unmarshal errors:")), " ")
	d.Diags = append(d.Diags, diag.Diagnostic{Severity: diag.Warning, Origin: origin,
		Message: "duplicate field: the last value wins (" + msg + ")"})
	return js, nil
}

// SplitDocuments splits a YAML stream at "---" lines. A JSON stream of several
// top-level values is split too. Malformed input comes back whole so that the
// YAML parser can say what is wrong with it.
func SplitDocuments(data []byte) [][]byte {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		var docs [][]byte
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				return docs
			} else if err != nil {
				break // not a JSON stream: treat as YAML
			}
			docs = append(docs, raw)
		}
	}
	return splitYAML(data)
}

// splitYAML cuts data at separator lines: "---" followed by nothing but
// spaces or a comment. Documents are the bytes between them (empty ones are
// skipped, so document numbers are those kubectl gives); any other line
// that starts with "---" comes back as the whole stream, as kubectl refuses
// it. It works on the whole stream in memory rather than through a line
// reader: apimachinery's YAMLReader lost a final line that filled its
// 4096-byte buffer exactly (issue 15).
func splitYAML(data []byte) [][]byte {
	// At most a document after each line that starts with "---", and
	// one before the first: sized once for 200k documents.
	docs := make([][]byte, 0, bytes.Count(data, []byte("\n---"))+1)
	start := 0 // of the current document
	for pos := 0; pos < len(data); {
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		if rest, ok := bytes.CutPrefix(data[pos:next], []byte("---")); ok {
			if rest = bytes.TrimSpace(rest); len(rest) > 0 && rest[0] != '#' {
				return [][]byte{data}
			}
			if pos > start {
				docs = append(docs, data[start:pos:pos]) // capped: appending must not write into the next
			}
			start = next
		}
		pos = next
	}
	if start < len(data) {
		docs = append(docs, data[start:])
	}
	if len(docs) == 0 {
		return nil // no document: nil, as it always was
	}
	return docs
}

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   headerMetadata    `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

type headerMetadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// decodeObject decodes one object, or the items of a list, appending them
// to out. implied is the apiVersion and kind of an item that names neither:
// a typed list's items.
func (d *Decoder) decodeObject(out []Object, origin diag.Origin, js []byte, implied kindKey) []Object {
	h, ok := peekHeader(js)
	if !ok || d.fullParsers {
		h = header{}
		if err := json.Unmarshal(js, &h); err != nil {
			field, msg := explainJSONError(err)
			d.report(origin, "", field, "not a Kubernetes object: %s", msg)
			return out
		}
	}
	if h.Kind == "" && h.APIVersion == "" {
		h.APIVersion, h.Kind = implied.apiVersion, implied.kind
	}
	if h.Kind == "" || h.APIVersion == "" {
		d.report(origin, "", "", "not a Kubernetes object: apiVersion and kind are required")
		return out
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		if origin.Item > 0 {
			d.report(origin, "", "items", "a List inside a List is not supported") // no object: what it holds is unknown
			return out
		}
		// The API server writes a typed list's items (PodList,
		// NetworkPolicyList, ...) without apiVersion and kind: they are the
		// list's. A plain List holds any kind, so its items name theirs.
		var item kindKey
		if h.Kind != "List" {
			item = kindKey{h.APIVersion, strings.TrimSuffix(h.Kind, "List")}
		}
		for i, js := range h.Items {
			o := origin
			o.Item = i + 1
			out = d.decodeObject(out, o, js, item)
		}
		return out
	}
	if !knownKinds[h.Kind] {
		d.ignored.add(h.Kind, origin.File, 1) // whatever else it holds: it is not read
		return out
	}
	obj := Object{Origin: origin, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name}
	if h.Metadata.Name == "" {
		d.report(origin, obj.Ref(), "metadata.name", "Required value")
		return out
	}
	if field, msg := invalidName(h.Kind, h.Metadata.Name, h.Metadata.Namespace); field != "" {
		d.report(origin, obj.Ref(), field, "%s", msg)
		return out
	}
	key := kindKey{h.APIVersion, h.Kind}
	var value any
	switch {
	case constructors[key] != nil:
		value = constructors[key]()
	case adminKinds[h.Kind] && h.APIVersion == policyGroup+"/v1alpha1":
		value = d.adminValue(origin, obj, js)
		if value == nil {
			return out
		}
	default:
		d.report(origin, obj.Ref(), "apiVersion", "unsupported apiVersion %q for kind %s (want %s)", h.APIVersion, h.Kind, wantVersion(h.Kind))
		return out
	}
	var strict []error
	var err error
	if d.fullParsers || !fastDecode(js, value) {
		// The fast path gave up, perhaps half way: kjson decodes a fresh
		// value and says what is wrong, if anything.
		value = reflect.New(reflect.TypeOf(value).Elem()).Interface()
		strict, err = kjson.UnmarshalStrict(js, value, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	}
	if err != nil {
		field, msg := explainJSONError(err)
		d.report(origin, obj.Ref(), field, "%s", msg)
		return out
	}
	refuse := !d.Lenient && RefusesUnknownFields(h.Kind)
	refused := false
	for _, s := range strict {
		path := s.Error()
		var fe kjson.FieldError
		if errors.As(s, &fe) {
			path = fe.FieldPath()
		}
		if strings.HasPrefix(s.Error(), "duplicate field") {
			d.Diags = append(d.Diags, diag.Diagnostic{Severity: diag.Warning, Origin: origin, Object: obj.Ref(), Field: path,
				Message: "duplicate field: the last value wins"})
			continue
		}
		if refuse {
			d.report(origin, obj.Ref(), path, "%s", UnknownFieldRefused)
			refused = true
			continue
		}
		obj.Unknown = append(obj.Unknown, path)
		d.Diags = append(d.Diags, diag.Diagnostic{Severity: diag.Warning, Origin: origin, Object: obj.Ref(), Field: path,
			Message: "unknown field, ignored (the API server would drop it)"})
	}
	if refused {
		return out
	}
	if msg := invalidLabels(value); msg != "" {
		d.report(origin, obj.Ref(), "metadata.labels", "%s", msg)
		return out
	}
	obj.Value = value
	if p, ok := value.(*corev1.Pod); ok && d.CompactPods {
		obj.Value = CompactPod(p)
	}
	return append(out, obj)
}

// knownKinds are the kinds netpol reads, in some apiVersion.
var knownKinds = func() map[string]bool {
	known := map[string]bool{}
	for k := range constructors {
		known[k.kind] = true
	}
	for kind := range adminKinds {
		known[kind] = true
	}
	return known
}()

func wantVersion(kind string) string {
	if adminKinds[kind] {
		return policyGroup + "/v1alpha1"
	}
	var versions []string
	for k := range constructors {
		if k.kind == kind {
			versions = append(versions, k.apiVersion)
		}
	}
	if len(versions) > 1 {
		// Sorted for a stable message.
		if versions[0] > versions[1] {
			versions[0], versions[1] = versions[1], versions[0]
		}
	}
	return strings.Join(versions, " or ")
}

// adminValue picks the shape of an ANP or BANP and returns the value to decode into.
func (d *Decoder) adminValue(origin diag.Origin, obj Object, js []byte) any {
	shape := d.ANPShape
	if shape == "" || shape == ShapeAuto {
		var generic map[string]any
		_ = json.Unmarshal(js, &generic)
		detected, ambiguous, conflict := detectShape(generic)
		switch {
		case conflict != "":
			d.report(origin, obj.Ref(), conflict, "mixes the released v0.1.7 peer shape with the KEP-2091 shape; use one (or force one with --anp-shape)")
			return nil
		case ambiguous:
			d.Diags = append(d.Diags, diag.Diagnostic{Severity: diag.Warning, Origin: origin, Object: obj.Ref(), Field: "spec",
				Message: "peers fit both the released v0.1.7 shape and the KEP-2091 shape; reading it as v0.1.7 (force one with --anp-shape)"})
		}
		shape = detected
	}
	kepShape := shape == ShapeKEP
	switch {
	case obj.Kind == "AdminNetworkPolicy" && kepShape:
		return new(kep.AdminNetworkPolicy)
	case obj.Kind == "AdminNetworkPolicy":
		return new(v1alpha1.AdminNetworkPolicy)
	case kepShape:
		return new(kep.BaselineAdminNetworkPolicy)
	default:
		return new(v1alpha1.BaselineAdminNetworkPolicy)
	}
}

// detectShape looks at every peer. A peer whose namespaces field holds
// namespaceSelector/sameLabels/notSameLabels/related, or whose pods field holds
// namespaces, is the KEP shape; matchLabels/matchExpressions under namespaces,
// namespaceSelector under pods, an empty namespaces peer, or a
// nodes/networks/domainNames peer is the released shape. conflict is the path of the first peer that contradicts an
// earlier one.
func detectShape(obj map[string]any) (shape ANPShape, ambiguous bool, conflict string) {
	var sawKEP, sawV017 bool
	spec, _ := obj["spec"].(map[string]any)
	for _, dir := range []struct{ rules, peers string }{{"ingress", "from"}, {"egress", "to"}} {
		rules, _ := spec[dir.rules].([]any)
		for i, r := range rules {
			rule, _ := r.(map[string]any)
			peers, _ := rule[dir.peers].([]any)
			for j, p := range peers {
				peer, _ := p.(map[string]any)
				k, v := peerShape(peer)
				sawKEP, sawV017 = sawKEP || k, sawV017 || v
				if sawKEP && sawV017 && conflict == "" {
					conflict = fmt.Sprintf("spec.%s[%d].%s[%d]", dir.rules, i, dir.peers, j)
				}
			}
		}
	}
	switch {
	case sawKEP && !sawV017:
		return ShapeKEP, false, ""
	case sawV017:
		return ShapeV017, false, conflict
	}
	// No peer told: only empty namespaces/pods peers, or no peers at all. The
	// two shapes read those differently only when a peer exists.
	return ShapeV017, hasAnyPeer(spec), ""
}

func peerShape(peer map[string]any) (kepShape, v017 bool) {
	for _, f := range []string{"nodes", "networks", "domainNames"} {
		if _, ok := peer[f]; ok {
			v017 = true
		}
	}
	if ns, ok := peer["namespaces"].(map[string]any); ok {
		// An empty namespaces peer selects every namespace in the released
		// shape and is invalid in the KEP shape (exactly one field).
		v017 = v017 || len(ns) == 0
		for k := range ns {
			switch k {
			case "namespaceSelector", "sameLabels", "notSameLabels", "related":
				kepShape = true
			case "matchLabels", "matchExpressions":
				v017 = true
			}
		}
	}
	if pods, ok := peer["pods"].(map[string]any); ok {
		if _, ok := pods["namespaces"]; ok {
			kepShape = true
		}
		if _, ok := pods["namespaceSelector"]; ok {
			v017 = true
		}
	}
	return kepShape, v017
}

func hasAnyPeer(spec map[string]any) bool {
	for _, dir := range []struct{ rules, peers string }{{"ingress", "from"}, {"egress", "to"}} {
		rules, _ := spec[dir.rules].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			if peers, _ := rule[dir.peers].([]any); len(peers) > 0 {
				return true
			}
		}
	}
	return false
}

var typeErrorRE = regexp.MustCompile(`cannot unmarshal (.+) into Go struct field [^.\s]*\.(\S+) of type (\S+)`)

// explainJSONError turns a decoding error into a field path and a message a
// person can act on.
func explainJSONError(err error) (field, msg string) {
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		msg := fmt.Sprintf("wrong type: got %s, want %s", m[1], m[3])
		if m[1] == "bool" && strings.HasSuffix(m[3], "string") {
			// YAML 1.1 reads y, n, yes, no, on, off, true, false as booleans.
			msg += ` (YAML reads unquoted y, n, yes, no, on and off as booleans: quote the value)`
		}
		return m[2], msg
	}
	return "", strings.TrimPrefix(err.Error(), "json: ")
}

func (d *Decoder) report(origin diag.Origin, object, field, format string, args ...any) {
	d.Diags = append(d.Diags, diag.Diagnostic{Severity: diag.Error, Origin: origin, Object: object, Field: field,
		Message: fmt.Sprintf(format, args...)})
}
