package kernels

import "testing"

// TestStructSizes pins the Go mirrors to the C layouts: a field added on one side only changes a
// size and fails here (the library also refuses a struct_size smaller than its own).
func TestStructSizes(t *testing.T) {
	for name, s := range structSizes {
		if s[0] != s[1] {
			t.Errorf("%s: Go mirror is %d bytes, C struct is %d", name, s[0], s[1])
		}
	}
}
