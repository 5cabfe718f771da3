package kernels

import (
	"strconv"
	"strings"
	"testing"
)

// TestBufferSet: Verify names a modified input (first differing byte, both values, the count)
// and an overwritten canary; CheckInputs and CheckCanaries each report only their own kind; an
// in-out buffer may change; the first allocation error sticks; MinLen pads empty buffers. The same
// with the buffers in an arena (one upload, one read back), and with an arena too small for one of
// them (that one allocated on its own).
func TestBufferSet(t *testing.T) {
	for _, arena := range []int{0, 4096, 1280} {
		t.Run("arena"+strconv.Itoa(arena), func(t *testing.T) { testBufferSet(t, arena) })
	}
}

func testBufferSet(t *testing.T, arena int) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := &BufferSet{Dev: d, Arena: arena}
	defer s.Free()
	in := s.Input("key", []byte{0, 1, 2, 3, 4, 5})
	io := s.InOut("cache", []byte{9, 9, 9})
	out := s.Output("out", 4, 0xFF)
	empty := s.Output("empty", 0, 0xFF)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if empty.Len != 0 {
		t.Errorf("empty output has %d bytes without MinLen, expected 0", empty.Len)
	}
	inArena := 0
	for _, b := range s.list {
		if b.off >= 0 {
			inArena++
			if b.Ptr%256 != 0 {
				t.Errorf("arena buffer %s at %#x: not 256-byte aligned", b.Name, b.Ptr)
			}
		}
	}
	if want := map[int]int{0: 0, 4096: 4, 1280: 2}[arena]; inArena != want {
		t.Errorf("arena %d: %d buffers in it, expected %d", arena, inArena, want)
	}
	if err := s.Verify("nothing"); err != nil {
		t.Fatalf("Verify of untouched buffers: %v", err)
	}
	got, err := out.ReadAll()
	if err != nil || string(got) != "\xff\xff\xff\xff" {
		t.Errorf("out.ReadAll() = %x, %v; expected the fill ffffffff", got, err)
	}

	// What a kernel might do: write an input, an in-out buffer, and a byte past an output.
	if err := in.Write(3, []byte{7, 7}); err != nil {
		t.Fatal(err)
	}
	if err := io.Write(0, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := out.writeRaw(CanaryBytes+out.Len, []byte{0}); err != nil {
		t.Fatal(err)
	}
	const modified = "after op: input key was modified: byte 3 is 0x07, uploaded 0x03 (2 bytes differ)"
	const canary = "after op: kernels: out: canary after the buffer overwritten at byte offset 4"
	err = s.Verify("op")
	if err == nil || !strings.Contains(err.Error(), modified) || !strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "cache") {
		t.Errorf("Verify after the writes: %v\nexpected %q and %q, nothing about the in-out cache", err, modified, canary)
	}
	if got, err := in.ReadAll(); err != nil || string(got) != "\x00\x01\x02\x07\x07\x05" {
		t.Errorf("in.ReadAll() after the writes and Verify = %x, %v; expected 00010207 0705 (not the bytes of an earlier read)", got, err)
	}
	if err := s.CheckInputs("op"); err == nil || err.Error() != modified {
		t.Errorf("CheckInputs: %v, expected %q", err, modified)
	}
	if err := s.CheckCanaries("op"); err == nil || !strings.HasPrefix(err.Error(), canary) {
		t.Errorf("CheckCanaries: %v, expected %q", err, canary)
	}

	// MinLen pads an empty buffer.
	s2 := &BufferSet{Dev: d, MinLen: 1, Arena: arena}
	defer s2.Free()
	if e := s2.Output("empty", 0, 0xFF); e.Len != 1 {
		t.Errorf("empty output with MinLen 1 has %d bytes", e.Len)
	}

	// The first error sticks; later buffers are placeholders outside the set.
	s3 := &BufferSet{Dev: d, Arena: arena}
	defer s3.Free()
	s3.Output("first", 1, 0)
	s3.Output("bad", -1, 0)
	later := s3.Input("later", []byte{1})
	if err := s3.Err(); err == nil || !strings.HasPrefix(err.Error(), "allocating bad (-1 bytes): ") {
		t.Errorf("Err after Alloc(-1): %v", err)
	}
	if later.Ptr != 0 || len(s3.list) != 1 || s3.Err() == nil {
		t.Errorf("a buffer after the error: Ptr %#x, %d buffers in the set; expected a placeholder and 1", later.Ptr, len(s3.list))
	}
}

// TestBufferSetLarge: buffers past imageBytes (written and read in parts, not as one image) keep
// every check: a modified input, canaries overwritten before and after, an output's fill; an empty
// input with MinLen verifies clean.
func TestBufferSetLarge(t *testing.T) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := &BufferSet{Dev: d, MinLen: 1}
	defer s.Free()
	n := imageBytes + 3
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	in := s.Input("big", data)
	out := s.Output("bigout", n, 0xAB)
	s.Input("none", nil)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify("nothing"); err != nil {
		t.Fatalf("Verify of untouched large buffers: %v", err)
	}
	if got, err := out.ReadAll(); err != nil || got[0] != 0xAB || got[n-1] != 0xAB {
		t.Fatalf("large output: %v, first and last bytes %#x %#x, expected the fill 0xab", err, got[0], got[n-1])
	}
	if err := in.Write(n-1, []byte{data[n-1] ^ 1}); err != nil {
		t.Fatal(err)
	}
	if err := in.writeRaw(5, []byte{0}); err != nil {
		t.Fatal(err)
	}
	if err := out.writeRaw(CanaryBytes+n+2, []byte{0}); err != nil {
		t.Fatal(err)
	}
	err = s.Verify("op")
	for _, want := range []string{
		"after op: input big was modified: byte " + strconv.Itoa(n-1),
		"after op: kernels: big: canary before the buffer overwritten at byte offset -251",
		"after op: kernels: bigout: canary after the buffer overwritten at byte offset " + strconv.Itoa(n+2),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Verify after the writes: %v\nexpected %q", err, want)
		}
	}
}
