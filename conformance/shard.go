package conformance

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one part of a case-count run's case list (CaseList): the cases whose index k has
// k mod Count = Index (ShardCases). Its certificate is partial; Merge combines the Count shards.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Total is the length of the run's case list (every shard's), Ran the cases of it this shard
	// judged, and Static the static cases (isa/…, a certificate on a model) every shard runs
	// before them.
	Total  int `json:"total"`
	Ran    int `json:"ran"`
	Static int `json:"static,omitempty"`
}

// String is "i/n", as --shard takes it.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads --shard "i/n": 0 ≤ i < n.
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: expected i/n with 0 ≤ i < n (0/4 … 3/4)", v)
	}
	return Shard{Index: i, Count: n}, nil
}
