package source

import (
	"bytes"
	"sort"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/diag"
)

// ignoredObjects counts the objects of kinds netpol does not read, by
// kind: a cluster dump holds thousands (ConfigMaps, Secrets, Events,
// CRDs), and one warning each buried whatever else there was to say
// (issue 15).
type ignoredObjects struct {
	byKind map[string]int
	// file they all come from, named in the finding; "" once they come
	// from several.
	file      string
	manyFiles bool
}

func (ig *ignoredObjects) add(kind, file string, n int) {
	if ig.byKind == nil {
		ig.byKind = map[string]int{}
		ig.file = file
	}
	ig.byKind[kind] += n
	if file != ig.file {
		ig.manyFiles = true
	}
}

// addAll counts what other counted.
func (ig *ignoredObjects) addAll(other ignoredObjects) {
	for kind, n := range other.byKind {
		ig.add(kind, other.file, n)
	}
	if other.manyFiles {
		ig.manyFiles = true
	}
}

// finding is the one warning that reports them all, most frequent kind
// first: "ignored 1,234 objects of kinds netpol does not read: ConfigMap
// 1,000, Secret 234".
func (ig ignoredObjects) finding() diag.Diagnostic {
	kinds := make([]string, 0, len(ig.byKind))
	total := 0
	for kind, n := range ig.byKind {
		kinds = append(kinds, kind)
		total += n
	}
	sort.Slice(kinds, func(i, j int) bool {
		if ig.byKind[kinds[i]] != ig.byKind[kinds[j]] {
			return ig.byKind[kinds[i]] > ig.byKind[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	var msg string
	if total == 1 {
		msg = "ignored 1 object of a kind netpol does not read: " + kinds[0]
	} else {
		counts := make([]string, len(kinds))
		for i, kind := range kinds {
			counts[i] = kind + " " + withThousands(ig.byKind[kind])
		}
		of := "kinds"
		if len(kinds) == 1 {
			of = "a kind"
		}
		msg = "ignored " + withThousands(total) + " objects of " + of + " netpol does not read: " + strings.Join(counts, ", ")
	}
	var origin diag.Origin
	if !ig.manyFiles {
		origin.File = ig.file
	}
	return diag.Diagnostic{Severity: diag.Warning, Origin: origin, Message: msg}
}

// withThousands writes n with commas between groups of three digits.
func withThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// peekYAMLKind reads the kind of a YAML document from its lines, without
// parsing it, so that a document of a kind netpol does not read costs a
// glance instead of a decode. It answers only for the kinds skip accepts,
// and says no as soon as it finds that apiVersion and kind name another.
//
// For a kind to skip it makes sure, line by line, that the "kind:" and
// "apiVersion:" lines it found are the document's own: every line at
// column 0 is a plain key (a top-level key, since the top level is then a
// mapping at column 0), and no quoted scalar or flow collection goes on
// past its line, the only ways for a line at column 0 to belong to
// something else (a block scalar and a plain scalar go on only with
// deeper lines). Where it cannot tell, it says no and the document is
// decoded. It does not judge the rest: a document it skips is not checked
// for errors either.
func peekYAMLKind(doc []byte, skip func(kind string) bool) (kind string, ok bool) {
	if !peekableBreaks(doc) {
		return "", false
	}
	var apiVersion []byte
	var kindValue []byte
	seenAPIVersion, seenKind := false, false
	const (
		noBlock   = iota
		blockAuto // a block scalar whose indentation its first lines set
		blockSet  // a block scalar's lines: those at blockIndent or deeper
	)
	block, blockParent, blockIndent, blockEmpty := noBlock, 0, 0, 0
	var openQuote byte      // the quote of a quoted scalar that goes on over lines
	mustBeTopLevel := false // after kind or apiVersion: a deeper line would continue the value
	first := true
	for pos := 0; pos < len(doc); {
		end := lineEnd(doc, pos)
		line := doc[pos:end]
		pos = nextLine(doc, end)
		col := 0
		for col < len(line) && line[col] == ' ' {
			col++
		}
		if openQuote != 0 {
			// Inside a quoted scalar, whatever the column, until its
			// closing quote.
			after := closingQuoteFrom(line, 0, openQuote)
			if after < 0 {
				continue
			}
			if !restIsComment(line, after) {
				return "", false
			}
			openQuote = 0
			continue
		}
		if col == len(line) {
			blockEmpty = max(blockEmpty, col)
			continue
		}
		switch block {
		case blockAuto:
			blockIndent = max(blockEmpty, col, blockParent+1, 1)
			block = blockSet
			fallthrough
		case blockSet:
			if col >= blockIndent {
				continue
			}
			block = noBlock
		}
		if first && col > 0 {
			return "", false // not a mapping at column 0
		}
		first = false
		if col > 0 {
			if mustBeTopLevel {
				return "", false
			}
		} else {
			mustBeTopLevel = false
			if line[0] == '#' {
				continue
			}
			key, value, isKey := topLevelKey(line)
			if !isKey && !isSequenceEntry(line, 0, len(line)) { // "- " entries of a top-level key's list
				return "", false
			}
			switch string(key) {
			case "apiVersion", "kind":
				if value, ok = plainStringToken(value); !ok {
					return "", false
				}
				if string(key) == "kind" {
					if seenKind {
						return "", false
					}
					seenKind, kindValue = true, value
				} else {
					if seenAPIVersion {
						return "", false
					}
					seenAPIVersion, apiVersion = true, value
				}
				mustBeTopLevel = true
				if seenKind && seenAPIVersion && !skip(string(kindValue)) {
					return "", false
				}
				continue
			}
		}
		parent, increment, isBlock, quote, safe := lineOpensNothing(line, col)
		if !safe {
			return "", false
		}
		openQuote = quote
		if isBlock {
			block, blockParent, blockEmpty = blockAuto, parent, 0
			if increment > 0 {
				block, blockIndent = blockSet, parent+increment
			}
		}
	}
	if !seenKind || !seenAPIVersion || len(apiVersion) == 0 || openQuote != 0 {
		return "", false
	}
	return string(kindValue), true
}

// peekableBreaks: no carriage return and none of the line breaks YAML 1.1
// knows beyond '\n' (NEL, LS, PS), so that the peek's lines are the
// parser's.
func peekableBreaks(doc []byte) bool {
	return bytes.IndexByte(doc, '\r') < 0 && !bytes.Contains(doc, []byte("\u0085")) &&
		!bytes.Contains(doc, []byte("\u2028")) && !bytes.Contains(doc, []byte("\u2029"))
}

// topLevelKey splits a line at column 0 into a plain key of letters,
// digits and ._/- and what follows its ':'.
func topLevelKey(line []byte) (key, value []byte, ok bool) {
	if len(line) == 0 || !isASCIILetter(line[0]) {
		return nil, nil, false
	}
	i := 1
	for i < len(line) && (isASCIILetter(line[i]) || (line[i] >= '0' && line[i] <= '9') || bytes.IndexByte([]byte("._/-"), line[i]) >= 0) {
		i++
	}
	if i == len(line) || line[i] != ':' || (i+1 < len(line) && line[i+1] != ' ') {
		return nil, nil, false
	}
	return line[:i], line[i+1:], true
}

func isASCIILetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// plainStringToken returns the word of value: after spaces, one word of
// letters, digits and ._/- that YAML reads as a string (not yes, null,
// 1.5...), then at most a comment.
func plainStringToken(value []byte) ([]byte, bool) {
	value = bytes.TrimLeft(value, " ")
	if i := bytes.Index(value, []byte(" #")); i >= 0 {
		value = value[:i]
	}
	value = trimTrailingSpaces(value)
	if len(value) == 0 {
		return nil, false
	}
	for _, b := range value {
		if !isASCIILetter(b) && !(b >= '0' && b <= '9') && bytes.IndexByte([]byte("._/-"), b) < 0 {
			return nil, false
		}
	}
	var scratch [32]byte
	_, kind := appendPlainScalar(scratch[:0], value)
	return value, kind == plainString
}

// lineOpensNothing looks at the nodes that start on a line, its content
// from column col on: "- " entries, keys, and a value. A block scalar
// header makes isBlock true, with the column of the node that holds it
// and its indentation indicator; a quoted value that goes on past the
// line sets quote. safe is false when a flow collection does not close on
// the line, or something the peek does not follow starts there (anchors,
// tags, complex keys).
func lineOpensNothing(line []byte, col int) (parent, increment int, isBlock bool, quote byte, safe bool) {
	c := col
	parent = col
	for {
		c = skipSpaces(line, c, len(line))
		if c == len(line) {
			return parent, 0, false, 0, true
		}
		switch ch := line[c]; ch {
		case '#':
			return parent, 0, false, 0, true // a comment: only ever after a space here
		case '-':
			if c+1 == len(line) || line[c+1] == ' ' {
				parent = c
				c++
				continue
			}
		case '"', '\'':
			after := closingQuote(line, c)
			if after < 0 {
				return parent, 0, false, ch, true
			}
			next := skipSpaces(line, after, len(line))
			if next < len(line) && line[next] == ':' && (next+1 == len(line) || line[next+1] == ' ') {
				parent = c // a quoted key: its value follows
				c = next + 1
				continue
			}
			return parent, 0, false, 0, restIsComment(line, after)
		case '{', '[':
			after := closingBracket(line, c)
			return parent, 0, false, 0, after >= 0 && restIsComment(line, after)
		case '|', '>':
			increment, ok := blockHeader(line[c+1:])
			return parent, increment, true, 0, ok
		case '&', '!', '?', '%', '@', '`':
			return 0, 0, false, 0, false
		}
		// A plain scalar, or a plain key and its value.
		colon := plainKeyEnd(line, c)
		if colon < 0 {
			return parent, 0, false, 0, true
		}
		parent = c
		c = colon + 1
	}
}

// closingQuote returns the position after the quote that closes the
// quoted scalar at c, or -1 when it does not close on the line.
func closingQuote(line []byte, c int) int {
	return closingQuoteFrom(line, c+1, line[c])
}

// closingQuoteFrom finds the closing quote of a scalar quoted with quote
// whose text goes on at i: in double quotes a backslash escapes the next
// character (at the end of a line, the line break), in single quotes ”
// is a quote.
func closingQuoteFrom(line []byte, i int, quote byte) int {
	for ; i < len(line); i++ {
		switch {
		case quote == '"' && line[i] == '\\':
			i++
		case line[i] == quote && quote == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case line[i] == quote:
			return i + 1
		}
	}
	return -1
}

// closingBracket returns the position after the bracket that closes the
// flow collection at c, or -1 when it does not close on the line or holds
// what the peek does not follow: a comment, or a quote that does not
// start a scalar (after a bracket, a comma or ": "), which is a character
// of a plain scalar or the start of one the peek does not tell apart.
func closingBracket(line []byte, c int) int {
	depth := 0
	tokenStart := true
	for i := c; i < len(line); i++ {
		switch ch := line[i]; ch {
		case '{', '[', ',':
			if ch != ',' {
				depth++
			}
			tokenStart = true
			continue
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case ':':
			if i+1 < len(line) && line[i+1] == ' ' {
				tokenStart = true
				continue
			}
		case ' ':
			continue // keeps tokenStart as it is
		case '"', '\'':
			if !tokenStart {
				return -1
			}
			after := closingQuote(line, i)
			if after < 0 {
				return -1
			}
			i = after - 1
		case '#':
			if line[i-1] == ' ' {
				return -1
			}
		}
		tokenStart = false
	}
	return -1
}

// restIsComment: nothing but spaces and a comment after position i.
func restIsComment(line []byte, i int) bool {
	j := skipSpaces(line, i, len(line))
	return j == len(line) || (line[j] == '#' && j > i)
}

// blockHeader reads what follows '|' or '>': a chomping and an
// indentation indicator in either order, then at most a comment.
func blockHeader(rest []byte) (increment int, ok bool) {
	chomp := false
	i := 0
	for range 2 {
		switch {
		case i < len(rest) && (rest[i] == '+' || rest[i] == '-') && !chomp:
			chomp = true
			i++
		case i < len(rest) && rest[i] >= '1' && rest[i] <= '9' && increment == 0:
			increment = int(rest[i] - '0')
			i++
		}
	}
	j := skipSpaces(rest, i, len(rest))
	return increment, j == len(rest) || (rest[j] == '#' && j > i)
}

// plainKeyEnd returns the position of the ':' that ends the plain key at
// c, or -1 when the plain scalar there is no key.
func plainKeyEnd(line []byte, c int) int {
	for i := c; i < len(line); i++ {
		switch {
		case line[i] == ':' && (i+1 == len(line) || line[i+1] == ' '):
			return i
		case line[i] == '#' && i > c && line[i-1] == ' ':
			return -1
		}
	}
	return -1
}
