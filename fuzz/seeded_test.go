package fuzz

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/octant-kv/octant/arch"
)

// seededDigest hashes the JSON of seeds 0..n−1 of op's seeded recipes.
func seededDigest(t *testing.T, op arch.Op, n int) string {
	h := sha256.New()
	for seed := 0; seed < n; seed++ {
		r, err := SeededRecipe(op, uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pinnedSeeded is the digest of seeds 0..31 of each op under CaseGenVersion. A change to a draw
// function changes what a certificate's seeds mean: bump CaseGenVersion and update these.
var pinnedSeeded = map[arch.Op]string{
	arch.Store:   "6a7f6d373c5cab9dcf6b0068e97599b8337e70f0fc46bdbe1f84d36fa3e43ee5",
	arch.Rotate:  "48e81de626b8de54d73b2b88359b1bf6f6848f59d5197104bc84e920dca08324",
	arch.Decode:  "93da542a8dccf2cd28d351ce499c3d51c7a400ab7878782133cfbcb025cf7c4f",
	arch.Reduce:  "c2dc16ef559db900c8be2820288647a14f34ce78d8f95eb81fcda700c11e7b5e",
	arch.Prefill: "e2f9e625ff4c3d121f1fbadbddade0a55a352f67c66ff4c107d59378f85f3ae6",
}

// TestSeededRecipesPinned: the conformance battery's cases come from the seeded generator alone:
// derived twice they are the same bytes, and they are the bytes pinned for CaseGenVersion (rapid
// is not involved, so a rapid upgrade cannot change them; a change to the draw functions fails
// here until the version is bumped).
func TestSeededRecipesPinned(t *testing.T) {
	for _, op := range arch.Ops() {
		a, b := seededDigest(t, op, 32), seededDigest(t, op, 32)
		if a != b {
			t.Errorf("%s: two derivations of seeds 0..31 differ (%s, %s): the seeded generator is not deterministic", op, a, b)
		}
		if a != pinnedSeeded[op] {
			t.Errorf("%s: seeds 0..31 hash to %s, pinned %s for %s: a draw function changed what the seeds produce; bump CaseGenVersion and update pinnedSeeded",
				op, a, pinnedSeeded[op], CaseGenVersion)
		}
	}
	if _, err := SeededRecipe("attend", 1); err == nil {
		t.Error("SeededRecipe of an unknown op: expected an error")
	}
}
