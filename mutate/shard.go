package mutate

import "fmt"

// Shard is part Index of Count of a run's mutant list: the entries whose index k in the list has
// k mod Count = Index (ShardOf). The rule depends only on the list, so any shard can be run again
// alone, and the Count shards together cover the list exactly once. A shard's kill matrix is
// partial; MergeMatrices combines the Count shards into the matrix of the unsharded run.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String is "i/n", as --shard takes it.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ShardOf is shard s of list: the entries at indices k with k mod s.Count = s.Index, in list order.
func ShardOf(list []Mutant, s Shard) []Mutant {
	var out []Mutant
	for k := s.Index; k < len(list); k += s.Count {
		out = append(out, list[k])
	}
	return out
}

// RunInfo is what makes a kill matrix comparable with another: the suite's commit, the mutant
// header's digest, the run's whole mutant list (every shard's, in order) and the flags that
// change verdicts. A shard's matrix also names its shard; a merged one names the shards that were
// not given (their rows are not run).
type RunInfo struct {
	Commit    string   `json:"commit"`
	Header    string   `json:"header"`
	HeaderSHA string   `json:"header_sha256"`
	List      []Mutant `json:"list"`
	Flags     Flags    `json:"flags"`
	Shard     *Shard   `json:"shard,omitempty"`
	// ShardsNotRun are the shards ("i/n") a merge was not given: their rows are not run.
	ShardsNotRun []string `json:"shards_not_run,omitempty"`
}

// Flags are the settings of a run that change its verdicts (Config's Kind, Budget, Full,
// Conventional and Through); the jobs, the binaries' and the output's directories do not.
type Flags struct {
	Kind         string `json:"kind"`
	Budget       string `json:"budget_per_mutant"`
	Full         bool   `json:"full"`
	Conventional bool   `json:"conventional"`
	Through      string `json:"through,omitempty"`
}

// VerdictFlags are cfg's flags that change verdicts.
func (cfg Config) VerdictFlags() Flags {
	return Flags{Kind: cfg.Kind, Budget: cfg.Budget.String(), Full: cfg.Full, Conventional: cfg.Conventional, Through: cfg.Through}
}
