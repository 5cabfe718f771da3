package main

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exitRecorder replaces exitNow for a test: the status it was called with, once.
type exitRecorder struct {
	mu     sync.Mutex
	status []int
	called chan struct{}
}

func recordExits(t *testing.T) *exitRecorder {
	r := &exitRecorder{called: make(chan struct{}, 4)}
	old := exitNow
	exitNow = func(code int) {
		r.mu.Lock()
		r.status = append(r.status, code)
		r.mu.Unlock()
		r.called <- struct{}{}
	}
	t.Cleanup(func() { exitNow = old })
	return r
}

// syncBuilder is a strings.Builder the watcher goroutine and the test share.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInterruptGrace: the first SIGTERM cancels the context and says so; a step that does not
// return within the grace ends the process with 130 and a message (what `timeout` relies on,
// since it sends one signal).
func TestInterruptGrace(t *testing.T) {
	rec := recordExits(t)
	var errs syncBuilder
	ctx, release := interruptContext(&errs, "bench", 50*time.Millisecond)
	defer release()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	select {
	case <-rec.called:
	case <-time.After(5 * time.Second):
		t.Fatalf("no exit after the grace; stderr:\n%s", errs.String())
	}
	if rec.status[0] != 130 || !strings.Contains(errs.String(), "stopping after the current step") ||
		!strings.Contains(errs.String(), "still running 50ms after the interrupt: exiting now") {
		t.Errorf("exit %v, stderr:\n%s\nexpected 130, the stop notice and the grace message", rec.status, errs.String())
	}
}

// TestInterruptTwice: a second signal exits at once, before the grace ends.
func TestInterruptTwice(t *testing.T) {
	rec := recordExits(t)
	var errs syncBuilder
	ctx, release := interruptContext(&errs, "conform", time.Hour)
	defer release()
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	<-ctx.Done()
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	select {
	case <-rec.called:
	case <-time.After(5 * time.Second):
		t.Fatalf("a second interrupt did not exit; stderr:\n%s", errs.String())
	}
	if rec.status[0] != 130 || !strings.Contains(errs.String(), "again: exiting now") {
		t.Errorf("exit %v, stderr:\n%s", rec.status, errs.String())
	}
}

// TestInterruptReleased: after release a finished command neither exits nor prints, and its
// context is done (the watch is over).
func TestInterruptReleased(t *testing.T) {
	rec := recordExits(t)
	var errs syncBuilder
	ctx, release := interruptContext(&errs, "bench", 10*time.Millisecond)
	release()
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond)
	if len(rec.called) != 0 || errs.String() != "" {
		t.Errorf("released watch: exits %v, stderr %q; expected nothing", rec.status, errs.String())
	}
}
