package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
)

// TestRunTinyModel runs the benchmark on the demo model and checks that the
// JSON line carries every measurement, the roofline included.
func TestRunTinyModel(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := run(&out, log, "../../testdata/smollm3-tinyq-Q4_K_M.gguf", 2, 8, 4, 4, 1, "f16", 1, true); err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if r.PPTps <= 0 || r.TGTps <= 0 || r.LoadS < 0 || r.PeakRSSMB <= 0 || r.ModelBytes <= 0 {
		t.Errorf("missing measurements: %+v", r)
	}
	if r.ReadGBps <= 0 || r.TGRoofline <= 0 || r.TGRooflineFra <= 0 {
		t.Errorf("missing roofline: read %v GB/s, roofline %v t/s, fraction %v", r.ReadGBps, r.TGRoofline, r.TGRooflineFra)
	}
	if len(r.PPTpsAll) != 1 || len(r.TGTpsAll) != 1 {
		t.Errorf("want one repetition each, got %v and %v", r.PPTpsAll, r.TGTpsAll)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := run(io.Discard, log, "", 2, 8, 4, 4, 1, "f16", 1, false); err == nil {
		t.Error("no error without -model")
	}
	if err := run(io.Discard, log, "../../testdata/smollm3-tinyq-Q4_K_M.gguf", 0, 8, 4, 4, 1, "f16", 1, false); err == nil {
		t.Error("no error for -threads 0")
	}
	if err := run(io.Discard, log, "../../testdata/smollm3-tinyq-Q4_K_M.gguf", 2, 8, 4, 4, 1, "f8", 1, false); err == nil {
		t.Error("no error for -kv f8")
	}
}
