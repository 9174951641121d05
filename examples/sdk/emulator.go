package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An emulator is an implementation of a cloud service that no one here
// wrote, installed from npm into a folder of emulators/ and run by node on
// a free loopback port for as long as the program or test needs it.
type emulator struct {
	URL string // http://127.0.0.1:port

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{}
}

// emulatorStartTimeout bounds how long an emulator may take to listen.
const emulatorStartTimeout = 30 * time.Second

// startEmulator runs emulators/<name>/start.js, which must print the port
// it listens on as its first line, and returns once it listens. The
// emulator stops when Close is called or this process exits, since it
// watches its standard input.
func startEmulator(name string) (*emulator, error) {
	dir := filepath.Join("emulators", name)
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		return nil, fmt.Errorf("%s is not installed: run `npm ci --prefix %s` (needs Node.js 20 or later): %w", name, dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("starting %s: Node.js is needed: %w", name, err)
	}
	e := &emulator{cmd: exec.Command(node, "start.js"), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	e.cmd.Dir = dir
	e.cmd.Stderr = e.stderr
	// A process the emulator started may hold its output open after it
	// exits: stop waiting for that output soon after.
	e.cmd.WaitDelay = 2 * time.Second
	if e.stdin, err = e.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		e.cmd.Wait()
		close(e.exited)
	}()

	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		port <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
	}()
	timer := time.NewTimer(emulatorStartTimeout)
	defer timer.Stop()
	select {
	case p := <-port:
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			e.Close()
			return nil, fmt.Errorf("starting %s: it printed %q, not its port: %s", name, p, e.stderr)
		}
		e.URL = "http://127.0.0.1:" + p
		return e, nil
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("starting %s: not listening after %v: %s", name, emulatorStartTimeout, e.stderr)
	}
}

// Close stops the emulator and waits for it to exit.
func (e *emulator) Close() error {
	e.stdin.Close()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case <-e.exited:
		return nil
	case <-timer.C:
		e.cmd.Process.Kill()
		<-e.exited
		return errors.New("emulator did not stop when asked; killed")
	}
}

// lockedBuffer keeps what an emulator writes to its standard error, for
// the error that says why it did not start.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
