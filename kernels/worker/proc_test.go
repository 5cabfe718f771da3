package worker

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// TestTail: the ring keeps the last tailBytes of what was written, oldest first, and the report
// says how much it left out.
func TestTail(t *testing.T) {
	var r tail
	if r.report("stderr") != "" {
		t.Errorf("an empty tail reports %q, expected nothing", r.report("stderr"))
	}
	var all []byte
	for i := 0; len(all) < 3*tailBytes; i++ {
		line := []byte(strings.Repeat(string(rune('a'+i%26)), 1+i%5000) + "\n")
		all = append(all, line...)
		r.Write(line)
	}
	if got := r.String(); got != string(all[len(all)-tailBytes:]) {
		t.Errorf("the tail (%d bytes) is not the last %d bytes written", len(got), tailBytes)
	}
	if rep := r.report("stderr"); !strings.Contains(rep, "worker stderr (the last 65536 of ") {
		t.Errorf("report: %.80q, expected it to say it holds the last 65536 bytes", rep)
	}
}

// TestProtocolConstants: protocol.py numbers the messages and flags as proc.go does.
func TestProtocolConstants(t *testing.T) {
	src, err := pySources.ReadFile("py/octant_worker/protocol.py")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"PROTOCOL": protocolVersion, "HELLO": int(msgHello), "BYE": int(msgBye), "H2D": int(msgH2D),
		"D2H": int(msgD2H), "D2D": int(msgD2D), "MEMSET": int(msgMemset), "SYNC": int(msgSync), "FENCE": int(msgFence),
		"OP": int(msgOp), "WORKSPACE": int(msgWS), "TIERS": int(msgTiers), "DEBUG": int(msgDebug), "FLAG_ERROR": flagError, "INVALID_ARGUMENT": int(kernels.ErrInvalidArgument), "RUNTIME": int(kernels.ErrRuntime)}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_0-9]+) = (\d+)$`).FindAllStringSubmatch(string(src), -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("protocol.py: %s = %d (found: %v), expected %d", k, g, ok, v)
		}
	}
}

// TestSources: the worker's package is written whole, __init__.py included (an embedded
// directory leaves out names that begin with '_').
func TestSources(t *testing.T) {
	dir, err := writeSources(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"__init__.py", "main.py", "protocol.py", "arena.py"} {
		if _, err := os.Stat(filepath.Join(dir, "octant_worker", f)); err != nil {
			t.Errorf("octant_worker/%s: %v", f, err)
		}
	}
}
