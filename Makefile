# Octant. `make test` is what CI runs (.ci/run); it needs no GPU.
GO ?= go
export CGO_ENABLED ?= 0

.PHONY: test vet fmt-check bench golden
test: fmt-check vet
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
