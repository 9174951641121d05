// Package nginx runs nginx on a loopback port for the interop tests: one
// process, no daemon, its configuration, files and temporary directories in
// a directory of the caller's, serving the static files of a folder in it
// and writing each request it served to an access log the caller reads as
// it is written.
package nginx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"
)

// ErrNotInstalled reports that no nginx binary was found.
var ErrNotInstalled = errors.New("nginx not found on PATH or in /usr/sbin (Debian and Ubuntu: apt-get install nginx-light)")

// startTimeout bounds how long Start waits for nginx to accept connections;
// stopTimeout how long Close waits for it to exit before killing it.
const (
	startTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
)

// A Server is an nginx process serving the files of Root over HTTP/1.1 at
// URL, on a loopback port.
type Server struct {
	URL  string // http://127.0.0.1:port
	Root string // the folder served: a file Root/a.bin is URL + "/a.bin"

	dir    string
	cmd    *exec.Cmd
	exit   chan struct{} // closed once cmd has been waited for
	stderr *bytes.Buffer // nginx's own messages, for errors; written until exit
	log    *accessLog
}

// A Request is one line of the access log: a request nginx finished, in
// the order it finished them.
type Request struct {
	Method     string
	URI        string
	Status     int
	Bytes      int64  // body bytes sent, those of a request cut short included
	Range      string // the request's Range header
	IfRange    string `json:"if_range"` // the request's If-Range header
	Connection int64  // nginx's serial number of the connection
}

// Start starts nginx on a free loopback port with its files in dir, which
// must exist and should be empty, and waits until it accepts connections.
// It serves dir/www, which Start creates. Close stops it.
func Start(dir string) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	log, err := openAccessLog(filepath.Join(dir, "access.log"))
	if err != nil {
		return nil, err
	}
	// A port free a moment ago may be taken before nginx binds it: try
	// another a few times.
	for range 5 {
		s, err := start(bin, dir, root, log)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) {
			log.close()
			return nil, err
		}
	}
	log.close()
	return nil, errors.New("nginx: no free port found")
}

// binary returns the path of nginx: on the PATH, or where Debian installs
// it, /usr/sbin, which is not on every user's PATH.
func binary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", ErrNotInstalled
}

var errAddrInUse = errors.New("nginx: address in use")

// config is nginx's configuration: one process in the foreground (master
// and workers would switch the workers to another user when run as root,
// who may not read the caller's directory), every path in the directory,
// and a JSON line per request in the access log.
var config = template.Must(template.New("nginx.conf").Parse(`daemon off;
master_process off;
worker_processes 1;
pid {{.Dir}}/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
	log_format interop escape=json '{"method":"$request_method","uri":"$uri","status":$status,"bytes":$body_bytes_sent,'
		'"range":"$http_range","if_range":"$http_if_range","connection":$connection}';
	access_log {{.Dir}}/access.log interop;
	client_body_temp_path {{.Dir}}/tmp/body;
	proxy_temp_path {{.Dir}}/tmp/proxy;
	fastcgi_temp_path {{.Dir}}/tmp/fastcgi;
	uwsgi_temp_path {{.Dir}}/tmp/uwsgi;
	scgi_temp_path {{.Dir}}/tmp/scgi;
	default_type application/octet-stream;
	sendfile on;
	keepalive_requests 10000;
	server {
		listen 127.0.0.1:{{.Port}};
		root {{.Root}};
	}
}
`))

func start(bin, dir, root string, log *accessLog) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var conf bytes.Buffer
	if err := config.Execute(&conf, map[string]any{"Dir": dir, "Root": root, "Port": port}); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	s := &Server{
		URL: "http://127.0.0.1:" + strconv.Itoa(port), Root: root,
		dir: dir, exit: make(chan struct{}), stderr: &bytes.Buffer{}, log: log,
	}
	s.cmd = exec.Command(bin, "-p", dir, "-c", confPath, "-e", "stderr")
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("nginx: starting %s: %w", bin, err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exit)
	}()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.exit:
			if strings.Contains(s.stderr.String(), "Address already in use") {
				return nil, errAddrInUse
			}
			return nil, fmt.Errorf("nginx exited at start: %s", strings.TrimSpace(s.stderr.String()))
		case <-deadline.C:
			s.stop()
			return nil, fmt.Errorf("nginx: not accepting connections after %v: %s", startTimeout, s.stderr.String())
		case <-tick.C:
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Requests waits until the access log holds at least n requests, at most
// timeout, and returns every request it holds. nginx writes a request's line
// once it has finished with it, which may be a moment after its client has
// read the last byte.
func (s *Server) Requests(n int, timeout time.Duration) ([]Request, error) {
	return s.log.wait(n, timeout)
}

// Close stops nginx (SIGTERM, then SIGKILL after a few seconds) and waits
// for it to exit, then closes the access log.
func (s *Server) Close() {
	s.stop()
	s.log.close()
}

func (s *Server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-s.exit:
	case <-t.C:
		s.cmd.Process.Kill()
		<-s.exit
	}
}

// An accessLog is a named pipe that nginx writes its access log to, read
// line by line as the lines arrive: no file to poll.
type accessLog struct {
	f    *os.File
	done chan struct{} // closed when the reader stops

	mu      sync.Mutex
	reqs    []Request
	err     error         // a line that did not parse, or the pipe's end
	changed chan struct{} // closed and replaced at each line
}

func openAccessLog(path string) (*accessLog, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("nginx: access log: %w", err)
	}
	// Opened for reading and writing, so that the open does not wait for
	// nginx, and reading never ends while nginx restarts.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	l := &accessLog{f: f, done: make(chan struct{}), changed: make(chan struct{})}
	go l.read()
	return l, nil
}

func (l *accessLog) read() {
	defer close(l.done)
	sc := bufio.NewScanner(l.f)
	for sc.Scan() {
		var r Request
		err := json.Unmarshal(sc.Bytes(), &r)
		l.mu.Lock()
		if err != nil {
			l.err = fmt.Errorf("nginx: access log line %q: %w", sc.Text(), err)
		} else {
			l.reqs = append(l.reqs, r)
		}
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

func (l *accessLog) wait(n int, timeout time.Duration) ([]Request, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		l.mu.Lock()
		reqs, err, changed := append([]Request(nil), l.reqs...), l.err, l.changed
		l.mu.Unlock()
		if err != nil || len(reqs) >= n {
			return reqs, err
		}
		select {
		case <-changed:
		case <-l.done:
			return reqs, errors.New("nginx: access log closed")
		case <-t.C:
			return reqs, fmt.Errorf("nginx: %d requests logged after %v, want %d", len(reqs), timeout, n)
		}
	}
}

func (l *accessLog) close() {
	l.f.Close()
	<-l.done
}
