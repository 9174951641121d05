package redisbudget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/throttle"
)

// The exchange script (exchange.lua) takes a process's counts as one
// string, a line per entry, and answers the fleet's sums as one string, a
// line per host:
//
//	batch:  <attempts> <accepted> <refused> <healed 1|0> <sent> <scheme>://<host>\n
//	reply:  <attempts> <accepted> <refused> <sent> <scheme>://<host>\n
//
// where sent is Counts.Sent in Unix milliseconds, 0 for the zero time. One
// string each way costs go-redis two values, whatever the hosts.

// maxCount is the most a count of one entry may be: the script holds at
// most this much per host and step, so that a window's sum of 20 steps stays
// exact in Lua's numbers (2^53).
const maxCount = 1 << 48

// maxSent is the latest Counts.Sent may be, in Unix milliseconds (some
// 285,000 years after 1970): the script's numbers hold it exactly.
const maxSent = 1 << 53

// appendBatch appends counts to dst in the script's batch format. It
// returns an error, and dst as it was, if an entry has a negative count or
// one above maxCount, a Sent that is neither zero nor after 1970 and up to
// maxSent, or a scheme or host that checkHost refuses.
func appendBatch(dst []byte, counts []throttle.Counts) ([]byte, error) {
	n := len(dst)
	for i, c := range counts {
		if err := checkCounts(c); err != nil {
			return dst[:n], fmt.Errorf("redisbudget: Exchange: counts[%d]: %w", i, err)
		}
		dst = strconv.AppendInt(dst, c.Attempts, 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, c.Accepted, 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, c.Refused, 10)
		if c.Healed {
			dst = append(dst, " 1 "...)
		} else {
			dst = append(dst, " 0 "...)
		}
		dst = strconv.AppendInt(dst, sentMilli(c.Sent), 10)
		dst = append(dst, ' ')
		dst = append(dst, c.Scheme...)
		dst = append(dst, "://"...)
		dst = append(dst, c.Host...)
		dst = append(dst, '\n')
	}
	return dst, nil
}

// checkCounts returns an error if c cannot be sent (see appendBatch).
func checkCounts(c throttle.Counts) error {
	for _, n := range [...]int64{c.Attempts, c.Accepted, c.Refused} {
		if n < 0 || n > maxCount {
			return fmt.Errorf("a count of %d, not in [0, 2^48]", n)
		}
	}
	if !c.Sent.IsZero() {
		if ms := c.Sent.UnixMilli(); ms < 1 || ms > maxSent {
			return fmt.Errorf("a Sent of %v, not after 1970 or past 2^53 ms", c.Sent)
		}
	}
	return checkHost(c.Scheme, c.Host)
}

// sentMilli returns t in Unix milliseconds, or 0 for the zero time.
func sentMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// sentTime returns the time of ms Unix milliseconds, or the zero time for
// 0.
func sentTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// checkHost returns an error if scheme or host is empty or has a byte that
// the script's formats, or an HTTP host, cannot hold: a control character,
// a space, or a colon in the scheme.
func checkHost(scheme, host string) error {
	switch {
	case scheme == "":
		return errors.New("empty scheme")
	case host == "":
		return errors.New("empty host")
	case strings.ContainsRune(scheme, ':') || !printable(scheme):
		return fmt.Errorf("scheme %q", scheme)
	case !printable(host):
		return fmt.Errorf("host %q", host)
	}
	return nil
}

// printable reports whether s has no ASCII control character or space.
func printable(s string) bool {
	for i := range len(s) {
		if b := s[i]; b <= ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

// parseSums parses the exchange script's reply: at most most lines, each
// "<attempts> <accepted> <refused> <sent> <scheme>://<host>\n" with counts
// and sent of decimal digits that fit an int64, a scheme and a host that checkHost
// accepts, no host twice. The strings of the counts returned share reply's
// memory.
func parseSums(reply string, most int) ([]throttle.Counts, error) {
	lines := strings.Count(reply, "\n")
	switch {
	case lines > most:
		return nil, fmt.Errorf("redisbudget: exchange reply of %d hosts, more than the %d kept", lines, most)
	case reply != "" && reply[len(reply)-1] != '\n':
		return nil, errors.New("redisbudget: exchange reply does not end a line")
	case lines == 0:
		return nil, nil
	}
	sums := make([]throttle.Counts, 0, lines)
	seen := make(map[string]struct{}, lines)
	for len(reply) > 0 {
		line, rest, _ := strings.Cut(reply, "\n")
		reply = rest
		var n [4]int64
		for i := range n {
			var word string
			word, line, _ = strings.Cut(line, " ")
			var err error
			if n[i], err = parseCount(word); err != nil {
				return nil, err
			}
		}
		scheme, host, ok := strings.Cut(line, "://")
		if !ok {
			return nil, fmt.Errorf("redisbudget: exchange reply names no host: %q", line)
		}
		if err := checkHost(scheme, host); err != nil {
			return nil, fmt.Errorf("redisbudget: exchange reply: %w", err)
		}
		if _, dup := seen[line]; dup {
			return nil, fmt.Errorf("redisbudget: exchange reply names %q twice", line)
		}
		seen[line] = struct{}{}
		sums = append(sums, throttle.Counts{Scheme: scheme, Host: host, Attempts: n[0], Accepted: n[1], Refused: n[2], Sent: sentTime(n[3])})
	}
	return sums, nil
}

// parseCount parses a count of the reply: decimal digits, no sign.
func parseCount(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("redisbudget: exchange reply has %q for a count", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisbudget: exchange reply has %q for a count", s)
	}
	return n, nil
}
