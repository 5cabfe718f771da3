package oracle

import (
	"strings"
	"testing"
)

func TestDefaultSigns(t *testing.T) {
	want := []uint32{0x82C270EB, 0x9E0D4635, 0x41D23DB1, 0x68C675E6, 0xF687E132, 0xB5CABDC3, 0x1E0AC1A1, 0x74AFC721}
	s := DefaultSigns(256)
	got := s.Words()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sign word %d = %#08x, docs/format.md §2 says %#08x", i, got[i], want[i])
		}
	}
	rows := []string{
		"--+-+---++++---++-++++--+-+++++--+-+--+++--+++-+-+--+++++----++-",
		"-+++--+--+----+++-++-+---+++++-++--++----+-+---++--+++--+++-+--+",
		"+-++--++-++++------++++-+--+------++++---+----+-+-+-++---+-+--+-",
		"-++++-+--+++++--+-+-+++++----+++-++++-++---+++------+-+-++-+---+",
	}
	all := strings.Join(rows, "")
	for i, neg := range s {
		if neg != (all[i] == '-') {
			t.Errorf("sign %d: negated=%v, docs/format.md §2 shows %c", i, neg, all[i])
		}
	}
	// Prefix property and round trip through words.
	for i, neg := range DefaultSigns(40) {
		if neg != s[i] {
			t.Fatalf("signs(40) is not a prefix of signs(256) at %d", i)
		}
	}
	back, err := SignsFromInt32(s.Int32Words(), 256)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s {
		if back[i] != s[i] {
			t.Fatalf("word round trip differs at %d", i)
		}
	}
	if _, err := SignsFromWords([]uint32{1}, 64); err == nil {
		t.Error("SignsFromWords with too few words must fail")
	}
}

// TestMT19937 checks the generator against std::mt19937's documented 10000th output for seed 5489.
func TestMT19937(t *testing.T) {
	m := newMT19937(5489)
	var v uint32
	for range 10000 {
		v = m.next()
	}
	if v != 4123659995 {
		t.Errorf("mt19937(5489) 10000th output = %d, want 4123659995", v)
	}
}
