package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// interruptGrace is how long a long command waits, after an interrupt, for its current step to
// end before it exits without results: a step such as the host-side judge of a large bench
// setup or one certificate case does not look at the context, and `timeout` sends one SIGTERM.
const interruptGrace = 10 * time.Second

// exitNow ends the process; a variable so that a test sees the status instead.
var exitNow = os.Exit

// interruptContext returns a context that the first SIGINT or SIGTERM cancels: the command
// stops at its next step boundary and reports what it has. A second signal, or the current step
// still running grace after the first, exits at once with status 130 and says why (nothing is
// written then). release ends the watch (deferred by the command).
func interruptContext(stderr io.Writer, cmd string, grace time.Duration) (ctx context.Context, release func()) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	quit := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case <-quit:
			return
		case s = <-sig:
		}
		fmt.Fprintf(stderr, "octant %s: %v: stopping after the current step (within %v; a second interrupt exits now)\n", cmd, s, grace)
		cancel()
		select {
		case <-quit:
		case s = <-sig:
			fmt.Fprintf(stderr, "octant %s: %v again: exiting now, nothing written\n", cmd, s)
			exitNow(130)
		case <-time.After(grace):
			fmt.Fprintf(stderr, "octant %s: the current step was still running %v after the interrupt: exiting now, nothing written\n", cmd, grace)
			exitNow(130)
		}
	}()
	return ctx, func() { signal.Stop(sig); close(quit); cancel() }
}
