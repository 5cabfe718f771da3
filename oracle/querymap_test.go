package oracle

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestQueryMapsExamples: decode (q_len 1: klen = seq_len), MTP verification with 3 drafts (four
// tokens whose klen rises by one up to seq_len), an empty request, and two padding tokens.
func TestQueryMapsExamples(t *testing.T) {
	qsl := []int32{0, 1, 5, 5, 7}
	seq := []int32{10, 20, 3, 2}
	req, klen, err := BuildQueryMaps(qsl, seq, 9)
	if err != nil {
		t.Fatal(err)
	}
	wantReq := []int32{0, 1, 1, 1, 1, 3, 3, 4, 4}
	wantKlen := []int32{10, 17, 18, 19, 20, 1, 2, 0, 0}
	for i := range wantReq {
		if req[i] != wantReq[i] || klen[i] != wantKlen[i] {
			t.Fatalf("token %d: req %d klen %d, expected req %d klen %d", i, req[i], klen[i], wantReq[i], wantKlen[i])
		}
	}
	for _, c := range []struct {
		qsl, seq []int32
		n        int
		want     string
	}{
		{[]int32{0, 1}, []int32{1, 2}, 1, "query_start_loc has 2 entries, expected num_reqs+1 = 3"},
		{[]int32{1, 2}, []int32{1}, 2, "query_start_loc[0] = 1, expected 0"},
		{[]int32{0, 3, 2}, []int32{3, 3}, 3, "query_start_loc[2] = 2 < query_start_loc[1] = 3: expected non-decreasing"},
		{[]int32{0, 4}, []int32{9}, 3, "query_start_loc[1] = 4 exceeds num_tokens 3"},
		{[]int32{0, 4}, []int32{3}, 4, "request 0 has seq_len 3 < query length 4"},
		{[]int32{0}, nil, -1, "num_tokens -1: expected ≥ 0"},
	} {
		if _, _, err := BuildQueryMaps(c.qsl, c.seq, c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("qsl %v seq %v n %d: error %v, expected one containing %q", c.qsl, c.seq, c.n, err, c.want)
		}
	}
}

// TestPropQueryMaps checks the builder against the definition of docs/contract.md §4, token by token,
// on random valid metadata, and that breaking one precondition is refused.
func TestPropQueryMaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "num_reqs")
		qsl := []int32{0}
		seq := make([]int32, n)
		for r := 0; r < n; r++ {
			ql := int32(rapid.IntRange(0, 9).Draw(t, "q_len"))
			qsl = append(qsl, qsl[r]+ql)
			seq[r] = ql + int32(rapid.IntRange(0, 5000).Draw(t, "context"))
		}
		tokens := int(qsl[n]) + rapid.IntRange(0, 4).Draw(t, "padding")
		req, klen, err := BuildQueryMaps(qsl, seq, tokens)
		if err != nil {
			t.Fatal(err)
		}
		if len(req) != tokens || len(klen) != tokens {
			t.Fatalf("maps of %d and %d entries, expected %d", len(req), len(klen), tokens)
		}
		for i := 0; i < tokens; i++ {
			// req = #{j ≥ 1 : qsl[j] ≤ i} (searchsorted(qsl[1:], i, right=True)).
			r := 0
			for j := 1; j <= n; j++ {
				if int(qsl[j]) <= i {
					r++
				}
			}
			var want int32
			if r < n {
				want = seq[r] - (qsl[r+1] - qsl[r]) + (int32(i) - qsl[r]) + 1
				if want < 1 {
					t.Fatalf("token %d: definition gives klen %d < 1 on valid input", i, want)
				}
			}
			if req[i] != int32(r) || klen[i] != want {
				t.Fatalf("token %d: req %d klen %d, definition gives req %d klen %d (qsl %v seq %v)", i, req[i], klen[i], r, want, qsl, seq)
			}
		}
		// Break one precondition.
		if n > 0 {
			r := rapid.IntRange(0, n-1).Draw(t, "broken")
			if ql := qsl[r+1] - qsl[r]; ql > 0 {
				bad := append([]int32(nil), seq...)
				bad[r] = ql - 1
				if _, _, err := BuildQueryMaps(qsl, bad, tokens); err == nil {
					t.Fatalf("seq_len %d < q_len %d accepted", bad[r], ql)
				}
			}
			if _, _, err := BuildQueryMaps(qsl, seq, int(qsl[n])-1); qsl[n] > 0 && err == nil {
				t.Fatalf("num_tokens %d < qsl[last] %d accepted", qsl[n]-1, qsl[n])
			}
		}
	})
}
