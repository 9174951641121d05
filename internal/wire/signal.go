package wire

const (
	SignalNone Signal = iota
	SignalRetry
	SignalFinal
)

type Signal uint8

func ParseSignal(values []string) Signal {
	if len(values) == 0 {
		return SignalNone
	}
	switch v := TrimOWS(values[0]); {
	case EqualFoldASCII(v, "true"):
		return SignalRetry
	case EqualFoldASCII(v, "false"):
		return SignalFinal
	}
	return SignalNone
}

// EqualFoldASCII reports whether s is word, a lower-case ASCII word, with
// its ASCII letters in any case, as HTTP compares tokens. strings.EqualFold
// would also take other letters that fold to ASCII ones: "falſe", with a
// long s, for "false".
func EqualFoldASCII(s, word string) bool {
	if len(s) != len(word) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}
