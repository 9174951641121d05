package scenario

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/retryhttp/retryhttp/bench/peers"
)

// MemoryChildFlag is the flag by which the scenarios command runs one
// library's memory measurement in a child process of its own.
const MemoryChildFlag = "memory-child"

// patternBody is a request body of a given length that generates its bytes
// as it is read: a stream, not a slice in memory, and without GetBody.
type patternBody struct{ left int64 }

func (b *patternBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), b.left))
	for i := range n {
		p[i] = 'a' + byte(i%26)
	}
	b.left -= int64(n)
	return n, nil
}

func (b *patternBody) Close() error { return nil }

// MemoryChild is the child process's side of the memory scenario: it PUTs a
// body of size bytes to url through the library called name and prints the
// status and its own peak resident set size (VmHWM).
func MemoryChild(w io.Writer, name, url string, size int64, c peers.Config) error {
	lib, ok := peers.ByName(name)
	if !ok {
		return fmt.Errorf("unknown library %q", name)
	}
	cl := client(lib, peers.NewBase(), c)
	req, err := http.NewRequest(http.MethodPut, url, nil)
	if err != nil {
		return err
	}
	req.Body, req.ContentLength = &patternBody{left: size}, size
	req.Header.Set(IDHeader, "m")
	status := 0
	resp, err := cl.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	hwm, herr := peakRSS()
	if herr != nil {
		return herr
	}
	_, perr := fmt.Fprintf(w, "status=%d peak_rss_kib=%d err=%q\n", status, hwm, errString(err))
	return perr
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// peakRSS reads the process's peak resident set size, in KiB, from
// /proc/self/status.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// Memory runs the memory scenario: for each library, a child process
// (self, run with -memory-child) PUTs a body of p.MemoryBody bytes without
// GetBody to a server of this process that reads it and answers 200.
func Memory(ctx context.Context, p Params, self string) []Table {
	t := Table{
		Title: fmt.Sprintf("memory: a %d MiB request body without GetBody", p.MemoryBody>>20),
		Note: "One PUT whose body is a generated stream (not a slice in memory, no GetBody), with its length " +
			"known, to a loopback server that reads it and answers 200. Each library runs in a child process " +
			"of its own; the table gives that process's peak resident set size (VmHWM), so the plain row " +
			"is the cost of the process and its transport alone.",
		Header: []string{"library", "peak RSS", "over plain", "status"},
	}
	srv := NewServer(func(w http.ResponseWriter, r *http.Request, attempt int) {
		_, _ = io.Copy(io.Discard, r.Body)
		OK(w, r, attempt)
	})
	defer srv.Close()
	var plain int64 = -1
	for _, lib := range peers.All() {
		rss, status, err := runMemoryChild(ctx, self, lib.Name, srv.URL+"/upload", p.MemoryBody)
		if err != nil {
			t.Add(lib.Name, "error: "+err.Error(), "", "")
			continue
		}
		if lib.Name == peers.Plain {
			plain = rss
		}
		over := "–"
		if plain >= 0 {
			over = mib(rss - plain)
		}
		t.Add(lib.Name, mib(rss), over, status)
	}
	return []Table{t}
}

func mib(kib int64) string {
	v := math.Round(float64(kib)/1024) + 0 // + 0 turns -0 into 0
	return strconv.FormatFloat(v, 'f', 0, 64) + " MiB"
}

func runMemoryChild(ctx context.Context, self, name, url string, size int64) (int64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-"+MemoryChildFlag, name, "-memory-url", url,
		"-memory-size", strconv.FormatInt(size, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, "", err
	}
	return parseMemoryLine(string(out))
}

// parseMemoryLine reads what MemoryChild printed: the peak RSS in KiB, and
// the status, or the error the request ended with.
func parseMemoryLine(line string) (int64, string, error) {
	var status int
	var rss int64
	var msg string
	if _, err := fmt.Sscanf(strings.TrimSpace(line), "status=%d peak_rss_kib=%d err=%q", &status, &rss, &msg); err != nil {
		return 0, "", fmt.Errorf("reading %q: %w", line, err)
	}
	if msg != "" {
		return rss, "error: " + msg, nil
	}
	return rss, strconv.Itoa(status), nil
}
