# Octant. `make test` is what CI runs (.ci/run); it needs no GPU.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
export CGO_ENABLED ?= 0

.PHONY: setup test vet fmt-check bench golden sums
setup:
	@command -v $(GO) >/dev/null || { echo "Go not found: install Go 1.26 (expected /usr/local/go/bin)"; exit 2; }
	$(GO) mod download
	$(GO) build ./...

test: fmt-check vet sums
	$(GO) test ./...
	$(GO) run ./cmd/octant golden --check corpus/golden/upstream

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./oracle/

golden:
	$(GO) run ./cmd/octant golden --check corpus/golden/upstream

# The golden files must be the upstream ones, unchanged.
sums:
	cd corpus/golden/upstream && sha256sum --quiet -c SHA256SUMS
