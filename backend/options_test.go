package backend

import (
	"strings"
	"testing"
)

// Every KV type reads back from its name, and its bytes are ggml's.
func TestKVType(t *testing.T) {
	for _, tc := range []struct {
		t     KVType
		name  string
		bytes int64 // of 64 values
	}{{KVF16, "f16", 128}, {KVF32, "f32", 256}, {KVQ8_0, "q8_0", 68}} {
		got, err := ParseKVType(tc.name)
		if err != nil || got != tc.t || tc.t.String() != tc.name || tc.t.Bytes(64) != tc.bytes {
			t.Errorf("%s: Parse %v %v, String %q, Bytes(64) %d (want %d)", tc.name, got, err, tc.t.String(), tc.t.Bytes(64), tc.bytes)
		}
	}
	if KVQ8_0.Bytes(33) != 68 {
		t.Errorf("q8_0 of 33 values: %d bytes, want two blocks of 34", KVQ8_0.Bytes(33))
	}
	if _, err := ParseKVType("F16"); err == nil || !strings.Contains(err.Error(), `"F16"`) {
		t.Errorf("ParseKVType(F16): %v", err)
	}
}

func TestOptionsCheck(t *testing.T) {
	if err := (Options{}).Check(); err != nil {
		t.Errorf("the zero value: %v", err)
	}
	for _, o := range []Options{{Threads: -1}, {Threads: MaxThreads + 1}, {BatchSize: -1}, {Context: -1}, {KVType: KVQ8_0 + 1}, {KVType: -1}} {
		if err := o.Check(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
