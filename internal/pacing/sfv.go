package pacing

// This file reads the structured-field lists and dictionaries (RFC 8941)
// of the RateLimit and RateLimit-Policy fields, as far as pacing needs: the
// name of each member, its integer value in a dictionary, and the integer
// parameters r, t, q and w. A value that is not a valid list (or
// dictionary) is rejected whole; an inner list counts as invalid, since no
// member of these fields is one. The work is linear in the value, which the
// caller bounds.

// maxFieldLen bounds the value of a rate-limit field that is read: a
// longer one is ignored. A server that means a quota sends a few dozen
// bytes.
const maxFieldLen = 1024

// An sfMember is a member of a list or dictionary, reduced to what pacing
// reads.
type sfMember struct {
	key    string // the dictionary key; "" in a list
	name   string // a token or the content of a string, unescaped only when it has no escapes
	num    int64  // the item when it is an integer (isNum)
	isNum  bool
	params sfParams
}

// sfParams holds the integer parameters pacing reads; has marks those
// given, with integer values.
type sfParams struct {
	r, t, q, w int64
	has        uint8
}

const (
	hasR uint8 = 1 << iota
	hasT
	hasQ
	hasW
)

// parseSFList calls f with each member of the list s, and reports false,
// having stopped, when s is not a valid list or f returns false.
func parseSFList(s string, f func(sfMember) bool) bool {
	return parseSF(s, false, f)
}

// parseSFDict does as parseSFList for a dictionary.
func parseSFDict(s string, f func(sfMember) bool) bool {
	return parseSF(s, true, f)
}

func parseSF(s string, dict bool, f func(sfMember) bool) bool {
	p := sfParser{s: s}
	p.skipSP()
	if p.done() {
		return false // an empty field is no field
	}
	for {
		var m sfMember
		if dict {
			k, ok := p.key()
			if !ok {
				return false
			}
			m.key = k
			if p.peek() == '=' {
				p.i++
				if !p.item(&m) {
					return false
				}
			}
		} else if !p.item(&m) {
			return false
		}
		if !p.params(&m.params) || !f(m) {
			return false
		}
		p.skipOWS()
		if p.done() {
			return true
		}
		if p.peek() != ',' {
			return false
		}
		p.i++
		p.skipOWS()
		if p.done() {
			return false // a trailing comma
		}
	}
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) skipSP() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// item reads a bare item into m: a token or string as its name, an
// integer as its number; decimals, byte sequences, booleans and dates are
// read and left aside. Inner lists and display strings are refused.
func (p *sfParser) item(m *sfMember) bool {
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		n, isInt, ok := p.number()
		m.num, m.isNum = n, isInt
		return ok
	case c == '"':
		return p.str(&m.name)
	case c == '*' || isAlpha(c):
		start := p.i
		p.i++
		for !p.done() && (isTchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		m.name = p.s[start:p.i]
		return true
	case c == ':':
		p.i++
		for !p.done() && p.s[p.i] != ':' {
			if !isBase64(p.s[p.i]) {
				return false
			}
			p.i++
		}
		if p.done() {
			return false
		}
		p.i++
		return true
	case c == '?':
		p.i++
		if c := p.peek(); c != '0' && c != '1' {
			return false
		}
		p.i++
		return true
	case c == '@':
		p.i++
		_, isInt, ok := p.number()
		return ok && isInt
	}
	return false
}

// number reads an integer (at most 15 digits) or a decimal (at most 12
// digits, a dot, 1 to 3 digits). It reports whether it read an integer.
func (p *sfParser) number() (n int64, isInt, ok bool) {
	neg := false
	if p.peek() == '-' {
		neg = true
		p.i++
	}
	start := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		if p.i-start == 15 {
			return 0, false, false
		}
		n = n*10 + int64(p.s[p.i]-'0') // at most 15 digits: no overflow
		p.i++
	}
	digits := p.i - start
	if digits == 0 {
		return 0, false, false
	}
	if p.peek() != '.' {
		if neg {
			n = -n
		}
		return n, true, true
	}
	if digits > 12 {
		return 0, false, false
	}
	p.i++
	frac := p.i
	for !p.done() && isDigit(p.s[p.i]) {
		p.i++
	}
	if f := p.i - frac; f < 1 || f > 3 {
		return 0, false, false
	}
	return 0, false, true
}

// str reads a string; name is set to its content when it has no escapes,
// and to "\\" otherwise, a name no policy has.
func (p *sfParser) str(name *string) bool {
	p.i++ // the opening quote
	start, escaped := p.i, false
	for !p.done() {
		switch c := p.s[p.i]; {
		case c == '\\':
			p.i++
			if c := p.peek(); c != '"' && c != '\\' {
				return false
			}
			escaped = true
		case c == '"':
			*name = p.s[start:p.i]
			if escaped {
				*name = "\\"
			}
			p.i++
			return true
		case c < 0x20 || c > 0x7e:
			return false
		}
		p.i++
	}
	return false
}

// key reads a key: a lower-case letter or '*', then lower-case letters,
// digits, '_', '-', '.' and '*'.
func (p *sfParser) key() (string, bool) {
	start := p.i
	if c := p.peek(); c != '*' && !('a' <= c && c <= 'z') {
		return "", false
	}
	p.i++
	for !p.done() {
		c := p.s[p.i]
		if !('a' <= c && c <= 'z' || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], true
}

// params reads the parameters after an item, keeping r, t, q and w when
// they are integers; a later value of a key replaces an earlier one, and
// one that is not an integer leaves the key unset.
func (p *sfParser) params(ps *sfParams) bool {
	for p.peek() == ';' {
		p.i++
		p.skipSP()
		k, ok := p.key()
		if !ok {
			return false
		}
		var v sfMember
		given := p.peek() == '='
		if given {
			p.i++
			if !p.item(&v) {
				return false
			}
		}
		var bit uint8
		var dst *int64
		switch k {
		case "r":
			bit, dst = hasR, &ps.r
		case "t":
			bit, dst = hasT, &ps.t
		case "q":
			bit, dst = hasQ, &ps.q
		case "w":
			bit, dst = hasW, &ps.w
		default:
			continue
		}
		if given && v.isNum {
			*dst = v.num
			ps.has |= bit
		} else {
			*dst = 0
			ps.has &^= bit
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isTchar(c byte) bool {
	switch {
	case isAlpha(c), isDigit(c):
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func isBase64(c byte) bool { return isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=' }
