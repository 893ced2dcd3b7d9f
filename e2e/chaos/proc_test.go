package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one run of the gatehouse binary.
type proc struct {
	cmd   *exec.Cmd
	n     int // the how-many-th process of its cluster
	base  string
	ready chan struct{} // closed at its "gatehouse started" line
	done  chan struct{} // closed once it has exited and its log is read

	spawned, started time.Time

	mu     sync.Mutex
	log    strings.Builder
	killed bool
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// cluster runs one gatehouse process at a time on the same data and tells
// the workload where it listens. The port changes with every start; the
// issuer does not (GATEHOUSE_BASE_URL is fixed), so tokens and links from
// before a restart stay valid.
type cluster struct {
	t    *testing.T
	bin  string
	args []string
	env  []string

	mu      sync.Mutex
	cur     *proc     // the process that serves, nil while none does
	gen     int       // counts processes that reached "started"
	started time.Time // when the current process reached "started"
	changed chan struct{}
	all     []*proc
}

func newCluster(t *testing.T, bin string, args, env []string) *cluster {
	c := &cluster{t: t, bin: bin, args: args, env: env, changed: make(chan struct{})}
	t.Cleanup(c.shutdown)
	return c
}

// broadcast wakes everyone waiting for a change; c.mu is held.
func (c *cluster) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// spawn starts a process; it becomes current when it logs that it started,
// unless it was killed first.
func (c *cluster) spawn() *proc {
	c.t.Helper()
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env = c.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	p := &proc{cmd: cmd, n: len(c.all) + 1, ready: make(chan struct{}), done: make(chan struct{})}
	c.all = append(c.all, p)
	c.mu.Unlock()
	p.spawned = time.Now()
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start gatehouse: %v", err)
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
				c.mu.Lock()
				p.base, p.started = "http://"+rec.Addr, time.Now()
				if !p.killed {
					c.cur = p
					c.gen++
					c.started = time.Now()
					c.broadcast()
				}
				c.mu.Unlock()
				close(p.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait() // only after the pipe is drained, as os/exec requires
		c.mu.Lock()
		if c.cur == p {
			c.cur = nil
			c.broadcast()
		}
		c.mu.Unlock()
		close(p.done)
	}()
	return p
}

// start runs a process and waits until it serves.
func (c *cluster) start() *proc {
	c.t.Helper()
	p := c.spawn()
	select {
	case <-p.ready:
		return p
	case <-p.done:
		c.t.Fatalf("gatehouse process %d exited before starting (%v); log's end:\n%s", p.n, p.cmd.ProcessState, tail(p.logText(), 50))
	case <-time.After(90 * time.Second):
		c.t.Fatalf("gatehouse process %d did not start in 90s; log's end:\n%s", p.n, tail(p.logText(), 50))
	}
	return nil
}

// kill ends p with SIGKILL: no shutdown code runs. The workload stops
// sending to it before the signal, so every request that fails from now on
// was in flight.
func (c *cluster) kill(p *proc) {
	c.t.Helper()
	c.mu.Lock()
	p.killed = true
	if c.cur == p {
		c.cur = nil
		c.broadcast()
	}
	c.mu.Unlock()
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("kill process %d: %v", p.n, err)
	}
	<-p.done
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return
	}
	// It can only have exited by itself: a crash the test did not cause.
	c.t.Fatalf("process %d ended with %v before the SIGKILL; log's end:\n%s", p.n, p.cmd.ProcessState, tail(p.logText(), 50))
}

// stop ends p gracefully (SIGINT) and checks that it exits 0.
func (c *cluster) stop(p *proc) {
	c.t.Helper()
	c.mu.Lock()
	p.killed = true
	if c.cur == p {
		c.cur = nil
		c.broadcast()
	}
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		c.t.Fatalf("process %d did not stop within 60s of SIGINT; log's end:\n%s", p.n, tail(p.logText(), 50))
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		c.t.Errorf("process %d exited %d after SIGINT; want 0; log's end:\n%s", p.n, code, tail(p.logText(), 50))
	}
}

// current returns the serving process.
func (c *cluster) current() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// await returns the base URL of a serving process that started after
// generation after (-1: any), waiting for one.
func (c *cluster) await(ctx context.Context, after int) (base string, gen int, err error) {
	for {
		c.mu.Lock()
		cur, g, ch := c.cur, c.gen, c.changed
		c.mu.Unlock()
		if cur != nil && g > after {
			return cur.base, g, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
	}
}

// restartedSince tells whether a process started serving after t, so a
// kill may have cut off work begun before it.
func (c *cluster) restartedSince(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started.After(t)
}

// shutdown kills whatever still runs when the test ends.
func (c *cluster) shutdown() {
	c.mu.Lock()
	all := append([]*proc(nil), c.all...)
	c.mu.Unlock()
	for _, p := range all {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// crashes returns every log line of every process that shows the server
// crashing by itself (a panic or a fatal runtime error).
func (c *cluster) crashes() []string {
	c.mu.Lock()
	all := append([]*proc(nil), c.all...)
	c.mu.Unlock()
	var out []string
	for _, p := range all {
		for _, line := range strings.Split(p.logText(), "\n") {
			if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "panic") {
				out = append(out, fmt.Sprintf("process %d: %s", p.n, line))
			}
		}
	}
	return out
}
