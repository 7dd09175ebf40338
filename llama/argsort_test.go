package llama

import (
	"bufio"
	"compress/gzip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestArgsortMatchesStdSort holds argsortDesc to the order libstdc++'s
// std::sort gives under ggml's argsort comparison, ties included
// (testdata/argsort_ref.cpp wrote the reference with g++), and its heapsort
// to std::partial_sort's.
func TestArgsortMatchesStdSort(t *testing.T) {
	f, err := os.Open("testdata/argsort_ref.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	cases, ties := 0, 0
	for sc.Scan() {
		vals, want, _ := strings.Cut(sc.Text(), " | ")
		fs := strings.Fields(vals)
		kind, n := fs[0], len(fs)-2
		v := make([]float32, n)
		for i, s := range fs[2:] {
			x, err := strconv.ParseFloat(s, 32)
			if err != nil {
				t.Fatal(err)
			}
			v[i] = float32(x)
		}
		var wantIdx []int32
		for _, s := range strings.Fields(want) {
			i, _ := strconv.Atoi(s)
			wantIdx = append(wantIdx, int32(i))
		}
		got := make([]int32, n)
		if kind == "heap" {
			for i := range got {
				got[i] = int32(i)
			}
			s := stdSort{idx: got, v: v}
			s.heapSort(0, n)
		} else {
			argsortDesc(got, v)
		}
		if !slices.Equal(got, wantIdx) {
			t.Errorf("%s of %d values %v:\n got %v\nwant %v", kind, n, v, got, wantIdx)
		}
		cases++
		// The case is only a test of tie-breaking if a stable order differs.
		stable := make([]int32, n)
		for i := range stable {
			stable[i] = int32(i)
		}
		slices.SortStableFunc(stable, func(a, b int32) int {
			switch {
			case v[a] > v[b]:
				return -1
			case v[a] < v[b]:
				return 1
			}
			return 0
		})
		if !slices.Equal(stable, wantIdx) {
			ties++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 100 || ties < 20 {
		t.Fatalf("%d cases, %d whose ties a stable sort orders otherwise: the reference is too thin", cases, ties)
	}
	t.Logf("%d cases, %d with ties a stable sort breaks otherwise", cases, ties)
}
