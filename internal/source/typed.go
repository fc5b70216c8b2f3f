package source

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// fastDecode fills v, a pointer to a zero value, from js, a valid JSON
// document, exactly as kjson.UnmarshalStrict (case-sensitive, unknown and
// duplicate fields refused) would on success, and reports whether it
// could. It gives up on anything that would make kjson report an error or
// a strict finding (a wrong type, an unknown or duplicate field, a number
// out of range) and on what it does not follow (interface values, the
// ",string" option, text unmarshalers, arrays, byte slices, embedded
// pointers, escapes it does not know): the caller then decodes a fresh
// value with kjson, so every message stays kjson's own.
//
// It exists because kjson was, after the YAML, most of the decoding time:
// it validates the whole document in a byte-at-a-time state machine, then
// walks it again in another. This reads the bytes once, with the field
// tables of each type computed once.
func fastDecode(js []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	r := jsonReader{js: js}
	if !r.value(planFor(rv.Type().Elem()), rv.Elem()) {
		return false
	}
	r.skipSpace()
	return r.i == len(js)
}

// planKind is how a Go type is filled.
type planKind uint8

const (
	planUnsupported planKind = iota
	planStruct
	planMap
	planSlice
	planPointer
	planString
	planInt
	planUint
	planFloat
	planBool
	planUnmarshaler // the type's own UnmarshalJSON
)

// decodePlan is what the decoder knows of one Go type.
type decodePlan struct {
	kind   planKind
	typ    reflect.Type
	elem   *decodePlan             // of a map, slice or pointer
	fields map[string]*structField // of a struct, by JSON name
}

type structField struct {
	index   []int
	ordinal int // among the struct's fields, to notice one given twice
	plan    *decodePlan
}

// maxPlanFields bounds the fields of a struct the decoder follows: it
// remembers which it has seen in two words.
const maxPlanFields = 128

var (
	planMu     sync.Mutex
	plans      = map[reflect.Type]*decodePlan{} // under planMu, complete or being built
	builtPlans sync.Map                         // reflect.Type -> *decodePlan, complete

	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns the plan of t, built the first time. Workers decode in
// parallel: a plan once built is read without the lock.
func planFor(t reflect.Type) *decodePlan {
	if p, ok := builtPlans.Load(t); ok {
		return p.(*decodePlan)
	}
	planMu.Lock()
	defer planMu.Unlock()
	p := buildPlan(t)
	builtPlans.Store(t, p) // complete now, with every plan it refers to
	return p
}

// buildPlan computes the plan of t; the caller holds planMu. A plan is
// registered before its elements are, so that recursive types end.
func buildPlan(t reflect.Type) *decodePlan {
	if p, ok := plans[t]; ok {
		return p
	}
	p := &decodePlan{typ: t}
	plans[t] = p
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(jsonUnmarshalerType):
		p.kind = planUnmarshaler
		return p
	case pt.Implements(textUnmarshalerType):
		return p // encoding/json hands it strings: not followed
	}
	switch t.Kind() {
	case reflect.Struct:
		if fields, ok := jsonFields(t); ok {
			p.kind, p.fields = planStruct, fields
		}
	case reflect.Map:
		key := t.Key()
		if key.Kind() == reflect.String && !reflect.PointerTo(key).Implements(textUnmarshalerType) && !key.Implements(textUnmarshalerType) {
			p.kind, p.elem = planMap, buildPlan(t.Elem())
		}
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // []byte is base64 in JSON
			p.kind, p.elem = planSlice, buildPlan(t.Elem())
		}
	case reflect.Pointer:
		p.kind, p.elem = planPointer, buildPlan(t.Elem())
	case reflect.String:
		p.kind = planString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = planInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.kind = planUint
	case reflect.Float32, reflect.Float64:
		p.kind = planFloat
	case reflect.Bool:
		p.kind = planBool
	}
	return p
}

// jsonFields lists the fields encoding/json fills in a struct, by name:
// exported fields under their tag name (or Go name), and the fields of
// embedded structs, promoted, where a shallower field of the same name
// hides a deeper one and two at the same depth hide each other unless
// exactly one is tagged. ok is false for what the decoder leaves to
// kjson: embedded pointers, a struct embedded twice, tags it does not
// read, too many fields.
func jsonFields(t reflect.Type) (map[string]*structField, bool) {
	type candidate struct {
		name   string
		index  []int
		tagged bool
		typ    reflect.Type
		quoted bool
	}
	type embedded struct {
		typ   reflect.Type
		index []int
	}
	fields := map[string]*structField{}
	hidden := map[string]bool{}
	seenTypes := map[reflect.Type]bool{}
	level := []embedded{{t, nil}}
	for len(level) > 0 {
		var next []embedded
		var candidates []candidate
		for _, e := range level {
			if seenTypes[e.typ] {
				return nil, false
			}
			seenTypes[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						return nil, false
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !plainTagName(name) {
					return nil, false // encoding/json's rules for odd tags: not followed
				}
				index := append(append([]int(nil), e.index...), i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, embedded{ft, index})
					continue
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				quoted := false
				for _, o := range strings.Split(opts, ",") {
					quoted = quoted || o == "string"
				}
				candidates = append(candidates, candidate{name, index, tagged, ft, quoted})
			}
		}
		byName := map[string][]candidate{}
		for _, c := range candidates {
			if _, done := fields[c.name]; !done && !hidden[c.name] {
				byName[c.name] = append(byName[c.name], c)
			}
		}
		for name, cs := range byName {
			chosen := -1
			if len(cs) == 1 {
				chosen = 0
			} else {
				for i, c := range cs {
					if c.tagged {
						if chosen >= 0 {
							chosen = -1
							break
						}
						chosen = i
					}
				}
			}
			if chosen < 0 {
				hidden[name] = true
				continue
			}
			c := cs[chosen]
			plan := buildPlan(c.typ)
			if c.quoted {
				plan = &decodePlan{typ: c.typ} // ",string": left to kjson
			}
			fields[name] = &structField{index: c.index, ordinal: len(fields), plan: plan}
		}
		level = next
	}
	return fields, len(fields) <= maxPlanFields
}

// plainTagName: a tag name of letters, digits and the punctuation
// encoding/json accepts in one (it ignores other names).
func plainTagName(name string) bool {
	for _, c := range name {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) {
			return false
		}
	}
	return true
}

// jsonReader reads one valid JSON document.
type jsonReader struct {
	js      []byte
	i       int
	scratch []byte
}

func (r *jsonReader) skipSpace() {
	for r.i < len(r.js) {
		switch r.js[r.i] {
		case ' ', '\n', '\t', '\r':
			r.i++
		default:
			return
		}
	}
}

// value fills v, of plan p's type, from the value at the reader.
func (r *jsonReader) value(p *decodePlan, v reflect.Value) bool {
	r.skipSpace()
	if r.i >= len(r.js) {
		return false
	}
	c := r.js[r.i]
	if p.kind == planUnmarshaler {
		// As encoding/json: the raw value, null included, to the
		// type's UnmarshalJSON (which copies what it keeps: the bytes
		// are reused for the next document).
		end := skipJSONValue(r.js, r.i)
		u, ok := v.Addr().Interface().(json.Unmarshaler)
		if !ok || u.UnmarshalJSON(r.js[r.i:end]) != nil {
			return false
		}
		r.i = end
		return true
	}
	if c == 'n' { // null: a no-op, except that it clears what may be nil
		r.i += len("null")
		switch p.kind {
		case planMap, planSlice, planPointer:
			v.SetZero()
		case planUnsupported:
			return false
		}
		return true
	}
	switch p.kind {
	case planStruct:
		return c == '{' && r.object(p, v)
	case planMap:
		return c == '{' && r.mapping(p, v)
	case planSlice:
		return c == '[' && r.array(p, v)
	case planPointer:
		if v.IsNil() {
			v.Set(reflect.New(p.typ.Elem()))
		}
		return r.value(p.elem, v.Elem())
	case planString:
		s, ok := r.str()
		if ok {
			v.SetString(s)
		}
		return ok
	case planBool:
		switch c {
		case 't':
			v.SetBool(true)
			r.i += len("true")
			return true
		case 'f':
			v.SetBool(false)
			r.i += len("false")
			return true
		}
		return false
	case planInt, planUint, planFloat:
		return (c == '-' || (c >= '0' && c <= '9')) && r.number(p, v)
	}
	return false
}

// object fills a struct: every key must name a field, once.
func (r *jsonReader) object(p *decodePlan, v reflect.Value) bool {
	var seen [maxPlanFields / 64]uint64
	r.i++ // '{'
	r.skipSpace()
	if r.i < len(r.js) && r.js[r.i] == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		f := p.fields[string(key)]
		if f == nil || seen[f.ordinal/64]&(1<<(f.ordinal%64)) != 0 {
			return false // unknown or duplicate: kjson has something to say
		}
		seen[f.ordinal/64] |= 1 << (f.ordinal % 64)
		fv := v.Field(f.index[0])
		for _, i := range f.index[1:] {
			fv = fv.Field(i)
		}
		if !r.value(f.plan, fv) {
			return false
		}
		if closed, ok := r.next('}'); !ok || closed {
			return ok
		}
	}
}

// mapping fills a map with string keys.
func (r *jsonReader) mapping(p *decodePlan, v reflect.Value) bool {
	r.i++ // '{'
	if v.IsNil() {
		v.Set(reflect.MakeMap(p.typ))
	}
	r.skipSpace()
	if r.i < len(r.js) && r.js[r.i] == '}' {
		r.i++
		return true
	}
	if p.typ == stringMapType {
		return r.stringMap(v.Interface().(map[string]string))
	}
	keyType, elemType := p.typ.Key(), p.typ.Elem()
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		kv := reflect.ValueOf(string(key))
		if keyType != kv.Type() {
			kv = kv.Convert(keyType)
		}
		if v.MapIndex(kv).IsValid() {
			return false // a duplicate key
		}
		ev := reflect.New(elemType).Elem()
		if !r.value(p.elem, ev) {
			return false
		}
		v.SetMapIndex(kv, ev)
		if closed, ok := r.next('}'); !ok || closed {
			return ok
		}
	}
}

// stringMapType is the type of labels, annotations and selectors: the
// most frequent map, filled without reflection.
var stringMapType = reflect.TypeFor[map[string]string]()

// stringMap fills labels and the like, after the '{'.
func (r *jsonReader) stringMap(m map[string]string) bool {
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		if _, dup := m[string(key)]; dup {
			return false
		}
		r.skipSpace()
		if r.i >= len(r.js) || r.js[r.i] != '"' {
			return false // null, or a wrong type: left to kjson
		}
		value, ok := r.str()
		if !ok {
			return false
		}
		m[string(key)] = value
		if closed, ok := r.next('}'); !ok || closed {
			return ok
		}
	}
}

// array fills a slice; an empty array is an empty slice, not nil, as
// encoding/json makes it.
func (r *jsonReader) array(p *decodePlan, v reflect.Value) bool {
	r.i++ // '['
	r.skipSpace()
	if r.i < len(r.js) && r.js[r.i] == ']' {
		r.i++
		v.Set(reflect.MakeSlice(p.typ, 0, 0))
		return true
	}
	// Made at its length: grown element by element, as encoding/json
	// grows it, the slices of a 100k-pod dump cost a tenth of its
	// decoding. Counting is a scan for brackets, quotes and commas.
	v.Set(reflect.MakeSlice(p.typ, 0, countJSONElements(r.js, r.i)))
	n := 0
	for {
		if n == v.Cap() {
			v.Grow(1) // the count is a hint: the document is valid JSON, but the decoder decides
		}
		v.SetLen(n + 1)
		if !r.value(p.elem, v.Index(n)) {
			return false
		}
		n++
		if closed, ok := r.next(']'); !ok || closed {
			return ok
		}
	}
}

// countJSONElements counts the elements of the array whose first element
// starts at or after i (past the '['), in valid JSON.
func countJSONElements(js []byte, i int) int {
	n, depth := 1, 0
	for i < len(js) {
		switch js[i] {
		case '"':
			i = skipJSONString(js, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
		i++
		for i < len(js) && !jsonCounted[js[i]] {
			i++
		}
	}
	return n
}

var jsonCounted = byteSet(`"{}[],`)

// next moves past the ',' or the closer after a member, and reports
// which.
func (r *jsonReader) next(closer byte) (closed, ok bool) {
	r.skipSpace()
	if r.i < len(r.js) {
		switch r.js[r.i] {
		case ',':
			r.i++
			return false, true
		case closer:
			r.i++
			return true, true
		}
	}
	return false, false
}

// key reads an object key and its ':'. A key with an escape, or bytes
// that are not UTF-8 (encoding/json replaces them), is left to kjson.
func (r *jsonReader) key() ([]byte, bool) {
	r.skipSpace()
	if r.i >= len(r.js) || r.js[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	end := start
	ascii := true
	for end < len(r.js) && r.js[end] != '"' {
		if r.js[end] == '\\' {
			return nil, false
		}
		ascii = ascii && r.js[end] < utf8.RuneSelf
		end++
	}
	if !ascii && !utf8.Valid(r.js[start:end]) {
		return nil, false
	}
	r.i = end + 1
	r.skipSpace()
	if r.i >= len(r.js) || r.js[r.i] != ':' {
		return nil, false
	}
	r.i++
	return r.js[start:end], true
}

// str reads a string value.
func (r *jsonReader) str() (string, bool) {
	if r.js[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	end := start
	ascii := true
	for end < len(r.js) && r.js[end] != '"' && r.js[end] != '\\' {
		ascii = ascii && r.js[end] < utf8.RuneSelf
		end++
	}
	if end < len(r.js) && r.js[end] == '"' {
		if !ascii && !utf8.Valid(r.js[start:end]) {
			return "", false // encoding/json would replace the bytes that are not UTF-8
		}
		r.i = end + 1
		return string(r.js[start:end]), true
	}
	// Escapes: unescaped into scratch.
	out := append(r.scratch[:0], r.js[start:end]...)
	i := end
	for i < len(r.js) && r.js[i] != '"' {
		c := r.js[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(r.js) {
			return "", false
		}
		switch e := r.js[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+6 > len(r.js) {
				return "", false
			}
			code, err := strconv.ParseUint(string(r.js[i+2:i+6]), 16, 16)
			if err != nil || (code >= 0xd800 && code <= 0xdfff) {
				return "", false // surrogates: encoding/json pairs them or replaces them
			}
			out = utf8.AppendRune(out, rune(code))
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	r.scratch = out
	if i >= len(r.js) || !utf8.Valid(out) {
		return "", false
	}
	r.i = i + 1
	return string(out), true
}

// number fills an integer or float kind from a number literal, as
// encoding/json parses it: an integer kind takes only an integer literal
// that fits.
func (r *jsonReader) number(p *decodePlan, v reflect.Value) bool {
	start := r.i
	end := start
	for end < len(r.js) {
		c := r.js[end]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		end++
	}
	lit := r.js[start:end]
	r.i = end
	switch p.kind {
	case planInt:
		n, ok := parseDecimal(lit)
		if !ok {
			var err error
			if n, err = strconv.ParseInt(string(lit), 10, 64); err != nil {
				return false
			}
		}
		if v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	case planUint:
		n, err := strconv.ParseUint(string(lit), 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
	default:
		f, err := strconv.ParseFloat(string(lit), v.Type().Bits())
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
	}
	return true
}

// parseDecimal parses the common integer literal, up to 18 digits,
// without strconv's allocation; ok false sends the rest to strconv.
func parseDecimal(lit []byte) (int64, bool) {
	neg := len(lit) > 0 && lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
