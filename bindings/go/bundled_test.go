// SPDX-License-Identifier: BSD-3-Clause

// Every C source of the library must be compiled into the package by a
// bundled_*.c file; a source added to c/src, c/src/engine or c/common without one would
// otherwise show up only as undefined symbols, or not at all.

//go:build !redlock_system

package redlock_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestEveryCSourceIsBundled(t *testing.T) {
	include := regexp.MustCompile(`(?m)^#include "\.\./\.\./(c/[^"]+\.c)"`)
	bundled := map[string]string{} // C source (from the repository root) -> bundled file
	files, err := filepath.Glob("bundled_*.c")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled_*.c files here (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range include.FindAllStringSubmatch(string(b), -1) {
			if prev, dup := bundled[m[1]]; dup {
				t.Errorf("%s is compiled twice, by %s and %s", m[1], prev, f)
			}
			bundled[m[1]] = f
		}
	}
	var sources []string
	for _, dir := range []string{"c/src", "c/src/engine", "c/common"} {
		s, err := filepath.Glob(filepath.Join("..", "..", dir, "*.c"))
		if err != nil || len(s) == 0 {
			t.Fatalf("no C sources in %s (%v)", dir, err)
		}
		sources = append(sources, s...)
	}
	for _, s := range sources {
		rel := filepath.ToSlash(s[len("../../"):])
		if _, ok := bundled[rel]; !ok {
			t.Errorf("%s has no bundled_*.c file: add one with the line #include \"../../%s\"", rel, rel)
		}
		delete(bundled, rel)
	}
	for src, f := range bundled {
		t.Errorf("%s includes %s, which does not exist", f, src)
	}
}
