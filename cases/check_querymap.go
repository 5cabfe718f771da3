package cases

import (
	"encoding/json"
	"fmt"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// PropNameQueryMaps is the query-map property's name.
const PropNameQueryMaps = "querymap-builder"

// QueryMapCase is one call of the query-map builder: query_start_loc, seq_lens and the number of
// query tokens. Broken records how an invalid case was derived from a valid one.
type QueryMapCase struct {
	QSL       []int32 `json:"qsl"`
	SeqLens   []int32 `json:"seq_lens"`
	NumTokens int     `json:"num_tokens"`
	Broken    string  `json:"broken,omitempty"`
}

// Ways QueryMapCases breaks a valid batch.
var queryMapBreaks = []string{"qsl0-nonzero", "qsl-decreasing", "tokens-past-num-tokens", "seq-shorter-than-query", "qsl-length", "negative-num-tokens"}

// QueryMapCases draws builder inputs: valid batches (Batches with empty requests allowed and up
// to 300 padding rows), and in a quarter of the draws a batch broken in one of the ways no
// builder produces.
func QueryMapCases() *rapid.Generator[*QueryMapCase] {
	return rapid.Custom(func(t *rapid.T) *QueryMapCase {
		d := rapidDraw{t}
		b := drawBatch(d, BatchOptions{MaxReqs: 16, MaxPadding: 300, AllowEmpty: true})
		c := &QueryMapCase{QSL: b.QSL(), SeqLens: b.SeqLens(), NumTokens: b.NumTokens}
		if d.intn(0, 3, "broken") < 3 {
			return c
		}
		n := len(c.SeqLens)
		c.Broken = pick(d, queryMapBreaks, "break")
		switch c.Broken {
		case "qsl0-nonzero":
			c.QSL[0] = int32(pick(d, []int{1, -1, 7}, "qsl0"))
		case "qsl-decreasing":
			r := d.intn(0, n-1, "req")
			c.QSL[r+1] = c.QSL[r] - int32(d.intn(1, 5, "by"))
		case "tokens-past-num-tokens":
			c.NumTokens = int(c.QSL[n]) - d.intn(1, 3, "by")
		case "seq-shorter-than-query":
			r := d.intn(0, n-1, "req")
			q := c.QSL[r+1] - c.QSL[r]
			if q == 0 {
				c.QSL[r+1]++ // give it a token: shift every later offset
				for k := r + 2; k <= n; k++ {
					c.QSL[k]++
				}
				c.NumTokens++
				q = 1
			}
			c.SeqLens[r] = q - int32(d.intn(1, 3, "by"))
		case "qsl-length":
			if d.intn(0, 1, "drop") == 0 {
				c.QSL = c.QSL[:n]
			} else {
				c.QSL = append(c.QSL, c.QSL[n])
			}
		case "negative-num-tokens":
			c.NumTokens = -d.intn(1, 3, "by")
		}
		return c
	})
}

// prepareQueryMaps reads and checks a query-map case and returns the check that replays it.
func prepareQueryMaps(raw json.RawMessage) (func() error, error) {
	var c QueryMapCase
	if err := DecodeCase(raw, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return func() error { return CheckQueryMaps(&c) }, nil
}

// bruteQueryMaps is docs/contract.md §4 read literally, in int64. It returns why the input is one no
// builder produces, or the maps.
func bruteQueryMaps(qsl, seq []int32, numTokens int) (req, klen []int64, invalid string) {
	n := len(seq)
	switch {
	case len(qsl) != n+1:
		return nil, nil, fmt.Sprintf("query_start_loc has %d entries for %d requests", len(qsl), n)
	case numTokens < 0:
		return nil, nil, "negative num_tokens"
	case qsl[0] != 0:
		return nil, nil, "query_start_loc[0] ≠ 0"
	}
	for r := 0; r < n; r++ {
		if qsl[r+1] < qsl[r] {
			return nil, nil, "query_start_loc decreases"
		}
		if q := int64(qsl[r+1]) - int64(qsl[r]); q > 0 && int64(seq[r]) < q {
			return nil, nil, "a request's seq_len is below its query length"
		}
	}
	if int(qsl[n]) > numTokens {
		return nil, nil, "query_start_loc[num_reqs] > num_tokens"
	}
	req, klen = make([]int64, numTokens), make([]int64, numTokens)
	for t := 0; t < numTokens; t++ {
		found := -1
		for r := 0; r < n; r++ {
			if int(qsl[r]) <= t && t < int(qsl[r+1]) {
				if found >= 0 {
					panic("fuzz: overlapping request ranges in a valid query_start_loc")
				}
				found = r
			}
		}
		ss := 0 // searchsorted(qsl[1:], t, right=True)
		for j := 1; j <= n; j++ {
			if int(qsl[j]) <= t {
				ss++
			}
		}
		if found < 0 {
			req[t], klen[t] = int64(n), 0 // cudagraph padding
			if ss != n {
				panic("fuzz: a padding token before query_start_loc[num_reqs]")
			}
			continue
		}
		if ss != found {
			panic(fmt.Sprintf("fuzz: token %d: range scan says request %d, searchsorted %d", t, found, ss))
		}
		q := int64(qsl[found+1]) - int64(qsl[found])
		req[t] = int64(found)
		klen[t] = int64(seq[found]) - q + int64(t) - int64(qsl[found]) + 1
	}
	return req, klen, ""
}

// CheckQueryMaps is PropQueryMaps' check of one case.
func CheckQueryMaps(c *QueryMapCase) error {
	req, klen, invalid := bruteQueryMaps(c.QSL, c.SeqLens, c.NumTokens)
	oreq, oklen, err := oracle.BuildQueryMaps(c.QSL, c.SeqLens, c.NumTokens)
	if invalid != "" {
		if err == nil {
			return fmt.Errorf("BuildQueryMaps accepted an input no builder produces (%s): qsl %v, seq_lens %v, num_tokens %d", invalid, c.QSL, c.SeqLens, c.NumTokens)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("BuildQueryMaps refused a valid input: %v (qsl %v, seq_lens %v, num_tokens %d)", err, c.QSL, c.SeqLens, c.NumTokens)
	}
	if len(oreq) != c.NumTokens || len(oklen) != c.NumTokens {
		return fmt.Errorf("BuildQueryMaps returned %d and %d entries, expected num_tokens = %d", len(oreq), len(oklen), c.NumTokens)
	}
	for t := range req {
		if int64(oreq[t]) != req[t] || int64(oklen[t]) != klen[t] {
			return fmt.Errorf("token %d: BuildQueryMaps gives request %d klen %d; docs/contract.md §4 gives request %d klen %d (qsl %v, seq_lens %v)",
				t, oreq[t], oklen[t], req[t], klen[t], c.QSL, c.SeqLens)
		}
	}
	// Consequences a caller relies on.
	n := len(c.SeqLens)
	for r := 0; r < n; r++ {
		lo, hi := int(c.QSL[r]), int(c.QSL[r+1])
		for t := lo; t < hi; t++ {
			if klen[t] < 1 {
				return fmt.Errorf("request %d token %d: klen %d < 1", r, t, klen[t])
			}
			if t > lo && klen[t] != klen[t-1]+1 {
				return fmt.Errorf("request %d: klen %d then %d; a run of new tokens must rise by one", r, klen[t-1], klen[t])
			}
		}
		if hi > lo && klen[hi-1] != int64(c.SeqLens[r]) {
			return fmt.Errorf("request %d: its last token sees %d tokens, expected seq_len %d", r, klen[hi-1], c.SeqLens[r])
		}
	}
	return nil
}
