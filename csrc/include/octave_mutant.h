// Mutants: deliberate, realistic defects compiled in with -DOCTAVE_MUTANT=<id> (make cuda-mutant
// MUTANT=<id>, make emu-mutant MUTANT=<id>), to measure which tests catch which bug. The normal build
// defines none (OCTAVE_MUTANT = 0) and no mutant code is reachable. Every id is listed, with the op,
// the defect and the bug class it stands for, in corpus/mutants.md; the library's build info names
// the mutant ("mutant=<id>") so a mutant library is never mistaken for a real one.
#pragma once

#ifndef OCTAVE_MUTANT
#define OCTAVE_MUTANT 0
#endif

// OCT_MUTANT(id) is true in the build of mutant id only.
#define OCT_MUTANT(id) (OCTAVE_MUTANT == (id))

// Mutant ids (corpus/mutants.md).
#define OCT_MUT_REDUCE_PAD_UNWRITTEN 1  // reduce: rows with no valid split (padding) not written
#define OCT_MUT_STORE_PLANE_SWAP 2  // store: 3-bit planes' bits swapped (code = 2·lo + hi, not lo + 4·hi)
#define OCT_MUT_STORE_TIE_UP 3  // store: code thresholds compared with >= (a tie goes to the upper code)
#define OCT_MUT_STORE_SCALE_TRUNC 4  // store: fp32 -> fp16 scale rounded toward zero instead of to nearest even
#define OCT_MUT_STORE_RMS_CLAMP 5  // store: rms clamp applied before the sqrt (sqrt(max(ss/n, 1e-12)): floor 1e-6)
#define OCT_MUT_STORE_SIGN_MSB 6  // store: sign word read MSB first (bit 31 - i negates dim 32w + i)
#define OCT_MUT_STORE_PAD_WRITE 7  // store: block-K V scale written as a 32-bit word, clobbering two pad bytes
#define OCT_MUT_DECODE_KLEN_PLUS1 8  // decode: score mask t <= klen (one token past the row's causal length)
#define OCT_MUT_DECODE_MTP_LEADER_KLEN 9  // decode: every row of a query group uses the klen of the group's first row
#define OCT_MUT_DECODE_PAD_UNWRITTEN 10  // decode: partials of empty rows (padding, klen 0) not written
#define OCT_MUT_DECODE_REQ_UNCHECKED 11  // decode: q_to_req not range-checked; only klen <= 0 is padding
#define OCT_MUT_DECODE_BID_UNCHECKED 12  // decode: physical block id not checked against num_blocks (only < 0 skipped)
#define OCT_MUT_DECODE_EMPTY_SPLIT 13  // decode: a split with no tokens for its rows writes no partial (m not -inf)
#define OCT_MUT_DECODE_SPLIT_FLOOR 14  // decode: split length floor(kv_max / num_splits) instead of ceil (host side)
#define OCT_MUT_DECODE_GQA_MOD 15  // decode: query head hq uses KV head hq % Hkv instead of hq / G
#define OCT_MUT_DECODE_BT_STRIDE 16  // decode: block-table row stride max_blocks - 1
#define OCT_MUT_DECODE_NO_LOG2E 17  // decode: score scale without the log2(e) factor, with the exp2 softmax (host side)
#define OCT_MUT_DECODE_QSCALE_ROW 18  // decode: int8 query scale over the whole row instead of per 64-dim block
#define OCT_MUT_REDUCE_NO_SIGNS 19  // reduce: inverse V rotation without the signs (FWHT only)
#define OCT_MUT_REDUCE_DIV_ZERO 20  // reduce: out = O / L even when L = 0 (padding rows NaN)
#define OCT_MUT_PREFILL_CAUSAL 21  // prefill: causal mask t < j (a row does not see its own chunk token)
#define OCT_MUT_PREFILL_CTX_UNCLAMPED 22  // prefill: prefix length not clamped to max_blocks * block_size
#define OCT_MUT_PREFILL_CHUNK_CACHED 23  // prefill: chunk tokens read quantized from the cache, not exact from k, v
#define OCT_MUT_ROTATE_INV_ORDER 24  // rotate: inverse applies the signs before the FWHT (the forward order)
#define OCT_MUT_QMAPS_PAD_LAST_REQ 25  // query_maps: search over 0..num_reqs-1: padding mapped to the last request
#define OCT_MUT_WMMA_RESULT_HALVES 26  // wmma model: D register v of lane l holds row v + 8·(l/16) (rows in contiguous halves), not 2v + l/16
#define OCT_MUT_WMMA_OPSEL_INVERTED 27  // wmma model: the f16-result form reads C from and writes D to the half OPSEL does not select
#define OCT_MUT_WMMA_IU8_SIGN_SWAP 28  // wmma model: the iu8 form takes A's signedness flag for B and B's for A
#define OCT_MUT_PREFILL_WMMA_KSCALE 29  // prefill (wmma): the int8 QK of the prefix without the K block scale (each block's dot taken at scale 1)
#define OCT_MUT_PREFILL_WMMA_PV256 30  // prefill (wmma): prefix P' = fp16(p · V scale · 256) (wmma-f16q's factor) against the 2^-12 that expects 64
#define OCT_MUT_PREFILL_WMMA_MERGE 31  // prefill (wmma): the first chunk tile does not rescale o (the prefix's sum) when it raises the running max
#define OCT_MUT_PREFILL_WMMA_CAUSAL 32  // prefill (wmma): chunk mask u <= j + 1 (a row sees the next row's token)
#define OCT_MUT_PREFILL_WMMA_UNSIGNED_K 33  // prefill (wmma): the int8 WMMA takes the K codebook bytes as unsigned (neg_lo flag of B off)
#define OCT_MUT_DECODE_WMMA_L_F16 34  // decode (wmma): the softmax denominator l kept in fp16 between tiles (a half register; stalls and overflows at long context)
#define OCT_MUT_DECODE_WMMA_PARTIAL_L_F16 35  // decode (wmma): the partial row's l written to the workspace as an fp16 value (overflows past 65504: a split of that many near-equal weights)
#define OCT_MUT_MMA_ACC_TRANSPOSED 36  // mma: the accumulator read with its element pairs as rows (row g + 8·(i & 1), column 2t + (i >> 1)): elements 1 and 2 of every lane swapped, on the instruction and the model
#define OCT_MUT_DECODE_MMA_ALPHA_ROW 37  // decode (mma): the P·V accumulator's query column 2t + 1 rescaled with column 2t's alpha (one query per lane assumed)
#define OCT_MUT_DECODE_MMA_SPLIT_EDGE 38  // decode (mma): a split runs to the rows' longest klen instead of its own end (the later splits' tokens count again)
#define OCT_MUT_DECODE_MMA_KSCALE_TOKEN 39  // decode (mma): the score's K block scale of token g applied to the accumulator's row g + 8 too (the fragment's second token row forgotten)
#define OCT_MUT_DECODE_MMA_L_F16 40  // decode (mma): the softmax denominator l kept in fp16 between tiles (stalls and overflows at long context)
#define OCT_MUT_DECODE_MMA_KLEN_EDGE 41  // decode (mma): a query attends to the token at its klen too (tg <= klen: the tile edge one past a causal length)
#define OCT_MUT_PREFILL_MMA_CAUSAL 42  // prefill (mma): chunk mask u <= j + 1 (the causal edge one token late: a row sees the next row's token)
#define OCT_MUT_PREFILL_MMA_KSCALE_TOKEN 43  // prefill (mma): the prefix score's K block scale of column 2t applied to column 2t + 1 too (the accumulator's second column forgotten; in the decoded tile's column order, column 2p token p and 2p + 1 token p + 16, token p's scale for token p + 16)
#define OCT_MUT_PREFILL_MMA_SPLIT_EDGE 44  // prefill (mma): with prefix splits, every split but the last stops one 32-token tile short of the next split's first (a split boundary off by a tile)
#define OCT_MUT_PREFILL_MMA_MERGE_WEIGHT 45  // prefill (mma): the split merge adds each split's o and l without its weight 2^(m_s - M) (partials of different running maxima summed as if in one unit)
#define OCT_MUT_PREFILL_MMA_VSTEP 46  // prefill (mma, wgmma path): the P·V's second k-step reads V one core matrix too early along K (its descriptor's start at 1 × LBO instead of 2 × LBO: columns 8..23 multiplied by P's columns 16..31)
#define OCT_MUT_REDUCE_WAVE_MAX 48  // reduce: the max M of the splits' m taken from wave 0's splits only (the waves' maxima not exchanged), so a split whose m exceeds it gets a weight 2^(m - M) > 1 that can overflow
#define OCT_MUT_DECODE_MMA_PASS_GRID 47  // decode (mma): a workgroup's row chunk taken as bid_x · query_group / wpc instead of ⌊bid_x / wpc⌋ · query_group (the pass index not divided out of the grid's x when MTP passes are spread)
#define OCT_MUT_DECODE_MMA_QUAD_STEPS 49  // decode (mma, quad kernel): ⌊ntile / NQ⌋ steps over a split instead of ⌈ntile / NQ⌉ (the last tiles of a split whose tile count is not a multiple of the quads dropped)
#define OCT_MUT_DECODE_MMA_MERGE_FACTOR 50  // decode (mma, quad kernel): the write-out scales every quad's o row by quad 0's factor 2^(m_0 - M) instead of its own (the merge of running softmax states with one state's rescale)
#define OCT_MUT_DECODE_MMA_STALE_BID 51  // decode (mma, quad kernel): the stager's block id loaded ahead is the tile it issues now, not the one it issues next step (a prefetch pipeline one stage short: each tile after a quad's first three staged from the block of the tile one step before)
#define OCT_MUT_DECODE_MMA_BLOCK_DIV 52  // decode and prefill (mma): the block index's multiplier rounded down, ⌊2^(31+s) / block_size⌋ (a magic-number division that is exact only for powers of two: the first token of each later block is read from the block before)
#define OCT_MUT_DECODE_MMA_VTAB_SWAP 53  // decode (mma, V table): each table entry's fp16 halves swapped, the pair's first token's codebook value in the second's half (an operand register's K pair in the wrong order: V rows 2t and 2t + 1 exchanged)
#define OCT_MUT_MFMA_D_ROWS 54  // mfma model: register i of lane group g holds D row 4i + g (rows interleaved over the groups), not 4g + i
#define OCT_MUT_DECODE_MFMA_LANE32 55  // decode (mfma): the MFMA operands' lane taken as tid mod 32 (the logical wave32 lane), so lanes 32..63 of each wave64 load lanes 0..31's tokens and queries
#define OCT_MUT_DECODE_MFMA_KSCALE_ROW 56  // decode (mfma): every K block's int8 dot times block 0's K scale (one scale per token row, not per 64-dim block)
#define OCT_MUT_REDUCE_MFMA_MERGE 57  // reduce (mfma): the denominator L sums the splits' l without their weights 2^(m_s - M) (o is weighted, L not)
#define OCT_MUT_DECODE_MFMA_NTILE_KLEN 58  // decode (mfma): a query in the second 16-query MFMA tile masked with the klen of the query 16 places before it (the MTP row's tile index dropped)
#define OCT_MUT_DECODE_MFMA_L_F16 59  // decode (mfma): the softmax denominator l kept in fp16 between tiles (stalls and overflows at long context)
#define OCT_MUT_DECODE_MFMA_PV_KORDER 60  // decode (mfma): the P·V B operand's two registers swapped, V tokens 4g + 2, 4g + 3 paired with P's 4g, 4g + 1 (an operand layout's k order within a lane group)
