package main

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The first call of a kind runs alone; once it is done, calls of that kind run side by side,
// and other kinds never wait for it.
func TestKindGatesRunTheFirstCallOfAKindAlone(t *testing.T) {
	gates := newKindGates()
	var running, most atomic.Int32
	call := func() {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); gates.do("v1/ConfigMap", call) }()
	}
	wg.Wait()
	if got := most.Load(); got != 1 {
		t.Fatalf("first calls of one kind ran %d at once, want 1", got)
	}
	most.Store(0)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); gates.do("v1/ConfigMap", call) }()
	}
	wg.Wait()
	if got := most.Load(); got < 2 {
		t.Fatalf("calls of a warm kind ran %d at once, want them side by side", got)
	}
	// A kind whose first call is still running does not hold up another kind.
	release := make(chan struct{})
	started := make(chan struct{})
	go gates.do("v1/Service", func() { close(started); <-release })
	<-started
	done := make(chan struct{})
	go gates.do("apps/v1/Deployment", func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a new kind waited for another kind's first call")
	}
	close(release)
}
