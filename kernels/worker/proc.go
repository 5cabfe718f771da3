package worker

import (
	"bufio"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The worker's Python sources: the package octant_worker and the reference adapter
// (octant_adapters/capi.py), written to a private directory at Open.
// A directory pattern leaves out names that begin with '_', so __init__.py is named as well.
//
//go:embed py py/octant_worker/__init__.py
var pySources embed.FS

// The message types (protocol.py holds the same numbers; TestProtocolConstants compares them).
const (
	msgHello  uint16 = 1
	msgBye    uint16 = 2
	msgH2D    uint16 = 3
	msgD2H    uint16 = 4
	msgD2D    uint16 = 5
	msgMemset uint16 = 6
	msgSync   uint16 = 7
	msgFence  uint16 = 8
	msgOp     uint16 = 9
	msgWS     uint16 = 10
	msgTiers  uint16 = 11
	msgDebug  uint16 = 100
)

const (
	protocolVersion = 2
	headerBytes     = 16      // u32 length | u16 type | u16 flags | u64 seq
	flagError       = 1       // a reply's flag: the payload is an error (JSON)
	maxReply        = 4 << 20 // the largest reply payload read: replies are JSON or empty
	testHooksFlag   = "--test-hooks"
	tailBytes       = 64 << 10 // how much of the worker's stdout and stderr is kept, each
)

// writeSources writes the embedded Python package to a new private directory under parent.
func writeSources(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "octant-worker-")
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(pySources, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, strings.TrimPrefix(p, "py"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := pySources.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// bootstrap is the program of python -c: it puts the sources first on the path and runs the
// worker's main with the arguments after it (ADAPTER_SPEC, and the test flag).
func bootstrap(dir string) string {
	q, _ := json.Marshal(dir) // a JSON string is a Python string literal
	return "import sys; sys.dont_write_bytecode = True; sys.path.insert(0, " + string(q) +
		"); import octant_worker.main as m; sys.exit(m.main(sys.argv[1:]))"
}

// tail keeps the last tailBytes bytes written to it, in a ring.
type tail struct {
	mu    sync.Mutex
	buf   [tailBytes]byte
	next  int   // where the next byte goes
	total int64 // bytes written in all
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if len(p) > len(t.buf) {
		p = p[len(p)-len(t.buf):]
	}
	k := copy(t.buf[t.next:], p)
	copy(t.buf[:], p[k:])
	t.next = (t.next + len(p)) % len(t.buf)
	return n, nil
}

// String is the bytes kept, oldest first.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total < int64(len(t.buf)) {
		return string(t.buf[:t.total])
	}
	return string(t.buf[t.next:]) + string(t.buf[:t.next])
}

// report is the tail as a section of an error message, or "" when nothing was written.
func (t *tail) report(name string) string {
	s := t.String()
	if s == "" {
		return ""
	}
	t.mu.Lock()
	total := t.total
	t.mu.Unlock()
	what := fmt.Sprintf("%d bytes", total)
	if total > int64(len(s)) {
		what = fmt.Sprintf("the last %d of %d bytes", len(s), total)
	}
	return fmt.Sprintf("\n--- worker %s (%s) ---\n%s", name, what, strings.TrimRight(s, "\n"))
}

// proc is one worker process: its pipes, its shared-memory window and its output.
type proc struct {
	cmd     *exec.Cmd
	req     *os.File // fd 3 of the worker, our end: requests
	rep     *os.File // fd 4 of the worker, our end: replies
	rd      *bufio.Reader
	shm     []byte // the shared-memory window, mapped
	seq     uint64 // the last request's sequence number
	ring    uint64 // bytes of shm holding h2d data the worker may not have read yet
	timeout time.Duration
	exited  chan struct{} // closed when the process has been waited for
	state   *os.ProcessState
	stdout  *tail
	stderr  *tail
}

// shmDir is where the shared-memory file is made: /dev/shm where it exists (a tmpfs), else the
// system's temporary directory.
func shmDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// shmPattern is the name pattern of this process's shared-memory files.
func shmPattern() string { return fmt.Sprintf("octant-worker-%d-*", os.Getpid()) }

// spawn starts the worker: python -X faulthandler -c BOOTSTRAP SPEC [--test-hooks], fd 3 and 4
// the request and reply pipes, fd 5 the shared-memory file (unlinked here once the child holds
// it; both sides map it), in a process group of its own that the kernel kills with us.
func spawn(python, dir, spec string, hooks bool, shmBytes uint64, timeout time.Duration) (*proc, error) {
	p := &proc{timeout: timeout, exited: make(chan struct{}), stdout: &tail{}, stderr: &tail{}}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	p.req, p.rep, p.rd = reqW, repR, bufio.NewReaderSize(repR, 4096)
	f, err := os.CreateTemp(shmDir(), shmPattern())
	if err == nil {
		err = f.Truncate(int64(shmBytes))
		if err == nil {
			p.shm, err = syscall.Mmap(int(f.Fd()), 0, int(shmBytes), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		}
		if err != nil {
			os.Remove(f.Name())
			f.Close()
		}
	}
	if err != nil {
		reqR.Close()
		repW.Close()
		p.closeFiles()
		return nil, fmt.Errorf("the shared-memory window of %d bytes: %w", shmBytes, err)
	}

	args := []string{"-X", "faulthandler", "-c", bootstrap(dir), spec}
	if hooks {
		args = append(args, testHooksFlag)
	}
	cmd := exec.Command(python, args...)
	// os.Environ is handed on whole; unbuffered output keeps an adapter's last prints in the tail.
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd.ExtraFiles = []*os.File{reqR, repW, f}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	p.cmd = cmd
	// Pdeathsig follows the thread that forks: start from a goroutine of our own, never from a
	// caller's thread that LockOSThread may hold (and end with its goroutine).
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }()
	err = <-started
	reqR.Close()
	repW.Close()
	os.Remove(f.Name())
	f.Close()
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("the Python interpreter %q cannot be started (%v): expected a Python 3 interpreter (Options.Python: a path, or a name in PATH)", python, err)
	}
	go func() {
		cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// closeFiles closes our ends of the pipes and unmaps the window.
func (p *proc) closeFiles() {
	if p.req != nil {
		p.req.Close()
	}
	if p.rep != nil {
		p.rep.Close()
	}
	if p.shm != nil {
		syscall.Munmap(p.shm)
		p.shm = nil
	}
}

// kill kills the worker's process group (the worker and anything it started).
func (p *proc) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// end waits up to grace for the worker to exit, kills it if it has not, waits for it and
// releases its files.
func (p *proc) end(grace time.Duration) {
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
		<-p.exited
	}
	p.kill() // anything it started
	p.closeFiles()
}

// how says how the worker ended: its signal ("SIGSEGV") or exit status.
func (p *proc) how() string {
	if p.state == nil {
		return "not waited for"
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return signalName(ws.Signal())
	case ok && ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	}
	return p.state.String()
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP",
	syscall.SIGILL: "SIGILL", syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGSYS: "SIGSYS", syscall.SIGTERM: "SIGTERM",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
}

// signalName is the signal's C name, or its number and description.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d, %v", int(s), s)
}

// tails is the worker's stderr and stdout, as sections of an error message.
func (p *proc) tails() string { return p.stderr.report("stderr") + p.stdout.report("stdout") }

// send writes one request; the worker has timeout to make room in the pipe.
func (p *proc) send(typ uint16, payload []byte) error {
	p.seq++
	buf := make([]byte, headerBytes+len(payload))
	binary.LittleEndian.PutUint32(buf[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint16(buf[4:], typ)
	binary.LittleEndian.PutUint64(buf[8:], p.seq)
	copy(buf[headerBytes:], payload)
	p.req.SetWriteDeadline(time.Now().Add(p.timeout))
	_, err := p.req.Write(buf)
	return err
}

// errProtocol marks a reply that breaks the framing or the order of replies.
var errProtocol = errors.New("protocol")

// recv reads the reply to the last request, within timeout; isErr when the worker reports an
// error (its payload JSON).
func (p *proc) recv(typ uint16) (payload []byte, isErr bool, err error) {
	p.rep.SetReadDeadline(time.Now().Add(p.timeout))
	var h [headerBytes]byte
	if _, err := io.ReadFull(p.rd, h[:]); err != nil {
		return nil, false, err
	}
	n := binary.LittleEndian.Uint32(h[0:])
	rt, flags, seq := binary.LittleEndian.Uint16(h[4:]), binary.LittleEndian.Uint16(h[6:]), binary.LittleEndian.Uint64(h[8:])
	if n > maxReply || rt != typ || seq != p.seq {
		return nil, false, fmt.Errorf("%w: a reply of type %d to request %d with %d bytes, expected type %d to request %d (at most %d bytes)",
			errProtocol, rt, seq, n, typ, p.seq, maxReply)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(p.rd, payload); err != nil {
		return nil, false, err
	}
	p.ring = 0 // the worker has read every request before this one
	return payload, flags&flagError != 0, nil
}

// failure ends the worker after a request (what: "sync", "h2d") failed on the transport with
// cause, and says why, with the worker's output: it died (the pipe closed: its signal or exit
// status), it hung (no reply, or no room in the request pipe, within the timeout: killed), or it
// broke the protocol (killed).
func (p *proc) failure(what string, cause error, sending bool) string {
	var msg string
	switch {
	case errors.Is(cause, os.ErrDeadlineExceeded):
		p.kill()
		p.end(0)
		if sending {
			msg = fmt.Sprintf("worker hung: it read no request for %s during %s; killed", seconds(p.timeout), what)
		} else {
			msg = fmt.Sprintf("worker hung: no reply to %s in %s; killed", what, seconds(p.timeout))
		}
	case errors.Is(cause, io.EOF), errors.Is(cause, io.ErrUnexpectedEOF), errors.Is(cause, syscall.EPIPE):
		// The pipe closed: the worker has ended, or is ending (it closed fd 4 and will exit).
		p.end(2 * time.Second)
		msg = fmt.Sprintf("worker died (%s) during %s", p.how(), what)
	default:
		p.kill()
		p.end(0)
		msg = fmt.Sprintf("worker broke the protocol during %s (%v); killed", what, cause)
	}
	return msg + p.tails()
}

// seconds formats d as seconds ("2s", "1.5s", "120s").
func seconds(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }
