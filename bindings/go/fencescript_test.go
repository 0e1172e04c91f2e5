// SPDX-License-Identifier: BSD-3-Clause

package redlock_test

import (
	"testing"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

// FenceRefusal reads the script's refusal through the C library: both
// tokens as 64-bit integers (above 2^53 too), and nothing else taken for one.
func TestFenceRefusal(t *testing.T) {
	tok, fence, ok := redlock.FenceRefusal("FENCED 9007199254740993 18446744073709551615 token 9007199254740993 is older")
	if !ok || tok != 9007199254740993 || fence != 18446744073709551615 {
		t.Fatalf("FenceRefusal: %d %d %v", tok, fence, ok)
	}
	if tok, fence, ok = redlock.FenceRefusal("FENCED 5 7"); !ok || tok != 5 || fence != 7 {
		t.Fatalf("FenceRefusal(FENCED 5 7): %d %d %v", tok, fence, ok)
	}
	for _, msg := range []string{"", "FENCED", "FENCED 5", "FENCED 0 7", "FENCED 5 7x", "ERR FENCED 5 7",
		"NOSCRIPT No matching script", "FENCED 5 18446744073709551616", "FENCED 5 7\x00"} {
		if _, _, ok := redlock.FenceRefusal(msg); ok {
			t.Errorf("FenceRefusal(%q) took it for a refusal", msg)
		}
	}
}
