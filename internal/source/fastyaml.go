package source

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// convert converts one YAML document to the very bytes that
// sigs.k8s.io/yaml's YAMLToJSONStrict gives for it (go-yaml v2 typing,
// keys sorted, json.Marshal's escaping), or reports false. It reads the
// YAML that kubectl writes and people write by hand: block mappings and
// sequences, flow collections on one line, plain and quoted scalars (over
// several lines too), literal and folded block scalars, comments.
// Everything else (anchors and aliases, tags, complex keys, flow
// collections over several lines, tabs, carriage returns, duplicate keys,
// keys that are not strings, ...) makes it give up, and the caller asks
// the full parser, so that what the fast path does not handle keeps its
// exact result and error message.
//
// It exists because go-yaml was three quarters of the decoding time: it
// builds a token stream, an event stream, a node tree and maps of
// interface values before a byte of JSON is written (issue 15,
// "decoding at disk speed"). This writes the JSON as it reads each line.
func (c *yamlToJSON) convert(doc []byte) ([]byte, bool) {
	if !fastYAMLCharacters(doc) {
		return nil, false
	}
	c.src, c.pos, c.out, c.depth, c.entries = doc, 0, c.out[:0], 0, c.entries[:0]
	start, col, _, ok := c.peekLine()
	if !ok {
		return append(c.out, "null"...), true // only comments and blank lines
	}
	if !c.blockNode(start, col, -1) {
		return nil, false
	}
	if _, _, _, more := c.peekLine(); more {
		return nil, false // content less indented than the first line
	}
	return c.out, true
}

// fastYAMLCharacters reports whether doc holds only characters that the
// converter treats exactly as go-yaml does: printable ASCII, line feeds,
// and printable non-ASCII characters that YAML does not read as line
// breaks or byte order marks. Tabs and carriage returns are left to the
// full parser: where a tab may stand is subtle in YAML. So is a line that
// starts with "---" or "..." (a document marker, or a scalar that looks
// like one), and a directive ('%' cannot start a key either).
func fastYAMLCharacters(doc []byte) bool {
	for i := 0; i < len(doc); {
		// Eight bytes at a time while they are all printable ASCII (no
		// byte below ' ', which '\n' is, nor from 0x7f up).
		for i+8 <= len(doc) {
			x := binary.LittleEndian.Uint64(doc[i:])
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			if (x-ones*' ')&^x&highs != 0 || ((x+ones)|x)&highs != 0 {
				break
			}
			i += 8
		}
		if i == len(doc) {
			break
		}
		b := doc[i]
		switch {
		case b >= ' ' && b < 0x7f:
			i++
		case b == '\n':
			i++
			if i+3 <= len(doc) && (doc[i] == '-' || doc[i] == '.') && doc[i+1] == doc[i] && doc[i+2] == doc[i] {
				return false
			}
		case b < utf8.RuneSelf:
			return false
		default:
			r, size := utf8.DecodeRune(doc[i:])
			switch {
			case r == utf8.RuneError && size == 1, // not UTF-8
				r < 0xa0, // C1 controls, and NEL, a line break to YAML
				r == 0x2028 || r == 0x2029, r == 0xfeff,
				r > 0xd7ff && r < 0xe000, r == 0xfffe || r == 0xffff:
				return false
			}
			i += size
		}
	}
	// The first line, which no line feed comes before.
	return !(len(doc) >= 3 && (doc[0] == '-' || doc[0] == '.') && doc[1] == doc[0] && doc[2] == doc[0])
}

// maxFastDepth bounds the nesting the converter follows; deeper documents
// (no real manifest) go to the full parser, which has its own limit.
const maxFastDepth = 100

// maxSimpleKey is below go-yaml's 1024-character limit on a key: a longer
// key is an error there, so the full parser must see it.
const maxSimpleKey = 1000

// yamlToJSON is the state of one conversion.
type yamlToJSON struct {
	src   []byte
	pos   int // start of the first line not yet consumed
	out   []byte
	depth int
	// entries are the members of the mappings being written, innermost
	// last: each mapping sorts its own when it closes, as json.Marshal
	// sorts the keys of a map.
	entries []mappingEntry
	scratch []byte
}

// mappingEntry is one `"key":value` written to out.
type mappingEntry struct {
	start, keyEnd, end int // key is out[start+1 : keyEnd-1], quoted
}

// peekLine finds the next line with content, skipping blank lines and
// comment lines (a comment line ends a plain scalar in go-yaml, whatever
// its indentation). It consumes what it skips, not the line it returns.
func (c *yamlToJSON) peekLine() (start, col, end int, ok bool) {
	for c.pos < len(c.src) {
		start = c.pos
		end = len(c.src)
		if i := bytes.IndexByte(c.src[start:], '\n'); i >= 0 {
			end = start + i
		}
		col = 0
		for start+col < end && c.src[start+col] == ' ' {
			col++
		}
		if start+col == end || c.src[start+col] == '#' {
			c.pos = nextLine(c.src, end)
			continue
		}
		return start, col, end, true
	}
	return 0, 0, 0, false
}

// nextLine is the start of the line after the one that ends at end.
func nextLine(src []byte, end int) int {
	if end < len(src) {
		return end + 1
	}
	return end
}

// blockNode converts the block node whose first line starts at start with
// its content at column col: a mapping or a sequence. parent is the
// indentation of the enclosing block (-1 at the top).
func (c *yamlToJSON) blockNode(start, col, parent int) bool {
	if col <= parent {
		return false
	}
	end := lineEnd(c.src, start)
	p := start + col
	if isSequenceEntry(c.src, p, end) {
		return c.sequence(col)
	}
	return c.mapping(col, p, end)
}

func lineEnd(src []byte, start int) int {
	if i := bytes.IndexByte(src[start:], '\n'); i >= 0 {
		return start + i
	}
	return len(src)
}

// isSequenceEntry: "-" followed by a space or the end of the line.
func isSequenceEntry(src []byte, p, end int) bool {
	return src[p] == '-' && (p+1 == end || src[p+1] == ' ')
}

func (c *yamlToJSON) enter() bool {
	c.depth++
	return c.depth <= maxFastDepth
}

// mapping converts a block mapping whose keys stand at column indent; its
// first key starts at p on the line that ends at end (not yet consumed).
func (c *yamlToJSON) mapping(indent, p, end int) bool {
	if !c.enter() {
		return false
	}
	defer func() { c.depth-- }()
	first := len(c.entries)
	c.out = append(c.out, '{')
	for {
		if len(c.entries) > first {
			c.out = append(c.out, ',')
		}
		entryStart := len(c.out)
		afterColon, ok := c.key(p, end)
		if !ok {
			return false
		}
		keyEnd := len(c.out)
		c.out = append(c.out, ':')
		if !c.blockValue(afterColon, end, indent, true) {
			return false
		}
		c.entries = append(c.entries, mappingEntry{start: entryStart, keyEnd: keyEnd, end: len(c.out)})
		start, col, lend, ok := c.peekLine()
		if !ok || col < indent {
			break
		}
		if col > indent {
			return false
		}
		p, end = start+col, lend
	}
	c.out = append(c.out, '}')
	return c.sortEntries(first)
}

// key writes the JSON string of the block mapping key at p and returns
// the position after its ':'. The key must be on this line, followed by
// ':' and a space or the end of the line, and be a string to go-yaml.
func (c *yamlToJSON) key(p, end int) (afterColon int, ok bool) {
	src := c.src
	var keyEnd int // after the key's text or closing quote
	switch src[p] {
	case '"', '\'':
		if keyEnd, _, ok = c.quoted(p, end, quotedKey); !ok {
			return 0, false
		}
		for keyEnd < end && src[keyEnd] == ' ' {
			keyEnd++
		}
		if keyEnd == end || src[keyEnd] != ':' {
			return 0, false
		}
	default:
		if !plainMayStart(src, p, end, false) || src[p] == '-' || src[p] == '?' || src[p] == ':' {
			return 0, false
		}
		i := p
		for ; i < end; i++ {
			if src[i] == ':' && (i+1 == end || src[i+1] == ' ') {
				break
			}
			if src[i] == '#' && src[i-1] == ' ' {
				return 0, false // a comment before any ':': not a key
			}
		}
		if i == end {
			return 0, false
		}
		keyEnd = i
		text := trimTrailingSpaces(src[p:i])
		if !c.plainKey(text) {
			return 0, false
		}
	}
	if keyEnd-p > maxSimpleKey {
		return 0, false
	}
	colon := keyEnd
	if colon+1 < end && src[colon+1] != ' ' {
		return 0, false
	}
	return colon + 1, true
}

// plainKey writes a plain key that go-yaml reads as a string. A key it
// reads as a number, boolean or null becomes a string in sigs.k8s.io/yaml
// only after a conversion the fast path does not repeat; "<<" merges.
func (c *yamlToJSON) plainKey(text []byte) bool {
	if string(text) == "<<" {
		return false
	}
	var kind plainKind
	if c.out, kind = appendPlainScalar(c.out, text); kind != plainString {
		return false
	}
	for _, b := range text {
		if jsonEscapes(b) {
			return false // see sortEntries: a key's JSON is its text
		}
	}
	return true
}

// blockValue converts what follows a mapping key's ':' (or a sequence
// entry's '-') at p on the line ending at end, and consumes the line and
// any block node below it. indent is the column of the key (or '-');
// inMapping says a sequence at that very column may be the value (YAML's
// indentless sequence: "key:\n- a").
func (c *yamlToJSON) blockValue(p, end, indent int, inMapping bool) bool {
	src := c.src
	for p < end && src[p] == ' ' {
		p++
	}
	if p == end || (src[p] == '#' && src[p-1] == ' ') {
		c.pos = nextLine(src, end)
		start, col, lend, ok := c.peekLine()
		switch {
		case ok && col > indent:
			return c.blockNode(start, col, indent)
		case ok && col == indent && inMapping && isSequenceEntry(src, start+col, lend):
			return c.sequence(col)
		}
		c.out = append(c.out, "null"...)
		return true
	}
	var after int
	var ok bool
	switch src[p] {
	case '|', '>':
		return c.blockScalar(p, end, indent)
	case '{', '[':
		c.depth++
		after, ok = c.flowCollection(p, end)
		c.depth--
	case '"', '\'':
		// A quoted scalar may go on over lines: it ends on the line of
		// its closing quote.
		after, end, ok = c.quoted(p, end, quotedValue)
	default:
		return c.plainValue(p, end, indent)
	}
	if !ok {
		return false
	}
	for after < end && src[after] == ' ' {
		after++
	}
	if after < end && !(src[after] == '#' && src[after-1] == ' ') {
		return false
	}
	c.pos = nextLine(src, end)
	return true
}

// blockScalar converts the literal (|) or folded (>) block scalar whose
// header is at p on the line ending at end, and consumes its lines. parent
// is the indentation of the node that holds it (the column of the key or
// of the '-'): content lines must be deeper. It follows go-yaml's scanner
// step by step: the indentation is the deepest of the leading empty lines
// and the first content line unless the header gives it; a line indented
// further keeps its extra spaces (and, folded, its line break); empty
// lines are line breaks; the chomping indicator decides the final breaks.
func (c *yamlToJSON) blockScalar(p, end, parent int) bool {
	src := c.src
	literal := src[p] == '|'
	chomp, increment := 0, 0 // chomp: -1 strip, 0 clip, +1 keep
	q := p + 1
	for range 2 { // the two indicators, in either order
		switch {
		case q == end:
		case (src[q] == '+' || src[q] == '-') && chomp == 0:
			chomp = 1
			if src[q] == '-' {
				chomp = -1
			}
			q++
		case src[q] >= '1' && src[q] <= '9' && increment == 0:
			increment = int(src[q] - '0')
			q++
		}
	}
	q = skipSpaces(src, q, end)
	if q < end && !(src[q] == '#' && src[q-1] == ' ') {
		return false // "|0", "|x", "|#c": left to the full parser
	}
	indent := 0
	if increment > 0 {
		indent = parent + increment
	}

	pos := nextLine(src, end)
	// emptyLines counts the line breaks of empty lines not yet written.
	// scanEmptyLines consumes empty lines up to the next content line and
	// returns the column where that line's content starts (spaces up to
	// the indentation, once known, are indentation; beyond it, content).
	emptyLines, maxIndent := 0, 0
	scanEmptyLines := func() (col int, atEOF bool) {
		for {
			if pos >= len(src) {
				return 0, true
			}
			lend := lineEnd(src, pos)
			col = 0
			for pos+col < lend && src[pos+col] == ' ' && (indent == 0 || col < indent) {
				col++
			}
			maxIndent = max(maxIndent, col)
			if pos+col < lend {
				return col, false
			}
			if lend == len(src) {
				return col, true // spaces up to the end: no line break
			}
			emptyLines++
			pos = lend + 1
		}
	}
	col, atEOF := scanEmptyLines()
	if indent == 0 {
		indent = max(maxIndent, parent+1, 1)
	}

	text := c.scratch[:0]
	leadingBreak, leadingBlank := false, false
	for col == indent && !atEOF {
		at := pos + col
		lend := lineEnd(src, pos)
		trailingBlank := src[at] == ' '
		if !literal && !leadingBlank && !trailingBlank && leadingBreak {
			if emptyLines == 0 {
				text = append(text, ' ') // folded: a line break between two lines is a space
			}
		} else if leadingBreak {
			text = append(text, '\n')
		}
		for ; emptyLines > 0; emptyLines-- {
			text = append(text, '\n')
		}
		leadingBlank = trailingBlank
		text = append(text, src[at:lend]...)
		leadingBreak = lend < len(src)
		pos = nextLine(src, lend)
		col, atEOF = scanEmptyLines()
	}
	if chomp != -1 && leadingBreak {
		text = append(text, '\n')
	}
	if chomp == 1 {
		for ; emptyLines > 0; emptyLines-- {
			text = append(text, '\n')
		}
	}
	c.scratch = text
	c.out = appendJSONString(c.out, text)
	c.pos = pos
	return true
}

// plainValue writes the block plain scalar at p and consumes its lines.
// It goes on over the lines below that are deeper than parent (the
// column of the key or the '-'), as kubectl writes a long string with
// spaces: go-yaml folds each line break into a space, and empty lines
// between into line breaks. A comment ends it.
func (c *yamlToJSON) plainValue(p, end, parent int) bool {
	src := c.src
	if !plainMayStart(src, p, end, false) {
		return false
	}
	line, comment, ok := plainLine(src, p, end)
	if !ok {
		return false
	}
	pos := nextLine(src, end)
	text, copied := line, false // the first line's text stays in place until a second line comes
	for !comment {
		empty := 0
		next, col := pos, 0
		for next < len(src) {
			lend := lineEnd(src, next)
			for col = 0; next+col < lend && src[next+col] == ' '; col++ {
			}
			if next+col < lend || lend == len(src) {
				break
			}
			empty++
			next = lend + 1
		}
		if next >= len(src) || col <= parent || next+col == len(src) || src[next+col] == '#' {
			break
		}
		lend := lineEnd(src, next)
		if line, comment, ok = plainLine(src, next+col, lend); !ok {
			return false
		}
		if !copied {
			text, copied = append(c.scratch[:0], text...), true
		}
		if empty == 0 {
			text = append(text, ' ')
		}
		for ; empty > 0; empty-- {
			text = append(text, '\n')
		}
		text = append(text, line...)
		pos = nextLine(src, lend)
	}
	if copied {
		c.scratch = text
	}
	var kind plainKind
	c.out, kind = appendPlainScalar(c.out, text)
	c.pos = pos
	return kind != plainUnsupported
}

// plainLine returns the text of a plain scalar on the line from p to end,
// without trailing spaces, and whether a comment ends it. ": " makes it
// fail: go-yaml takes that for a mapping where none may be.
func plainLine(src []byte, p, end int) (text []byte, comment, ok bool) {
	i := p
	for ; i < end; i++ {
		if src[i] == ':' && (i+1 == end || src[i+1] == ' ') {
			return nil, false, false
		}
		if src[i] == '#' && i > p && src[i-1] == ' ' {
			comment = true
			break
		}
	}
	return trimTrailingSpaces(src[p:i]), comment, true
}

// plainMayStart applies go-yaml's rule for the first character of a plain
// scalar: no indicator, except '-' (and in block context '?' and ':')
// before a character that is not a space.
func plainMayStart(src []byte, p, end int, flow bool) bool {
	nextIsText := p+1 < end && src[p+1] != ' '
	switch src[p] {
	case '-':
		return nextIsText
	case '?', ':':
		return nextIsText && !flow
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	}
	return true
}

func trimTrailingSpaces(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// sequence converts a block sequence whose '-' stand at column indent,
// starting at the next content line.
func (c *yamlToJSON) sequence(indent int) bool {
	if !c.enter() {
		return false
	}
	defer func() { c.depth-- }()
	c.out = append(c.out, '[')
	for n := 0; ; n++ {
		start, col, end, ok := c.peekLine()
		if !ok || col < indent {
			break
		}
		p := start + col
		if col > indent {
			return false
		}
		if !isSequenceEntry(c.src, p, end) {
			break // the enclosing mapping's next key, or an error it will see
		}
		if n > 0 {
			c.out = append(c.out, ',')
		}
		q := p + 1
		for q < end && c.src[q] == ' ' {
			q++
		}
		switch {
		case q < end && isSequenceEntry(c.src, q, end):
			return false // "- - a": a sequence in a sequence on one line
		case q < end && c.startsKey(q, end):
			if !c.mapping(q-start, q, end) {
				return false
			}
		default:
			if !c.blockValue(p+1, end, indent, false) {
				return false
			}
		}
	}
	c.out = append(c.out, ']')
	return true
}

// startsKey reports whether the content at p looks like "key: ...", so
// that a sequence entry holds a mapping. key itself decides whether the
// key is one the fast path takes.
func (c *yamlToJSON) startsKey(p, end int) bool {
	src := c.src
	switch src[p] {
	case '"', '\'':
		quote := src[p]
		for i := p + 1; i < end; i++ {
			if src[i] == '\\' && quote == '"' {
				i++
				continue
			}
			if src[i] == quote {
				if quote == '\'' && i+1 < end && src[i+1] == '\'' {
					i++
					continue
				}
				for i++; i < end && src[i] == ' '; i++ {
				}
				return i < end && src[i] == ':'
			}
		}
		return false
	case '{', '[':
		return false
	}
	for i := p; i < end; i++ {
		if src[i] == ':' && (i+1 == end || src[i+1] == ' ') {
			return true
		}
		if src[i] == '#' && i > p && src[i-1] == ' ' {
			return false
		}
	}
	return false
}

// flowCollection converts a flow mapping or sequence that starts at p and
// closes on the same line; it returns the position after the closer.
func (c *yamlToJSON) flowCollection(p, end int) (int, bool) {
	if c.depth > maxFastDepth {
		return 0, false
	}
	src := c.src
	closer := byte(']')
	if src[p] == '{' {
		closer = '}'
	}
	first := len(c.entries)
	c.out = append(c.out, src[p])
	p = skipSpaces(src, p+1, end)
	if p < end && src[p] == closer {
		c.out = append(c.out, closer)
		return p + 1, true
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		var ok bool
		if closer == '}' {
			entryStart := len(c.out)
			if p, ok = c.flowKey(p, end); !ok {
				return 0, false
			}
			keyEnd := len(c.out)
			c.out = append(c.out, ':')
			if p, ok = c.flowNode(skipSpaces(src, p, end), end); !ok {
				return 0, false
			}
			c.entries = append(c.entries, mappingEntry{start: entryStart, keyEnd: keyEnd, end: len(c.out)})
		} else if p, ok = c.flowNode(p, end); !ok {
			return 0, false
		}
		p = skipSpaces(src, p, end)
		if p == end {
			return 0, false // continues on the next line
		}
		if src[p] == closer {
			p++
			break
		}
		if src[p] != ',' {
			return 0, false
		}
		p = skipSpaces(src, p+1, end)
		if p == end || src[p] == closer {
			return 0, false // a trailing comma, or a line break after one
		}
	}
	if closer == '}' {
		c.out = append(c.out, '}')
		return p, c.sortEntries(first)
	}
	c.out = append(c.out, ']')
	return p, true
}

func skipSpaces(src []byte, p, end int) int {
	for p < end && src[p] == ' ' {
		p++
	}
	return p
}

// flowKey writes the key of a flow mapping entry at p and returns the
// position after its ':'.
func (c *yamlToJSON) flowKey(p, end int) (int, bool) {
	src := c.src
	start := p
	if p == end {
		return 0, false
	}
	switch src[p] {
	case '"', '\'':
		after, _, ok := c.quoted(p, end, quotedKey)
		if !ok {
			return 0, false
		}
		p = skipSpaces(src, after, end)
		// After a quoted key go-yaml takes ':' as the value indicator
		// even without a space behind it ({"a":1}).
		if p == end || src[p] != ':' || p-start > maxSimpleKey {
			return 0, false
		}
		return p + 1, true
	}
	if !plainMayStart(src, p, end, true) {
		return 0, false
	}
	i := p
	for ; i < end; i++ {
		ch := src[i]
		if ch == ':' {
			if i+1 < end && src[i+1] == ' ' {
				break
			}
			return 0, false // "a:b" is one scalar to go-yaml: a key without a value
		}
		if isFlowIndicator(ch) || (ch == '#' && src[i-1] == ' ') {
			return 0, false
		}
	}
	if i == end || i-start > maxSimpleKey || !c.plainKey(trimTrailingSpaces(src[p:i])) {
		return 0, false
	}
	return i + 1, true
}

func isFlowIndicator(ch byte) bool {
	switch ch {
	case ',', '?', '[', ']', '{', '}':
		return true
	}
	return false
}

// flowNode writes the flow value at p: a collection, a quoted scalar or a
// plain scalar that ends at a flow indicator.
func (c *yamlToJSON) flowNode(p, end int) (int, bool) {
	src := c.src
	if p == end {
		return 0, false
	}
	switch src[p] {
	case '{', '[':
		c.depth++
		defer func() { c.depth-- }()
		return c.flowCollection(p, end)
	case '"', '\'':
		after, _, ok := c.quoted(p, end, quotedFlow)
		return after, ok
	}
	if !plainMayStart(src, p, end, true) {
		return 0, false
	}
	i := p
	for ; i < end; i++ {
		ch := src[i]
		if ch == ',' || ch == ']' || ch == '}' {
			break
		}
		// A ':' here (a key in a sequence, or "a:b"), '?', an opening
		// bracket or a comment: left to the full parser.
		if ch == ':' || ch == '?' || ch == '[' || ch == '{' || (ch == '#' && src[i-1] == ' ') {
			return 0, false
		}
	}
	text := trimTrailingSpaces(src[p:i])
	var kind plainKind
	c.out, kind = appendPlainScalar(c.out, text)
	return i, kind != plainUnsupported
}

// quotedUse says where a quoted scalar stands: a key must be on one line
// and need no escaping in JSON (see sortEntries); a flow collection must
// be on one line; a block value may go on over lines.
type quotedUse uint8

const (
	quotedKey quotedUse = iota
	quotedFlow
	quotedValue
)

// quoted writes the single- or double-quoted scalar at p, on the line
// that ends at end, and returns the position after the closing quote and
// the end of its line. Over several lines, as go-yaml's scanner does, it
// drops the spaces around each line break and folds the break into a
// space, or into line breaks where empty lines follow; in double quotes a
// backslash before the break joins the lines without a space.
func (c *yamlToJSON) quoted(p, end int, use quotedUse) (after, closingLineEnd int, ok bool) {
	src := c.src
	quote := src[p]
	asKey := use == quotedKey
	c.out = append(c.out, '"')
	kept := len(c.out) // the output up to the last character that is not a space
	for i := p + 1; ; {
		if i == end {
			// The scalar goes on to the next line.
			if use != quotedValue || end == len(src) {
				return 0, 0, false
			}
			c.out = c.out[:kept]
			var empty int
			i, end, empty = skipLineBreaks(src, end+1)
			if i == len(src) {
				return 0, 0, false
			}
			if empty == 0 {
				c.out = append(c.out, ' ')
			}
			for ; empty > 0; empty-- {
				c.out = append(c.out, `\n`...)
			}
			kept = len(c.out)
			continue
		}
		ch := src[i]
		switch {
		case ch == quote && quote == '\'' && i+1 < end && src[i+1] == '\'':
			if asKey {
				return 0, 0, false
			}
			c.out = append(c.out, '\'')
			i += 2
		case ch == quote:
			c.out = append(c.out, '"')
			return i + 1, end, true
		case ch == '\\' && quote == '"' && i+1 == end:
			// An escaped line break: the lines join without a space.
			if use != quotedValue || end == len(src) {
				return 0, 0, false
			}
			var empty int
			i, end, empty = skipLineBreaks(src, end+1)
			if i == len(src) {
				return 0, 0, false
			}
			for ; empty > 0; empty-- {
				c.out = append(c.out, `\n`...)
			}
		case ch == '\\' && quote == '"':
			if asKey {
				return 0, 0, false
			}
			r, n, ok := yamlEscape(src[i+1 : end])
			if !ok {
				return 0, 0, false
			}
			c.out = appendJSONRune(c.out, r)
			i += 1 + n
		case asKey && (ch == '"' || ch == '\\' || ch == '<' || ch == '>' || ch == '&'):
			return 0, 0, false
		case jsonEscapes(ch):
			c.out = appendJSONRune(c.out, rune(ch))
			i++
		default:
			// Copy the run of characters that JSON takes as they are.
			j := i + 1
			for j < end && src[j] != quote && src[j] != '\\' && !jsonEscapes(src[j]) {
				j++
			}
			c.out = append(c.out, src[i:j]...)
			if text := trimTrailingSpaces(src[i:j]); len(text) > 0 {
				kept = len(c.out) - (j - i - len(text))
			}
			i = j
			continue
		}
		kept = len(c.out) // after an escape or a quote: not a space
	}
}

// skipLineBreaks skips, from the start of a line, the spaces that begin
// it and the empty lines among them, and returns where the text goes on,
// the end of that line, and how many empty lines it skipped.
func skipLineBreaks(src []byte, pos int) (at, end, empty int) {
	for pos < len(src) {
		end = lineEnd(src, pos)
		at = skipSpaces(src, pos, end)
		if at < end || end == len(src) {
			return at, end, empty
		}
		empty++
		pos = end + 1
	}
	return len(src), len(src), empty
}

// yamlSimpleEscapes are go-yaml's one-character escapes in double
// quotes ("\/" is none of them).
var yamlSimpleEscapes = map[byte]rune{
	'0': 0, 'a': '\a', 'b': '\b', 't': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r', 'e': 0x1b,
	' ': ' ', '"': '"', '\'': '\'', '\\': '\\', 'N': 0x85, '_': 0xa0, 'L': 0x2028, 'P': 0x2029,
}

// yamlHexEscapeDigits are the hexadecimal digits of \x, \u and \U.
var yamlHexEscapeDigits = map[byte]int{'x': 2, 'u': 4, 'U': 8}

// yamlEscape reads the escape after a backslash in a double-quoted scalar
// as go-yaml does, and how many bytes it took.
func yamlEscape(b []byte) (r rune, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false // an escaped line break
	}
	if r, ok := yamlSimpleEscapes[b[0]]; ok {
		return r, 1, true
	}
	digits := yamlHexEscapeDigits[b[0]]
	if digits == 0 {
		return 0, 0, false
	}
	if len(b) < 1+digits {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(string(b[1:1+digits]), 16, 32)
	if err != nil || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff {
		return 0, 0, false
	}
	return rune(v), 1 + digits, true
}

// sortEntries puts the entries of the mapping just closed (from first on)
// in key order, as json.Marshal writes a map, and drops them from the
// stack. Keys are compared by their JSON text, which is their YAML text:
// a key that JSON would escape does not reach here. Equal keys (YAML
// calls them duplicates) are left to the full parser, which warns.
func (c *yamlToJSON) sortEntries(first int) bool {
	entries := c.entries[first:]
	defer func() { c.entries = c.entries[:first] }()
	key := func(e mappingEntry) []byte { return c.out[e.start+1 : e.keyEnd-1] }
	sorted := true
	for i := 1; i < len(entries); i++ {
		switch cmp := bytes.Compare(key(entries[i-1]), key(entries[i])); {
		case cmp == 0:
			return false
		case cmp > 0:
			sorted = false
		}
	}
	if sorted {
		return true
	}
	bodyStart, bodyEnd := entries[0].start, entries[len(entries)-1].end
	c.scratch = append(c.scratch[:0], c.out[bodyStart:bodyEnd]...)
	moved := slices.Clone(entries)
	for i := range moved {
		moved[i].start -= bodyStart
		moved[i].keyEnd -= bodyStart
		moved[i].end -= bodyStart
	}
	scratchKey := func(e mappingEntry) []byte { return c.scratch[e.start+1 : e.keyEnd-1] }
	slices.SortFunc(moved, func(a, b mappingEntry) int { return bytes.Compare(scratchKey(a), scratchKey(b)) })
	for i := 1; i < len(moved); i++ {
		if bytes.Equal(scratchKey(moved[i-1]), scratchKey(moved[i])) {
			return false
		}
	}
	w := bodyStart
	for i, e := range moved {
		if i > 0 {
			c.out[w] = ','
			w++
		}
		w += copy(c.out[w:], c.scratch[e.start:e.end])
	}
	return true
}

// plainKind is what go-yaml v2 makes of a plain scalar.
type plainKind uint8

const (
	plainString      plainKind = iota
	plainOther                 // null, a boolean or a number
	plainUnsupported           // NaN and infinities, which json.Marshal refuses
)

// appendPlainScalar writes the JSON value of a plain scalar as
// sigs.k8s.io/yaml gives it: go-yaml v2's YAML 1.1 resolution (y, yes, on
// and off are booleans; 0x1f, 0o17, 017 and 1_000 are integers), then
// json.Marshal's spelling of the value. Timestamps stay strings there.
func appendPlainScalar(out []byte, s []byte) ([]byte, plainKind) {
	switch string(s) {
	case "~", "null", "Null", "NULL":
		return append(out, "null"...), plainOther
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return append(out, "true"...), plainOther
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return append(out, "false"...), plainOther
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return out, plainUnsupported
	}
	switch {
	case s[0] == '.':
		if f, err := strconv.ParseFloat(string(s), 64); err == nil {
			return appendJSONFloat(out, f)
		}
	case s[0] == '+' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9'):
		if n, ok := appendYAMLNumber(out, s); ok {
			return n, plainOther
		}
	}
	return appendJSONString(out, s), plainString
}

// appendYAMLNumber follows go-yaml v2's order of attempts for a scalar
// that starts with a digit or a sign: an integer in Go syntax (underscores
// dropped), an unsigned one, a float of YAML's form, a binary integer.
func appendYAMLNumber(out []byte, s []byte) ([]byte, bool) {
	plain := string(s)
	if bytes.IndexByte(s, '_') >= 0 {
		plain = string(bytes.ReplaceAll(s, []byte("_"), nil))
	}
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return strconv.AppendInt(out, i, 10), true
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return strconv.AppendUint(out, u, 10), true
	}
	if yamlStyleFloat(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			out, _ = appendJSONFloat(out, f)
			return out, true
		}
	}
	if len(plain) > 2 && plain[:2] == "0b" {
		if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
			return strconv.AppendInt(out, i, 10), true
		}
		if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
			return strconv.AppendUint(out, u, 10), true
		}
	} else if len(plain) > 3 && plain[:3] == "-0b" {
		if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
			return strconv.AppendInt(out, i, 10), true
		}
	}
	return out, false
}

// yamlStyleFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?,
// go-yaml v2's test before it parses a float.
func yamlStyleFloat(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendJSONFloat writes f as json.Marshal does (1e+21, 0.000001, 1e-7).
// Floats are rare in manifests; the standard library spells them.
func appendJSONFloat(out []byte, f float64) ([]byte, plainKind) {
	js, err := json.Marshal(f)
	if err != nil {
		return out, plainUnsupported
	}
	return append(out, js...), plainOther
}

// jsonEscapes reports whether json.Marshal writes the ASCII byte b
// escaped: quotes, backslashes, control characters, and <, > and & (it
// escapes those for HTML by default).
func jsonEscapes(b byte) bool {
	return b < ' ' || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&'
}

// appendJSONString writes s (valid UTF-8) as a JSON string, escaped as
// json.Marshal escapes it, so that the output is byte for byte the full
// parser's.
func appendJSONString(out []byte, s []byte) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if !jsonEscapes(b) {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			out = appendJSONRune(out, rune(b))
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == 0x2028 || r == 0x2029 {
			out = append(out, s[start:i]...)
			out = appendJSONRune(out, r)
			start = i + size
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// appendJSONRune writes one character inside a JSON string, escaped the
// way json.Marshal escapes it when it must be.
func appendJSONRune(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch r {
	case '"', '\\':
		return append(out, '\\', byte(r))
	case '\b':
		return append(out, '\\', 'b')
	case '\f':
		return append(out, '\\', 'f')
	case '\n':
		return append(out, '\\', 'n')
	case '\r':
		return append(out, '\\', 'r')
	case '\t':
		return append(out, '\\', 't')
	case 0x2028, 0x2029:
		return append(out, '\\', 'u', '2', '0', '2', hex[r&0xf])
	}
	if r < ' ' || r == '<' || r == '>' || r == '&' {
		return append(out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	}
	return utf8.AppendRune(out, r)
}
