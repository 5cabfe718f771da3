module github.com/octant-kv/octant

go 1.26

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
