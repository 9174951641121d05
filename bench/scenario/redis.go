package scenario

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// A Redis is a redis-server process on a loopback port, without
// persistence, its files in a directory of its own.
type Redis struct {
	Addr string // host:port
	cmd  *exec.Cmd
	exit chan struct{} // closed once the process has been waited for
}

// StartRedis starts redis-server (from the PATH) on a free loopback port
// with its files in dir, and waits up to 10 s for it to answer PING.
func StartRedis(dir string) (*Redis, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scenario: starting redis-server: %w", err)
	}
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, exit: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(r.exit)
	}()
	for deadline := time.Now().Add(10 * time.Second); r.ping() != nil; {
		select {
		case <-r.exit:
			return nil, fmt.Errorf("scenario: redis-server exited at start; see %s", filepath.Join(dir, "redis.log"))
		case <-time.After(10 * time.Millisecond): // polling a process starting, not synchronisation
		}
		if time.Now().After(deadline) {
			r.Kill()
			return nil, errors.New("scenario: redis-server did not answer within 10s")
		}
	}
	return r, nil
}

// ping sends PING over a new connection and reads the reply.
func (r *Redis) ping() error {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("scenario: PING answered %q", line)
	}
	return nil
}

// Kill kills the server at once, as a crash would, and waits for it to
// exit. It may be called more than once.
func (r *Redis) Kill() {
	select {
	case <-r.exit:
		return
	default:
	}
	r.cmd.Process.Kill()
	<-r.exit
}
