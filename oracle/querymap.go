package oracle

import "fmt"

// BuildQueryMaps builds the decode query maps of docs/contract.md §4 (vLLM's metadata builder) from
// query_start_loc qsl (num_reqs+1 entries) and seq_lens (num_reqs entries, context plus new tokens)
// for numTokens query tokens:
//
//   - token i with qsl[r] ≤ i < qsl[r+1] belongs to request r and attends to
//     klen = seq_lens[r] − (qsl[r+1] − qsl[r]) + (i − qsl[r]) + 1 tokens;
//   - tokens i ≥ qsl[num_reqs] are cudagraph padding: request num_reqs, klen 0.
//
// It refuses inputs the builder never produces: qsl[0] ≠ 0, a decreasing qsl, qsl[num_reqs] >
// numTokens, and a request whose seq_len is smaller than its query length (its first token would
// get klen < 1).
func BuildQueryMaps(qsl, seqLens []int32, numTokens int) (qToReq, qToKlen []int32, err error) {
	n := len(seqLens)
	if len(qsl) != n+1 {
		return nil, nil, fmt.Errorf("query maps: query_start_loc has %d entries, expected num_reqs+1 = %d (seq_lens has %d)", len(qsl), n+1, n)
	}
	if numTokens < 0 {
		return nil, nil, fmt.Errorf("query maps: num_tokens %d: expected ≥ 0", numTokens)
	}
	if qsl[0] != 0 {
		return nil, nil, fmt.Errorf("query maps: query_start_loc[0] = %d, expected 0", qsl[0])
	}
	for r := 0; r < n; r++ {
		if qsl[r+1] < qsl[r] {
			return nil, nil, fmt.Errorf("query maps: query_start_loc[%d] = %d < query_start_loc[%d] = %d: expected non-decreasing", r+1, qsl[r+1], r, qsl[r])
		}
		if qlen := qsl[r+1] - qsl[r]; qlen > 0 && seqLens[r] < qlen {
			return nil, nil, fmt.Errorf("query maps: request %d has seq_len %d < query length %d: expected seq_len ≥ query length (its first token would get klen %d < 1)",
				r, seqLens[r], qlen, int64(seqLens[r])-int64(qlen)+1)
		}
	}
	if int(qsl[n]) > numTokens {
		return nil, nil, fmt.Errorf("query maps: query_start_loc[%d] = %d exceeds num_tokens %d", n, qsl[n], numTokens)
	}
	qToReq = make([]int32, numTokens)
	qToKlen = make([]int32, numTokens)
	for r := 0; r < n; r++ {
		ctx := seqLens[r] - (qsl[r+1] - qsl[r])
		for i := qsl[r]; i < qsl[r+1]; i++ {
			qToReq[i] = int32(r)
			qToKlen[i] = ctx + (i - qsl[r]) + 1
		}
	}
	for i := int(qsl[n]); i < numTokens; i++ {
		qToReq[i] = int32(n)
	}
	return qToReq, qToKlen, nil
}
