package kernels

import (
	"fmt"
	"unsafe"
)

// ABIVersion is the OCTAVE_ABI_VERSION this package is written against.
const ABIVersion = 3

// abiChanges says what ABIVersion changed from the one before (octave_capi.h, "Versioning").
const abiChanges = "ABI 3 adds octave_timer_start and octave_timer_stop (device time between two marks); ABI 2 added octave_decode_workspace_size, checks the alignment of every pointer, keeps octave_last_error until the next failing call, " +
	"and frees a context's outstanding allocations at octave_close"

// Status is a library status code (enum octave_status).
type Status int32

// Status codes of octave_capi.h.
const (
	OK                 Status = 0
	ErrInvalidArgument Status = 1
	ErrFormat          Status = 2
	ErrGQA             Status = 3
	ErrHeadSize        Status = 4
	ErrStride          Status = 5
	ErrAlignment       Status = 6
	ErrNumSplits       Status = 7
	ErrWorkspace       Status = 8
	ErrSlotRange       Status = 9
	ErrSlotDuplicate   Status = 10
	ErrUnsupportedTier Status = 11
	ErrDtype           Status = 12
	ErrScale           Status = 13
	ErrQueryGroup      Status = 14
	ErrNoDeviceStatus  Status = 15
	ErrUnsupportedArch Status = 16
	ErrRuntime         Status = 17
	ErrLaunch          Status = 18
)

// Dtype is an activation dtype (enum octave_dtype).
type Dtype int32

// Activation dtypes.
const (
	F16  Dtype = 1
	BF16 Dtype = 2
)

func (d Dtype) String() string {
	switch d {
	case F16:
		return "fp16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// Tier is a kernel tier (enum octave_tier).
type Tier int32

// Tiers.
const (
	TierPortable Tier = 0
	TierWMMA     Tier = 1
	TierMFMA     Tier = 2
	TierMMA      Tier = 3
)

// The ABI's op bits of octave_tier_desc.ops (TierDesc.Offers reads them).
const (
	opBitDecode  = 1
	opBitPrefill = 2
)

// The structs below mirror octave_capi.h field for field; sizes are checked in abi_test.go.

type cDeviceInfo struct {
	StructSize   uint64
	TotalMemory  uint64
	Device       int32
	WaveSize     int32
	ComputeUnits int32
	LogicalWave  int32
	Name         [256]byte
	Arch         [64]byte
	Runtime      [16]byte
}

type cTierDesc struct {
	Tier           int32
	Ops            int32
	Name           [32]byte
	DecodeProfile  [32]byte
	PrefillProfile [32]byte
}

// StoreArgs is octave_store_args.
type StoreArgs struct {
	structSize                                     uint64
	Key, Value, Cache, SlotMapping                 uintptr // device pointers
	SlotMappingHost                                *int64  // host copy of slot_mapping, or nil
	KeyStrideToken, KeyStrideHead                  int64   // elements
	ValueStrideToken, ValueStrideHead              int64   // elements
	CacheStrideBlock, CacheStrideHead, CacheStride int64   // bytes (block, head, token)
	Fmt                                            int32
	Dtype                                          Dtype
	HeadSize, NumTokens, NumKVHeads                int32
	NumBlocks, BlockSize                           int32
	reserved0                                      int32
	KSigns, VSigns                                 [8]uint32
}

// RotateArgs is octave_rotate_args.
type RotateArgs struct {
	structSize                  uint64
	X                           uintptr
	StrideToken, StrideHead     int64
	Dtype                       Dtype
	HeadSize, NumTokens, NumHds int32
	KLayout, Inverse            int32
	Signs                       [8]uint32
}

// DecodeArgs is octave_decode_args.
type DecodeArgs struct {
	structSize                                       uint64
	Out, Query, Cache, BlockTable, QToReq, QToKlen   uintptr
	Partials                                         uintptr
	PartialsBytes                                    uint64
	OutStrideToken, OutStrideHead                    int64
	QueryStrideToken, QueryStrideHead                int64
	CacheStrideBlock, CacheStrideHead, CacheStrideTk int64
	Fmt                                              int32
	Dtype                                            Dtype
	HeadSize                                         int32
	Tier                                             Tier
	NumQ, NumQHeads, NumKVHeads, NumReqs             int32
	NumBlocks, BlockSize, MaxBlocks, NumSplits       int32
	QueryGroup, PartialStride                        int32
	SMScale                                          float32
	reserved0                                        int32
	KSigns, VSigns                                   [8]uint32
}

// ReduceArgs is octave_reduce_args.
type ReduceArgs struct {
	structSize                    uint64
	Out, Partials                 uintptr
	PartialsBytes                 uint64
	OutStrideToken, OutStrideHead int64
	Dtype                         Dtype
	HeadSize, NumQ, NumQHeads     int32
	NumSplits, PartialStride      int32
	VSigns                        [8]uint32
}

// PrefillArgs is octave_prefill_args.
type PrefillArgs struct {
	structSize                                           uint64
	Out, Q, K, V, Cache, BlockTable, CuSeqlensQ, SeqLens uintptr
	OutStrideToken, OutStrideHead                        int64
	QStrideToken, QStrideHead                            int64
	KStrideToken, KStrideHead                            int64
	VStrideToken, VStrideHead                            int64
	CacheStrideBlock, CacheStrideHead, CacheStrideToken  int64
	Fmt                                                  int32
	Dtype                                                Dtype
	HeadSize                                             int32
	Tier                                                 Tier
	NumTokens, NumSeqs, NumQHeads, NumKVHeads            int32
	NumBlocks, BlockSize, MaxBlocks, MaxQueryLen         int32
	SMScale                                              float32
	NumSplits                                            int32 // 0: the tier chooses; 1..64: the mma tier's prefix splits
}

// QueryMapsArgs is octave_query_maps_args.
type QueryMapsArgs struct {
	structSize                           uint64
	QueryStartLoc, SeqLens, QToReq, QToK uintptr
	NumReqs, NumQ                        int32
}

// structSizes are the C sizes with natural alignment (pinned by static_asserts in csrc).
var structSizes = map[string][2]uintptr{
	"octave_device_info":     {unsafe.Sizeof(cDeviceInfo{}), 368},
	"octave_tier_desc":       {unsafe.Sizeof(cTierDesc{}), 104},
	"octave_store_args":      {unsafe.Sizeof(StoreArgs{}), 200},
	"octave_rotate_args":     {unsafe.Sizeof(RotateArgs{}), 88},
	"octave_decode_args":     {unsafe.Sizeof(DecodeArgs{}), 256},
	"octave_reduce_args":     {unsafe.Sizeof(ReduceArgs{}), 104},
	"octave_prefill_args":    {unsafe.Sizeof(PrefillArgs{}), 216},
	"octave_query_maps_args": {unsafe.Sizeof(QueryMapsArgs{}), 48},
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
