package quant

import (
	"os"
	"os/exec"
	"testing"
)

// TestGODEBUGSelectsLevel runs this test binary again with CPU features
// switched off through GODEBUG and checks that Path follows: cpu.avx512f=off
// must select the AVX2 kernels (where the CPU has AVX2), cpu.avx2=off the
// pure Go ones.
func TestGODEBUGSelectsLevel(t *testing.T) {
	if want := os.Getenv("SMOLGO_QUANT_WANT_PATH"); want != "" {
		if got := Path(); got != want {
			t.Fatalf("GODEBUG=%s: Path() = %q, want %q", os.Getenv("GODEBUG"), got, want)
		}
		return
	}
	top := detectLevel()
	tests := []struct {
		godebug string
		want    isaLevel
	}{
		{"", top},
		{"cpu.avx512f=off", min(top, levelAVX2)},
		{"cpu.avx512vnni=off", min(top, levelAVX2)},
		{"cpu.avx2=off", levelGeneric},
	}
	for _, tt := range tests {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGODEBUGSelectsLevel$", "-test.count=1")
		// The child keeps this process's GODEBUG (which may already
		// switch features off) and adds the setting under test.
		godebug := tt.godebug
		if parent := os.Getenv("GODEBUG"); parent != "" {
			godebug = parent + "," + godebug
		}
		cmd.Env = append(os.Environ(), "GODEBUG="+godebug, "SMOLGO_QUANT_WANT_PATH="+tt.want.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GODEBUG=%q: %v\n%s", tt.godebug, err, out)
		}
	}
	if Path() != top.String() {
		t.Errorf("Path() = %q, detected level %v", Path(), top)
	}
}
