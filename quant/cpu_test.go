package quant

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestGODEBUGSelectsLevel runs this test binary again with CPU features
// switched off through GODEBUG and checks that Path and InterleaveRows
// follow: on amd64
// cpu.avx512f=off must select the AVX2 kernels (where the CPU has AVX2),
// cpu.avx2=off the pure Go ones; on arm64 cpu.i8mm=off the dotprod kernels,
// cpu.asimddp=off the plain NEON ones, cpu.asimd=off the pure Go ones.
func TestGODEBUGSelectsLevel(t *testing.T) {
	if want := os.Getenv("SMOLGO_QUANT_WANT_PATH"); want != "" {
		if got := Path(); got != want {
			t.Fatalf("GODEBUG=%s: Path() = %q, want %q", os.Getenv("GODEBUG"), got, want)
		}
		// The interleaved layout follows the level: groups of 16 rows on
		// AVX-512, 8 on AVX2, none for the Go kernels (and on arm64).
		wantRows := map[string]int{"avx512": 16, "avx2": 8}[want]
		for _, ty := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K} {
			if got := InterleaveRows(ty); got != wantRows {
				t.Fatalf("GODEBUG=%s (%s): InterleaveRows(%v) = %d, want %d", os.Getenv("GODEBUG"), want, ty, got, wantRows)
			}
		}
		return
	}
	top := detectLevel()
	tests := []struct {
		goarch  string // "" for every architecture
		godebug string
		want    isaLevel
	}{
		{"", "", top},
		{"amd64", "cpu.avx512f=off", min(top, levelAVX2)},
		{"amd64", "cpu.avx512vnni=off", min(top, levelAVX2)},
		{"amd64", "cpu.avx2=off", levelGeneric},
		{"arm64", "cpu.i8mm=off", min(top, levelDotProd)},
		{"arm64", "cpu.asimddp=off", min(top, levelNEON)},
		{"arm64", "cpu.asimd=off", levelGeneric},
	}
	for _, tt := range tests {
		if tt.goarch != "" && tt.goarch != runtime.GOARCH {
			continue
		}
		cmd := selfCommand("-test.run=^TestGODEBUGSelectsLevel$", "-test.count=1")
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

// selfCommand returns a command that runs this test binary again with args.
// Under user-mode emulation without binfmt_misc (an arm64 test binary run by
// qemu-aarch64-static on an x86 host, as .ci/run does) the binary cannot
// exec itself: SMOLGO_TEST_EXEC then names the emulator command line that
// ran it, e.g. "qemu-aarch64-static -cpu max", and the child runs under it.
func selfCommand(args ...string) *exec.Cmd {
	wrap := strings.Fields(os.Getenv("SMOLGO_TEST_EXEC"))
	if len(wrap) == 0 {
		return exec.Command(os.Args[0], args...)
	}
	return exec.Command(wrap[0], append(append(wrap[1:], os.Args[0]), args...)...)
}
