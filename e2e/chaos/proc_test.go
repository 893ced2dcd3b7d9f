package chaos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
)

// proc is one run of the gatehouse binary in a cluster.
type proc struct {
	*gatehousebin.Proc
	n      int  // the how-many-th process of its cluster
	killed bool // c.mu
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
	c.mu.Lock()
	p := &proc{n: len(c.all) + 1}
	c.mu.Unlock()
	gp, err := gatehousebin.Start(c.bin, c.args, c.env, func(gp *gatehousebin.Proc) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !p.killed {
			c.cur = p
			c.gen++
			c.started = time.Now()
			c.broadcast()
		}
	})
	if err != nil {
		c.t.Fatal(err)
	}
	p.Proc = gp
	c.mu.Lock()
	c.all = append(c.all, p)
	c.mu.Unlock()
	go func() {
		<-gp.Done
		c.mu.Lock()
		if c.cur == p {
			c.cur = nil
			c.broadcast()
		}
		c.mu.Unlock()
	}()
	return p
}

// start runs a process and waits until it serves.
func (c *cluster) start() *proc {
	c.t.Helper()
	p := c.spawn()
	if err := p.WaitReady(90 * time.Second); err != nil {
		c.t.Fatalf("gatehouse process %d: %v", p.n, err)
	}
	return p
}

// retire marks p as no longer serving, before it is signalled.
func (c *cluster) retire(p *proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.killed = true
	if c.cur == p {
		c.cur = nil
		c.broadcast()
	}
}

// kill ends p with SIGKILL: no shutdown code runs. The workload stops
// sending to it before the signal, so every request that fails from now on
// was in flight.
func (c *cluster) kill(p *proc) {
	c.t.Helper()
	c.retire(p)
	if err := p.Kill(); err != nil {
		// It can only have exited by itself: a crash the test did not cause.
		c.t.Fatalf("process %d: %v", p.n, err)
	}
}

// stop ends p gracefully (SIGINT) and checks that it exits 0.
func (c *cluster) stop(p *proc) {
	c.t.Helper()
	c.retire(p)
	if err := p.Stop(os.Interrupt, 60*time.Second); err != nil {
		c.t.Errorf("process %d: %v", p.n, err)
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
			return cur.Base, g, nil
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
		p.Halt()
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
		for _, line := range p.Crashes() {
			out = append(out, fmt.Sprintf("process %d: %s", p.n, line))
		}
	}
	return out
}
