package bigmem

import "testing"

func TestAllocFree(t *testing.T) {
	b, err := Alloc(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 3<<20 || b[0] != 0 || b[len(b)-1] != 0 {
		t.Fatalf("Alloc: %d bytes, first %d, last %d; want 3 MiB of zeros", len(b), b[0], b[len(b)-1])
	}
	for i := range b {
		b[i] = byte(i)
	}
	if b[12345] != byte(12345%256) {
		t.Fatal("written byte did not stick")
	}
	if err := Free(b); err != nil {
		t.Fatal(err)
	}
	if _, err := Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded; want an error")
	}
	if _, err := Alloc(-1); err == nil {
		t.Error("Alloc(-1) succeeded; want an error")
	}
}
