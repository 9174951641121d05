package eventstream

// IsEventStream reports whether a Content-Type header value names the
// media type text/event-stream, in any case, with or without parameters.
func IsEventStream(contentType string) bool {
	const name = "text/event-stream"
	s := trimSpace(contentType)
	if len(s) < len(name) {
		return false
	}
	for i := range len(name) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	s = trimSpace(s[len(name):])
	return s == "" || s[0] == ';'
}

// trimSpace returns s without its leading spaces and tabs.
func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}
