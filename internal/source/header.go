package source

import (
	"bytes"
	"unicode/utf8"
)

// peekHeader reads the header of js, a valid JSON document, as
// json.Unmarshal into a header would, without decoding the rest of it:
// json.Unmarshal validates and walks the whole object first, which cost as
// much as converting the YAML. It gives up (ok false) wherever the two
// readings could differ or json.Unmarshal has a message to give: a header
// field that is not a UTF-8 string without escapes, a key that matches a header
// field only when case is ignored (json.Unmarshal takes it), a header key
// written twice, a list's items.
func peekHeader(js []byte) (h header, ok bool) {
	var seen struct{ apiVersion, kind, metadata bool }
	ok = eachMember(js, func(key, value []byte) bool {
		switch string(key) {
		case "apiVersion":
			return setOnce(&seen.apiVersion, &h.APIVersion, value)
		case "kind":
			return setOnce(&seen.kind, &h.Kind, value)
		case "metadata":
			if seen.metadata {
				return false
			}
			seen.metadata = true
			var seenName, seenNamespace bool
			return eachMember(value, func(key, value []byte) bool {
				switch string(key) {
				case "name":
					return setOnce(&seenName, &h.Metadata.Name, value)
				case "namespace":
					return setOnce(&seenNamespace, &h.Metadata.Namespace, value)
				}
				return !foldsTo(key, "name", "namespace")
			})
		}
		return !foldsTo(key, "apiversion", "kind", "metadata", "items")
	})
	return h, ok
}

// setOnce sets *dst to the JSON string value the first time.
func setOnce(seen *bool, dst *string, value []byte) bool {
	if *seen || len(value) < 2 || value[0] != '"' || bytes.IndexByte(value, '\\') >= 0 || !utf8.Valid(value) {
		return false // json.Unmarshal unescapes, and replaces bytes that are not UTF-8
	}
	*seen = true
	*dst = string(value[1 : len(value)-1])
	return true
}

// foldsTo reports whether key might be matched to one of the lower-case
// names by json.Unmarshal, which ignores case, Unicode's too (the Kelvin
// sign is a K to it): any key that is not ASCII might.
func foldsTo(key []byte, names ...string) bool {
	for _, b := range key {
		if b >= 0x80 || b == '\\' {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// eachMember calls fn with the raw key (without quotes) and the raw value
// of every member of the JSON object obj, which must be valid JSON, until
// fn returns false. It reports false for a value that is not an object.
func eachMember(obj []byte, fn func(key, value []byte) bool) bool {
	i := skipJSONSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return false
	}
	i = skipJSONSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) {
		keyEnd := skipJSONValue(obj, i)
		key := obj[i+1 : keyEnd-1]
		i = skipJSONSpace(obj, keyEnd)
		i = skipJSONSpace(obj, i+1) // the ':'
		valueEnd := skipJSONValue(obj, i)
		if !fn(key, obj[i:valueEnd]) {
			return false
		}
		i = skipJSONSpace(obj, valueEnd)
		if i == len(obj) || obj[i] == '}' {
			return true
		}
		i = skipJSONSpace(obj, i+1) // the ','
	}
	return true
}

func skipJSONSpace(js []byte, i int) int {
	for i < len(js) && (js[i] == ' ' || js[i] == '\n' || js[i] == '\t' || js[i] == '\r') {
		i++
	}
	return i
}

// skipJSONValue returns the end of the valid JSON value that starts at i.
func skipJSONValue(js []byte, i int) int {
	if i < len(js) && js[i] != '"' && js[i] != '{' && js[i] != '[' {
		// A number or a literal: up to the next delimiter.
		for i < len(js) && !jsonDelimiters[js[i]] {
			i++
		}
		return i
	}
	depth := 0
	for i < len(js) {
		switch js[i] {
		case '"':
			i = skipJSONString(js, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
		// Inside a collection only quotes and brackets matter.
		for i < len(js) && !jsonStructural[js[i]] {
			i++
		}
	}
	return i
}

// skipJSONString returns the end of the string whose quote is at i.
func skipJSONString(js []byte, i int) int {
	for i++; i < len(js); {
		j := bytes.IndexByte(js[i:], '"')
		if j < 0 {
			return len(js)
		}
		i += j
		// A quote after an odd number of backslashes is escaped.
		backslashes := 0
		for k := i - 1; k >= 0 && js[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i + 1
		}
		i++
	}
	return i
}

var (
	jsonDelimiters = byteSet(",:}] \n\t\r")
	jsonStructural = byteSet(`"{}[]`)
)

func byteSet(chars string) (set [256]bool) {
	for i := range len(chars) {
		set[chars[i]] = true
	}
	return set
}
