package engine

import (
	"strings"
	"testing"

	"github.com/smolgo/smolgo/backend"
)

// The options fill the one value that goes to the device (Config.Options),
// the KV type parsed once, and every setting out of range is an error of
// NewConfig naming it.
func TestNewConfigOptions(t *testing.T) {
	c, err := NewConfig(WithKVType("q8_0"), WithContext(64), WithBatchSize(32), WithThreads(3), WithDevice("cuda:1"), WithKeepLayout(true))
	if err != nil {
		t.Fatal(err)
	}
	want := backend.Options{Device: "cuda:1", Threads: 3, BatchSize: 32, KVType: backend.KVQ8_0, Context: 64, KeepLayout: true, Logger: c.Logger}
	if c.Options != want || c.Logger == nil {
		t.Errorf("Options %+v, want %+v", c.Options, want)
	}
	if c, _ := NewConfig(); c.KVType != backend.KVF16 || c.Device != "cpu" || c.Threads <= 0 {
		t.Errorf("defaults: %+v", c.Options)
	}
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithKVType("q4_0"), `"q4_0"`},
		{WithKVType(""), "KV cache type"},
		{WithThreads(-1), "-1 threads"},
		{WithThreads(MaxThreads + 1), "threads"},
		{WithContext(-5), "negative context length -5"},
		{WithBatchSize(-2), "negative batch size -2"},
	} {
		if _, err := NewConfig(tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "engine: ") {
			t.Errorf("%s: error %v, want one naming %s", tc.want, err, tc.want)
		}
	}
}
