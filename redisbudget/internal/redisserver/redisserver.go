// Package redisserver runs redis-server processes on loopback ports for the
// tests and the fleet command of redisbudget.
package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startTimeout bounds how long Start waits for redis-server to answer.
const startTimeout = 10 * time.Second

// ErrNotInstalled reports that no redis-server is on the PATH.
var ErrNotInstalled = errors.New("redis-server not found on PATH (Debian and Ubuntu: apt-get install redis-server)")

// A Server is a redis-server process listening on a loopback port, without
// persistence, its files in a directory of its own.
type Server struct {
	Addr string // host:port
	Port int
	dir  string
	args []string
	cmd  *exec.Cmd
	exit chan struct{} // closed once cmd has been waited for
}

// Start starts redis-server on a free loopback port with its files in dir,
// passing extra arguments (such as "--cluster-enabled", "yes"), and waits
// until it answers PING.
func Start(dir string, extra ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNotInstalled
	}
	port, err := freePort(containsCluster(extra))
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, dir: dir}
	s.args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}, extra...)
	return s, s.Restart()
}

func containsCluster(args []string) bool {
	for _, a := range args {
		if a == "--cluster-enabled" {
			return true
		}
	}
	return false
}

// freePort returns a loopback TCP port that was free a moment ago; with
// bus set, so was the port 10000 above it, which Redis Cluster uses.
func freePort(bus bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err == nil {
			l2.Close()
			return port, nil
		}
	}
	return 0, errors.New("redisserver: no free port pair found")
}

// Restart starts the server again on the same port after Kill.
func (s *Server) Restart() error {
	cmd := exec.Command("redis-server", s.args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: starting redis-server: %w", err)
	}
	s.cmd, s.exit = cmd, make(chan struct{})
	go func(exit chan struct{}) {
		cmd.Wait()
		close(exit)
	}(s.exit)
	deadline := time.Now().Add(startTimeout)
	for {
		if err := s.Ping(); err == nil {
			return nil
		}
		select {
		case <-s.exit:
			return fmt.Errorf("redisserver: redis-server exited at start; see %s", filepath.Join(s.dir, "redis.log"))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redisserver: redis-server did not answer within %v", startTimeout)
		}
	}
}

// Ping sends PING over a new connection and waits a second at most for
// PONG.
func (s *Server) Ping() error {
	_, err := s.Command("PING")
	return err
}

// Command sends one command, its words as an inline command, and returns the
// first line of the reply.
func (s *Server) Command(words ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(strings.Join(words, " ") + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", errors.New(line[1:])
	}
	return line, nil
}

// Kill kills the server at once, as a crash would, and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exit
	s.cmd = nil
}

// Pause stops the process (SIGSTOP): it keeps its connections but answers
// nothing, as a hung server does, until Resume.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Close resumes the server if it is paused, kills it and waits for it.
func (s *Server) Close() {
	if s.cmd != nil {
		s.Resume()
	}
	s.Kill()
}
