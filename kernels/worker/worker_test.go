package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/octant-kv/octant/kernels"
)

// The worker tests start python3 (PATH), standard library only: host mode, no torch.

// TestMain fails the run when a shared-memory file of this process is left behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if left, _ := filepath.Glob(filepath.Join(shmDir(), shmPattern())); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "shared-memory files left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

const (
	testArena = 4 << 20
	testShm   = 64 << 10 // small, so that copies past 64 KiB go in pieces
)

// openTest starts a worker with the test hooks, a 4 MiB arena and a 64 KiB window; set changes
// the options first. It is closed when the test ends.
func openTest(t *testing.T, set func(*Options)) *Backend {
	t.Helper()
	o := Options{ArenaBytes: testArena, ShmBytes: testShm, Timeout: 30 * time.Second, TempDir: t.TempDir(), testHooks: true}
	if set != nil {
		set(&o)
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// openDevice is a kernels.Device over a test worker.
func openDevice(t *testing.T) (*kernels.Device, *Backend) {
	t.Helper()
	b := openTest(t, nil)
	d, err := kernels.NewDevice(b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

// debug sends a test-hook message (main.py, Worker.debug); with reply, it waits for the answer.
func (b *Backend) debug(args map[string]any, reply bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	args["reply"] = reply
	payload, _ := json.Marshal(args)
	if !reply {
		return b.post("debug", "debug", msgDebug, payload)
	}
	_, err := b.call("debug", "debug", msgDebug, payload)
	return err
}

// pid is the running worker's process id.
func (b *Backend) pid(t *testing.T) int {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p == nil {
		t.Fatal("no worker running")
	}
	return b.p.cmd.Process.Pid
}

// counts are the requests sent so far without a reply and with one.
func (b *Backend) counts() (posted, waited int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.posted, b.waited
}

// wantError checks that err is a *kernels.Error of status st whose text says every one of words.
func wantError(t *testing.T, what string, err error, st kernels.Status, words ...string) {
	t.Helper()
	var ke *kernels.Error
	if !errors.As(err, &ke) || ke.Status != st {
		t.Errorf("%s: %v; expected a *kernels.Error with status %d", what, err, st)
		return
	}
	var missing []string
	for _, w := range words {
		if !strings.Contains(ke.Error(), w) {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s: %q\ndoes not say %q", what, err, missing)
	}
}

// gone waits up to 2 s for process pid to be gone (waited for), and reports whether it is.
func gone(pid int) bool {
	for range 200 {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// randomBytes are n bytes of a seeded generator.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestBufferSet: a Device over the worker runs a BufferSet's round trip (with and without its
// arena): inputs and fills reach the worker's memory, an output written through the backend (as
// an op would) comes back from ReadAll, and Verify reports a write past the output and a modified
// input.
func TestBufferSet(t *testing.T) {
	for _, arena := range []int{0, 4096} {
		t.Run("arena"+strconv.Itoa(arena), func(t *testing.T) {
			d, b := openDevice(t)
			s := &kernels.BufferSet{Dev: d, Arena: arena}
			defer s.Free()
			in := s.Input("query", []byte("input bytes"))
			out := s.Output("out", 6, 0xFF)
			must(t, s.Err())
			held := make([]byte, in.Len+out.Len)
			must(t, b.CopyD2H(held[:in.Len], in.Ptr), b.CopyD2H(held[in.Len:], out.Ptr))
			if string(held) != "input bytes\xff\xff\xff\xff\xff\xff" {
				t.Errorf("the worker holds %q, expected the input and the output's fill", held)
			}
			must(t, b.CopyH2D(out.Ptr, []byte("result")), s.Verify("op"))
			if got, err := out.ReadAll(); err != nil || string(got) != "result" {
				t.Errorf("ReadAll: %q, %v; expected \"result\"", got, err)
			}
			must(t, b.CopyH2D(out.Ptr+uintptr(out.Len), []byte{0}), b.CopyH2D(in.Ptr+1, []byte{'N'}))
			err := s.Verify("op")
			for _, want := range []string{"out: canary after the buffer overwritten at byte offset 6", "input query was modified: byte 1 is 0x4e"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Verify after the writes: %v\nexpected %q", err, want)
				}
			}
		})
	}
}

// must ends the test at the first non-nil error of errs.
func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCanaries: Buffer.CheckCanaries reports a write into either guard made through the
// backend's CopyH2D, for a small buffer and for one larger than the shared-memory window (its
// copies in pieces) and than the Device's one-image bound (its fill a memset).
func TestCanaries(t *testing.T) {
	d, b := openDevice(t)
	for _, n := range []int{100, 300 << 10} {
		buf, err := d.Alloc(n, 0x5A)
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.CheckCanaries("buf"); err != nil {
			t.Fatalf("n=%d, untouched: %v", n, err)
		}
		if body, err := buf.Bytes(); err != nil || bytes.Count(body, []byte{0x5A}) != n {
			t.Errorf("n=%d: the buffer does not hold its fill 0x5a alone (%v)", n, err)
		}
		if err := b.CopyH2D(buf.Ptr+uintptr(n)+3, []byte{0}); err != nil {
			t.Fatal(err)
		}
		if err := buf.CheckCanaries("buf"); err == nil || !strings.Contains(err.Error(), "canary after the buffer overwritten at byte offset "+strconv.Itoa(n+3)) {
			t.Errorf("n=%d, a write 3 bytes past the end: %v", n, err)
		}
		if err := b.CopyH2D(buf.Ptr-1, []byte{0}); err != nil {
			t.Fatal(err)
		}
		if err := buf.CheckCanaries("buf"); err == nil || !strings.Contains(err.Error(), "canary before the buffer overwritten at byte offset -1") {
			t.Errorf("n=%d, a write 1 byte before the start: %v", n, err)
		}
		buf.Free()
	}
}

// TestPool: Alloc and Free send the worker nothing; with the Device's pool a freed buffer's
// allocation is taken again by the next Alloc of its size class, refilled and re-guarded.
func TestPool(t *testing.T) {
	d, b := openDevice(t)
	posted, waited := b.counts()
	p, err := b.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(p); err != nil {
		t.Fatal(err)
	}
	if p2, p3 := b.counts(); p2 != posted || p3 != waited {
		t.Errorf("Alloc and Free sent %d requests and waited for %d; expected none", p2-posted, p3-waited)
	}
	wantError(t, "a second Free", b.Free(p), kernels.ErrInvalidArgument, "not an outstanding allocation")

	d.EnablePool(1 << 20)
	a, err := d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	ptr := a.Ptr
	a.Free()
	c, err := d.Alloc(6000, 0x22)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ptr != ptr {
		t.Errorf("Alloc after a pooled Free: %#x, expected the pooled %#x", c.Ptr, ptr)
	}
	if body, err := c.Bytes(); err != nil || bytes.Count(body, []byte{0x22}) != 6000 {
		t.Errorf("the reused allocation does not hold its new fill 0x22 alone (%v)", err)
	}
	if err := c.CheckCanaries("pooled"); err != nil {
		t.Error(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Device.Close with a pooled allocation: %v", err)
	}
}

// TestPipelined: h2d, d2d and memset wait for no reply; the Sync after them waits for all of
// them, and what they wrote comes back; an h2d that fails in the worker returns nil and its
// failure comes back from the next Sync, once.
func TestPipelined(t *testing.T) {
	b := openTest(t, nil)
	p, err := b.Alloc(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	want := randomBytes(64<<10, 1)
	posted, waited := b.counts()
	const piece = 1 << 10
	for i := 0; i < len(want); i += piece {
		if err := b.CopyH2D(p+uintptr(i), want[i:i+piece]); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Memset(p+100, 0xEE, 50); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyD2D(p+1000, p+2000, 500); err != nil {
		t.Fatal(err)
	}
	copy(want[100:150], bytes.Repeat([]byte{0xEE}, 50))
	copy(want[1000:1500], want[2000:2500])
	p2, w2 := b.counts()
	if p2-posted != len(want)/piece+2 || w2 != waited {
		t.Errorf("%d copies and memsets sent %d requests and waited for %d replies; expected %d and none",
			len(want)/piece+2, p2-posted, w2-waited, len(want)/piece+2)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if err := b.CopyD2H(got, p); err != nil || !bytes.Equal(got, want) {
		t.Errorf("after Sync, the worker's memory differs from what the pipelined requests wrote (%v)", err)
	}

	if err := b.debug(map[string]any{"op": "fail_h2d", "message": "an injected failure"}, true); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyH2D(p, []byte{1}); err != nil {
		t.Errorf("a pipelined h2d that fails in the worker returned %v, expected nil until the Sync", err)
	}
	wantError(t, "Sync after the failed h2d", b.Sync(), kernels.ErrRuntime, "h2d of 1 bytes to", "an injected failure")
	if err := b.Sync(); err != nil {
		t.Errorf("the next Sync: %v, expected nil (a failure is reported once)", err)
	}
}

// TestLargeCopies: copies of more than the shared-memory window go in pieces, both ways and
// inside the arena, and arrive whole.
func TestLargeCopies(t *testing.T) {
	d, b := openDevice(t)
	const n = 1<<20 + 123
	want := randomBytes(n, 2)
	src, err := d.AllocWith(want)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := d.Alloc(n, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyD2D(dst.Ptr, src.Ptr, n); err != nil {
		t.Fatal(err)
	}
	_, waited := b.counts()
	got, err := dst.Bytes()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a %d-byte buffer through a %d-byte window: what came back differs (%v)", n, testShm, err)
	}
	if _, w := b.counts(); w-waited != (n+testShm-1)/testShm {
		t.Errorf("d2h of %d bytes waited for %d replies, expected %d (one per window)", n, w-waited, (n+testShm-1)/testShm)
	}
	if err := dst.CheckCanaries("dst"); err != nil {
		t.Error(err)
	}
}

// TestArenaGuard: a write into either guard of the arena (a test hook writes there, as an op
// writing past the arena would) is an error of the next Sync naming where it landed; the guard
// is restored, so the Sync after it passes, and the worker is kept. Go itself refuses a copy
// that leaves an allocation.
func TestArenaGuard(t *testing.T) {
	b := openTest(t, nil)
	for _, c := range []struct {
		off  int
		want string
	}{
		{GuardBytes + testArena + 3, "the guard after it is overwritten at byte offset " + strconv.Itoa(testArena+3) + " of the arena (3 bytes past its end; address 0x100"},
		{GuardBytes - 1, "the guard before it is overwritten at byte offset -1 of the arena (1 bytes before its start"},
	} {
		if err := b.debug(map[string]any{"op": "flip", "offset": c.off}, true); err != nil {
			t.Fatal(err)
		}
		wantError(t, "Sync after a write into a guard", b.Sync(), kernels.ErrRuntime, "a write past the arena", c.want)
		if err := b.Sync(); err != nil {
			t.Errorf("the Sync after: %v, expected nil (the guard restored)", err)
		}
	}
	if b.Generation() != 1 {
		t.Errorf("generation %d after a write past the arena, expected the worker kept (1)", b.Generation())
	}
	p, err := b.Alloc(256)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, "CopyH2D past an allocation", b.CopyH2D(p+200, make([]byte, 100)), kernels.ErrInvalidArgument, "not inside an outstanding allocation")
	wantError(t, "CopyD2H from a freed allocation", func() error { b.Free(p); return b.CopyD2H(make([]byte, 1), p) }(),
		kernels.ErrInvalidArgument, "not inside an outstanding allocation")
}

// TestKilled: a worker killed between calls makes the next Sync an error naming the signal; the
// call after it runs on a new worker (generation 2), whose Allocs are of generation 2, and an
// address of generation 1 is refused by copies (its Free does nothing).
func TestKilled(t *testing.T) {
	d, b := openDevice(t)
	old, err := d.AllocWith([]byte("before the kill"))
	if err != nil {
		t.Fatal(err)
	}
	pid := b.pid(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantError(t, "Sync after SIGKILL", d.Sync(), kernels.ErrRuntime, "worker died (SIGKILL) during sync")
	if err := d.Sync(); err != nil {
		t.Fatalf("the Sync after the death: %v, expected a restarted worker", err)
	}
	if g := b.Generation(); g != 2 || b.pid(t) == pid {
		t.Errorf("generation %d, pid %d (was %d): expected generation 2 in a new process", g, b.pid(t), pid)
	}
	wantError(t, "CopyH2D to a generation-1 address", b.CopyH2D(old.Ptr, []byte{1}), kernels.ErrInvalidArgument,
		"belongs to worker generation 1, which ended", "generation 2")
	wantError(t, "Read of a generation-1 buffer", old.Read(0, make([]byte, 4)), kernels.ErrInvalidArgument, "generation 1")
	if err := old.Free(); err != nil {
		t.Errorf("Free of a generation-1 buffer: %v, expected nil (its allocation ended with its worker)", err)
	}
	buf, err := d.AllocWith([]byte("after the restart"))
	if err != nil {
		t.Fatal(err)
	}
	if buf.Ptr>>genShift != 2 {
		t.Errorf("a buffer after the restart at %#x, expected an address of generation 2", buf.Ptr)
	}
	if got, err := buf.Bytes(); err != nil || string(got) != "after the restart" {
		t.Errorf("the restarted worker's buffer: %q, %v", got, err)
	}
}

// TestHang: a worker that does not answer within the timeout is killed (its process group) and
// the error says it hung and what it was asked; the next call restarts it.
func TestHang(t *testing.T) {
	b := openTest(t, func(o *Options) { o.Timeout = time.Second })
	pid := b.pid(t)
	if err := b.debug(map[string]any{"op": "print", "stderr": "going to sleep\n"}, true); err != nil {
		t.Fatal(err)
	}
	if err := b.debug(map[string]any{"op": "sleep", "seconds": 60}, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := b.Sync()
	wantError(t, "Sync of a sleeping worker", err, kernels.ErrRuntime, "worker hung: no reply to sync in 1s; killed", "going to sleep")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the hang was reported after %v, expected about the 1 s timeout", el)
	}
	if !gone(pid) {
		t.Errorf("the hung worker (pid %d) is still there", pid)
	}
	if err := b.Sync(); err != nil || b.Generation() != 2 {
		t.Errorf("the Sync after the hang: %v at generation %d; expected nil at generation 2", err, b.Generation())
	}
}

// TestDeathOutput: the error of a worker's death carries the end of its stderr (faulthandler's
// report of the fault, and what it wrote before) and of its stdout.
func TestDeathOutput(t *testing.T) {
	b := openTest(t, nil)
	if err := b.debug(map[string]any{"op": "print", "stdout": "a line on stdout\n"}, true); err != nil {
		t.Fatal(err)
	}
	if err := b.debug(map[string]any{"op": "crash", "stderr": "about to fault: marker 7Q\n"}, false); err != nil {
		t.Fatal(err)
	}
	wantError(t, "Sync after a segfault", b.Sync(), kernels.ErrRuntime, "worker died (SIGSEGV) during sync",
		"--- worker stderr", "about to fault: marker 7Q", "Fatal Python error: Segmentation fault", "--- worker stdout", "a line on stdout")
	if err := b.Sync(); err != nil {
		t.Errorf("the Sync after the death: %v", err)
	}
}

// TestOpenErrors: what cannot start fails Open with an error saying what was expected, and leaves
// no sources behind; a good adapter is imported and named.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad_adapter.py")
	good := filepath.Join(dir, "good_adapter.py")
	empty := filepath.Join(dir, "empty_adapter.py")
	os.WriteFile(bad, []byte("import octant_no_such_module\n"), 0o600)
	os.WriteFile(good, []byte("DECLARATION = {\"ops\": [\"rotate\"]}\n\ndef rotate(a, mem):\n    pass\n"), 0o600)
	os.WriteFile(empty, []byte("DECLARATION = {}\n"), 0o600)
	for _, c := range []struct {
		name  string
		o     Options
		words []string
	}{
		{"no interpreter", Options{Python: "octant-no-such-python"}, []string{`"octant-no-such-python" cannot be started`, "expected a Python 3 interpreter"}},
		{"not python", Options{Python: "false"}, []string{"worker died (exit status 1) during hello"}},
		{"adapter import", Options{Adapter: bad}, []string{"adapter " + bad + " failed to import", "ModuleNotFoundError", "octant_no_such_module"}},
		{"adapter missing", Options{Adapter: bad + "-none"}, []string{"no such file; expected the path of a Python source file"}},
		{"declaration", Options{Adapter: empty}, []string{"DECLARATION: ops: expected a non-empty dict"}},
		{"options", Options{Adapter: good, AdapterOptions: map[string]string{"lib": "x"}}, []string{"options ['lib'] given, but the adapter has no setup(options)"}},
		{"torch", Options{Mode: "torch"}, []string{"torch mode needs the Python module torch", "No module named 'torch'"}},
		{"mode", Options{Mode: "gpu"}, []string{`mode "gpu": expected "host" or "torch"`}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			c.o.TempDir, c.o.ArenaBytes, c.o.ShmBytes = t.TempDir(), testArena, testShm
			b, err := Open(c.o)
			if err == nil {
				b.Close()
				if c.name == "torch" {
					t.Skip("torch is importable here: its absence cannot be tested")
				}
				t.Fatalf("Open succeeded, expected an error saying %q", c.words)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open: %v\nexpected it to say %q", err, w)
				}
			}
			if left, _ := os.ReadDir(c.o.TempDir); len(left) > 0 {
				t.Errorf("Open failed and left %s behind in its temporary directory", left[0].Name())
			}
		})
	}
	b := openTest(t, func(o *Options) { o.Adapter = good })
	if !strings.Contains(b.BuildInfo(), "adapter "+good) {
		t.Errorf("BuildInfo %q does not name the adapter", b.BuildInfo())
	}
}

// TestClose: Close ends the worker (it exits on bye), removes its sources, and every call after it
// is refused; a second Close does nothing.
func TestClose(t *testing.T) {
	b := openTest(t, nil)
	p := b.p
	dir := b.dir
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if how := p.how(); how != "exit status 0" {
		t.Errorf("the worker ended with %s, expected exit status 0 (bye)", how)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the sources directory %s is still there (%v)", dir, err)
	}
	wantError(t, "Sync after Close", b.Sync(), kernels.ErrInvalidArgument, "closed")
	_, err := b.Alloc(1)
	wantError(t, "Alloc after Close", err, kernels.ErrInvalidArgument, "closed")
	if err := b.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestNoAdapter: without an adapter every op is ErrUnsupported naming the worker and there are
// no tiers; debug messages are refused by a worker started without the test flag.
func TestNoAdapter(t *testing.T) {
	b := openTest(t, func(o *Options) { o.testHooks = false })
	d, err := kernels.NewDevice(b)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, "Decode", d.Decode(kernels.DecodeArgs{}), kernels.ErrUnsupported, "octave_decode", "the worker backend (host:), which has no adapter,")
	wantError(t, "Store", d.Store(kernels.StoreArgs{}), kernels.ErrUnsupported, "octave_cache_store")
	if tiers, err := d.Tiers(); len(tiers) != 0 || err != nil {
		t.Errorf("Tiers: %v, %v; expected none", tiers, err)
	}
	if n, err := d.WorkspaceSize(2, 4, 3, 0); n != 2*4*3*260*4 || err != nil {
		t.Errorf("WorkspaceSize(2, 4, 3, 0): %d, %v; expected %d (the ABI's formula, partial_stride 0 -> 260)", n, err, 2*4*3*260*4)
	}
	_, err = d.WorkspaceSize(2, 4, 3, 259)
	wantError(t, "WorkspaceSize with partial_stride 259", err, kernels.ErrWorkspace, "decode_workspace_size: partial_stride = 259 floats, expected a multiple of 4")
	_, err = d.WorkspaceSize(1<<20, 8, 1024, 1<<30)
	wantError(t, "WorkspaceSize past 64 bits", err, kernels.ErrWorkspace, "overflows 64 bits")
	wantError(t, "a debug message", b.debug(map[string]any{"op": "sleep", "seconds": 0}, true), kernels.ErrInvalidArgument, "--test-hooks")
}

// TestConcurrent: Alloc, copies and Free from several goroutines at once each see their own bytes.
func TestConcurrent(t *testing.T) {
	b := openTest(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				want := randomBytes(1000+g*7000+i*100, uint64(g*100+i))
				p, err := b.Alloc(uint64(len(want)))
				if err == nil {
					err = b.CopyH2D(p, want)
				}
				got := make([]byte, len(want))
				if err == nil {
					err = b.CopyD2H(got, p)
				}
				if err == nil && !bytes.Equal(got, want) {
					err = fmt.Errorf("goroutine %d, round %d: the bytes came back changed", g, i)
				}
				if err == nil {
					err = b.Free(p)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDeclarationDomainKeys: the declaration's domain keys (excludes, block_sizes,
// reduce_in_decode, an op's reports_tier) reach Go normalised, with their defaults where left out;
// a value of the wrong type fails Open naming the key. (Their names are Go's to check: harness,
// ParseDeclaration.)
func TestDeclarationDomainKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, decl string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("DECLARATION = "+decl+"\n\ndef rotate(a, mem):\n    pass\n\ndef decode(a, mem):\n    pass\n"), 0o600)
		return p
	}
	plain := write("plain.py", `{"ops": ["rotate"]}`)
	narrow := write("narrow.py", `{"ops": {"rotate": {}, "decode": {"tiers": {"portable": "dot4-int8q"}, "reports_tier": False}},
    "excludes": ["invalid-block-ids", "custom-signs"], "block_sizes": [32, 16, 32], "reduce_in_decode": True}`)
	for _, c := range []struct {
		adapter string
		want    map[string]any
	}{
		{plain, map[string]any{"excludes": []any{}, "block_sizes": "any", "reduce_in_decode": false, "rotate.reports_tier": true}},
		{narrow, map[string]any{"excludes": []any{"invalid-block-ids", "custom-signs"}, "block_sizes": []any{16.0, 32.0}, "reduce_in_decode": true,
			"rotate.reports_tier": true, "decode.reports_tier": false}},
	} {
		b := openTest(t, func(o *Options) { o.Adapter = c.adapter })
		var d map[string]any
		if err := json.Unmarshal(b.Declaration(), &d); err != nil {
			t.Fatalf("%s: the declaration %s: %v", c.adapter, b.Declaration(), err)
		}
		for k, want := range c.want {
			got := d[k]
			if op, key, ok := strings.Cut(k, "."); ok {
				got = d["ops"].(map[string]any)[op].(map[string]any)[key]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s = %v, expected %v", filepath.Base(c.adapter), k, got, want)
			}
		}
	}
	for _, c := range []struct{ decl, want string }{
		{`{"ops": ["rotate"], "excludes": "invalid-block-ids"}`, "excludes 'invalid-block-ids', expected a list of input-class names"},
		{`{"ops": ["rotate"], "block_sizes": [16, -1]}`, "block_sizes [16, -1], expected \"any\" or a non-empty list of positive ints"},
		{`{"ops": ["rotate"], "reduce_in_decode": 1}`, "reduce_in_decode 1, expected true or false"},
		{`{"ops": {"rotate": {"reports_tier": "no"}}}`, "rotate: reports_tier 'no', expected true or false"},
		{`{"ops": ["rotate"], "reduce_in_decode": True, "excludes": []}`, ""},
	} {
		o := Options{Adapter: write("bad.py", c.decl), TempDir: t.TempDir(), ArenaBytes: testArena, ShmBytes: testShm}
		b, err := Open(o)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v, expected it to open", c.decl, err)
			} else {
				b.Close()
			}
			continue
		}
		if err == nil {
			b.Close()
			t.Errorf("%s: opened, expected an error saying %q", c.decl, c.want)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nexpected it to say %q", c.decl, err, c.want)
		}
	}
}
