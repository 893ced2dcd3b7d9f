// Package gatehousebin builds the real gatehouse binary and runs it as a
// child process, for the end-to-end tests (e2e/chaos, e2e/scale): the
// process's JSON log is kept, its "gatehouse started" line tells where it
// listens, and it can be killed (SIGKILL) or stopped by a signal.
package gatehousebin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles cmd/gatehouse of the module in src ("" for the module the
// test runs in) into dir and returns the binary's path.
func Build(dir, src string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the binary: %w", err)
	}
	out := filepath.Join(dir, "gatehouse")
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/gatehouse-auth/gatehouse/cmd/gatehouse")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %q: %w\n%s", src, err, b)
	}
	return out, nil
}

// TestMain is the body of an end-to-end package's TestMain: when the
// environment variable gate is set, it builds this module's binary into a
// temporary directory and points *bin at it before the tests run (which
// skip themselves when gate is not set).
func TestMain(m *testing.M, gate string, bin *string) int {
	if os.Getenv(gate) != "" {
		dir, err := os.MkdirTemp("", "gatehouse-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if *bin, err = Build(dir, ""); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Environ is a child's environment: this process's without any GATEHOUSE_
// setting, plus settings.
func Environ(settings map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEHOUSE_") {
			env = append(env, kv)
		}
	}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	return env
}

// Proc is one run of the binary.
type Proc struct {
	Cmd   *exec.Cmd
	Ready chan struct{} // closed at its "gatehouse started" line
	Done  chan struct{} // closed once it has exited and its log is read

	// Spawned is when it was started; Base ("http://" and the address it
	// listens on) and Started are set before Ready is closed.
	Spawned, Started time.Time
	Base             string

	mu  sync.Mutex
	log strings.Builder
}

// Start runs bin. onStarted, when not nil, is called at the "gatehouse
// started" line, after Base and Started are set and before Ready is closed.
func Start(bin string, args, env []string, onStarted func(*Proc)) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, Ready: make(chan struct{}), Done: make(chan struct{}), Spawned: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gatehouse: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "gatehouse started" {
				p.Base, p.Started = "http://"+rec.Addr, time.Now()
				if onStarted != nil {
					onStarted(p)
				}
				close(p.Ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait() // only after the pipe is drained, as os/exec requires
		close(p.Done)
	}()
	return p, nil
}

// Log is what the process has logged so far.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// WaitReady waits until the process serves; the error tells why it did not.
func (p *Proc) WaitReady(timeout time.Duration) error {
	select {
	case <-p.Ready:
		return nil
	case <-p.Done:
		return fmt.Errorf("exited before starting (%v); log's end:\n%s", p.Cmd.ProcessState, Tail(p.Log(), 50))
	case <-time.After(timeout):
		return fmt.Errorf("did not start in %s; log's end:\n%s", timeout, Tail(p.Log(), 50))
	}
}

// Kill ends the process with SIGKILL (no shutdown code runs) and waits for
// it. The error says when it had ended by itself before.
func (p *Proc) Kill() error {
	if err := p.Cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.Done
	if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return nil
	}
	return fmt.Errorf("ended with %v before the SIGKILL; log's end:\n%s", p.Cmd.ProcessState, Tail(p.Log(), 50))
}

// Stop sends sig and waits up to timeout for a clean exit (status 0); past
// it the process is killed and the error says so.
func (p *Proc) Stop(sig os.Signal, timeout time.Duration) error {
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.Done:
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.Done
		return fmt.Errorf("did not stop within %s of %v; log's end:\n%s", timeout, sig, Tail(p.Log(), 50))
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("exited %d after %v; want 0; log's end:\n%s", code, sig, Tail(p.Log(), 50))
	}
	return nil
}

// Halt kills the process if it still runs (for test cleanup).
func (p *Proc) Halt() {
	select {
	case <-p.Done:
	default:
		_ = p.Cmd.Process.Kill()
		<-p.Done
	}
}

// Crashes returns the log lines that show the server crashing by itself (a
// panic or a fatal runtime error).
func (p *Proc) Crashes() []string {
	var out []string
	for _, line := range strings.Split(p.Log(), "\n") {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "panic") {
			out = append(out, line)
		}
	}
	return out
}

// Tail returns the last n lines of a log.
func Tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
