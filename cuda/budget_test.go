//go:build cuda

package cuda

// The ptxas checks run with the cuda tag (cuda/ci.sh, after it has fetched
// ptxas), so that the README's plain go test ./... needs no CUDA tools.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ptxas finds the PTX assembler: $PTXAS, then PATH, then Debian's place.
func ptxas(t *testing.T) string {
	if p := os.Getenv("PTXAS"); p != "" {
		return p
	}
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/lib/nvidia-cuda-toolkit/bin/ptxas"); err == nil {
		return "/usr/lib/nvidia-cuda-toolkit/bin/ptxas"
	}
	msg := "ptxas not found (set PTXAS or install nvidia-cuda-toolkit; .ci/run fetches it)"
	if os.Getenv("CI") == "true" || os.Getenv("SMOLGO_PTXAS") == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// budget is what ptxas -v reports for one kernel on one architecture.
type budget struct {
	regs, smem int
}

var (
	reEntry = regexp.MustCompile(`Compiling entry function '(\w+)' for '(sm_\d+)'`)
	reSpill = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reUsed  = regexp.MustCompile(`Used (\d+) registers(?:, (\d+) bytes smem)?`)
)

// assemble runs ptxas -v on every PTX file for arch and returns each
// kernel's figures; a kernel that spills or uses a stack frame is an error.
func assemble(t *testing.T, tool, arch string) map[string]budget {
	out := map[string]budget{}
	for _, m := range []string{"matmul", "ops", "attn"} {
		cmd := exec.Command(tool, "-arch="+arch, "-v", "-o", os.DevNull, m+".ptx")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ptxas %s %s: %v\n%s", arch, m, err, b)
		}
		var kernel string
		for _, line := range strings.Split(string(b), "\n") {
			if e := reEntry.FindStringSubmatch(line); e != nil {
				kernel = e[1]
			}
			if s := reSpill.FindStringSubmatch(line); s != nil && (s[1] != "0" || s[2] != "0" || s[3] != "0") {
				t.Errorf("%s on %s: %s", kernel, arch, strings.TrimSpace(line))
			}
			if u := reUsed.FindStringSubmatch(line); u != nil {
				r, _ := strconv.Atoi(u[1])
				s, _ := strconv.Atoi(u[2] + "0")
				out[kernel] = budget{r, s / 10}
			}
		}
	}
	return out
}

// Every kernel assembles for sm_80 and sm_90 without spills, within the
// registers and static shared memory recorded in budget.txt (a kernel
// growing past its figures fails; SMOLGO_UPDATE_BUDGET=1 rewrites the file
// after a deliberate change, to be reviewed in the diff).
func TestPTXBudget(t *testing.T) {
	tool := ptxas(t)
	got := map[string]budget{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		for k, b := range assemble(t, tool, arch) {
			got[k+" "+arch] = b
		}
	}
	if len(got) == 0 {
		t.Fatal("ptxas reported no kernels")
	}
	if os.Getenv("SMOLGO_UPDATE_BUDGET") == "1" {
		writeBudget(t, got)
		return
	}
	want := readBudget(t)
	for k, g := range got {
		w, ok := want[k]
		switch {
		case !ok:
			t.Errorf("%s: not in budget.txt (registers %d, smem %d)", k, g.regs, g.smem)
		case g.regs > w.regs || g.smem > w.smem:
			t.Errorf("%s: %d registers, %d bytes smem; budget %d, %d", k, g.regs, g.smem, w.regs, w.smem)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("budget.txt lists %s, which ptxas no longer reports", k)
		}
	}
}

const budgetHeader = "# kernel arch registers smem-bytes: ptxas -v on the committed PTX (TestPTXBudget).\n# No kernel may spill; none may grow past these figures.\n"

func readBudget(t *testing.T) map[string]budget {
	f, err := os.Open("budget.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]budget{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		var k, arch string
		var b budget
		if _, err := fmt.Sscanf(line, "%s %s %d %d", &k, &arch, &b.regs, &b.smem); err != nil {
			t.Fatalf("budget.txt:%d: %q: %v", n, line, err)
		}
		out[k+" "+arch] = b
	}
	return out
}

func writeBudget(t *testing.T, got map[string]budget) {
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(budgetHeader)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k, got[k].regs, got[k].smem)
	}
	if err := os.WriteFile("budget.txt", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
