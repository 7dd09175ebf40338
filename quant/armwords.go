//go:build ignore

// armwords checks the WORD encodings in the arm64 assembly of this package.
//
// The Go assembler has no mnemonic for many Advanced SIMD instructions the
// kernels need (SDOT, SMULL, SADALP, MLA by element, SCVTF, FMLA ...), so the
// *_arm64.s files spell them as
//
//	WORD $0x4e829420 // sdot v0.4s, v1.16b, v2.16b
//
// with the instruction in GNU syntax in the comment (or, inside a #define,
// "WORD $0x4e829420 /* sdot v0.4s, v1.16b, v2.16b */ \"). armwords assembles every
// such comment with binutils (aarch64-linux-gnu-as, Debian's
// binutils-aarch64-linux-gnu) and compares the encoding with the WORD; with
// -w it rewrites the WORDs from the comments instead:
//
//	cd quant && go run armwords.go *_arm64.s      (check)
//	cd quant && go run armwords.go -w *_arm64.s   (write)
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var wordLine = regexp.MustCompile(`^(\s*WORD\s+\$)(0x[0-9a-fA-F]+|[0-9]+)(\s*//\s*|\s*/\*\s*)(.+?)(\s*\*/\s*\\|\s*\*/)?\s*$`)

func main() {
	write := flag.Bool("w", false, "rewrite the WORDs from their comments")
	flag.Parse()
	log.SetFlags(0)
	bad := 0
	for _, file := range flag.Args() {
		n, err := check(file, *write)
		if err != nil {
			log.Fatalf("armwords: %s: %v", file, err)
		}
		bad += n
	}
	if bad > 0 {
		log.Fatalf("armwords: %d WORDs do not match their comments", bad)
	}
}

// check verifies (or rewrites) the WORD lines of one file and returns how
// many disagree with their comments.
func check(file string, write bool) (int, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(src), "\n")
	var idx []int
	var insns []string
	for i, l := range lines {
		if m := wordLine.FindStringSubmatch(l); m != nil {
			idx = append(idx, i)
			insns = append(insns, m[4])
		}
	}
	if len(insns) == 0 {
		return 0, nil
	}
	words, err := assemble(insns)
	if err != nil {
		return 0, err
	}
	bad := 0
	for k, i := range idx {
		m := wordLine.FindStringSubmatch(lines[i])
		have, err := strconv.ParseUint(m[2], 0, 32)
		if err != nil {
			return 0, fmt.Errorf("line %d: %v", i+1, err)
		}
		if uint32(have) == words[k] {
			continue
		}
		if write {
			lines[i] = fmt.Sprintf("%s0x%08x%s%s%s", m[1], words[k], m[3], m[4], m[5])
			continue
		}
		bad++
		fmt.Printf("%s:%d: WORD %#08x, but %q is %#08x\n", file, i+1, have, insns[k], words[k])
	}
	if write {
		return 0, os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
	}
	return bad, nil
}

// assemble returns the encodings of insns, in order.
func assemble(insns []string) ([]uint32, error) {
	dir, err := os.MkdirTemp("", "armwords")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, o := filepath.Join(dir, "w.s"), filepath.Join(dir, "w.o")
	if err := os.WriteFile(s, []byte(strings.Join(insns, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command("aarch64-linux-gnu-as", "-march=armv8.6-a+i8mm+dotprod+fp16", "-o", o, s).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("aarch64-linux-gnu-as: %v\n%s", err, out)
	}
	out, err := exec.Command("aarch64-linux-gnu-objdump", "-d", o).Output()
	if err != nil {
		return nil, fmt.Errorf("aarch64-linux-gnu-objdump: %v", err)
	}
	// Lines like "   4:	4e829420 	sdot	v0.4s, v1.16b, v2.16b".
	var words []uint32
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") || len(f[1]) != 8 {
			continue
		}
		if _, err := strconv.ParseUint(strings.TrimSuffix(f[0], ":"), 16, 64); err != nil {
			continue
		}
		w, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			continue
		}
		words = append(words, uint32(w))
	}
	if len(words) != len(insns) {
		return nil, fmt.Errorf("assembled %d instructions into %d words", len(insns), len(words))
	}
	return words, nil
}
