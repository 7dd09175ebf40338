package llama

import "math/bits"

// argsortDesc writes to idx the indices of v sorted by decreasing value,
// exactly as ggml's CPU argsort orders them: std::sort of the indices 0..n-1
// with the comparison v[a] > v[b], as GCC's libstdc++ implements it
// (introsort: median-of-three quicksort down to runs of 16, heapsort past
// twice the depth log2(n), then insertion sort). std::sort is not stable,
// so where values tie, which index comes first depends on the algorithm's
// steps; following them step by step is what makes a mixture of experts
// pick the same experts as llama.cpp on a tie. v must hold no NaN (the
// unguarded loops rely on a strict weak order).
func argsortDesc(idx []int32, v []float32) {
	for i := range idx {
		idx[i] = int32(i)
	}
	s := stdSort{idx: idx, v: v}
	n := len(idx)
	if n > 1 {
		s.introsortLoop(0, n, 2*(bits.Len(uint(n))-1))
		s.finalInsertionSort(0, n)
	}
}

// stdSort is libstdc++'s std::sort over idx with the comparison
// less(a, b) = v[a] > v[b]. Positions are indices into idx.
type stdSort struct {
	idx []int32
	v   []float32
}

const stdSortThreshold = 16 // libstdc++'s _S_threshold

func (s *stdSort) less(a, b int32) bool { return s.v[a] > s.v[b] }

func (s *stdSort) swap(i, j int) { s.idx[i], s.idx[j] = s.idx[j], s.idx[i] }

func (s *stdSort) introsortLoop(first, last, depth int) {
	for last-first > stdSortThreshold {
		if depth == 0 {
			s.heapSort(first, last)
			return
		}
		depth--
		cut := s.partitionPivot(first, last)
		s.introsortLoop(cut, last, depth)
		last = cut
	}
}

// partitionPivot is __unguarded_partition_pivot: the median of the second,
// middle and last elements moved to first, then an unguarded partition of
// [first+1, last) around it.
func (s *stdSort) partitionPivot(first, last int) int {
	mid := first + (last-first)/2
	s.medianToFirst(first, first+1, mid, last-1)
	lo, hi := first+1, last
	for {
		for s.less(s.idx[lo], s.idx[first]) {
			lo++
		}
		hi--
		for s.less(s.idx[first], s.idx[hi]) {
			hi--
		}
		if lo >= hi {
			return lo
		}
		s.swap(lo, hi)
		lo++
	}
}

// medianToFirst is __move_median_to_first.
func (s *stdSort) medianToFirst(result, a, b, c int) {
	x, y, z := s.idx[a], s.idx[b], s.idx[c]
	switch {
	case s.less(x, y):
		switch {
		case s.less(y, z):
			s.swap(result, b)
		case s.less(x, z):
			s.swap(result, c)
		default:
			s.swap(result, a)
		}
	case s.less(x, z):
		s.swap(result, a)
	case s.less(y, z):
		s.swap(result, c)
	default:
		s.swap(result, b)
	}
}

func (s *stdSort) finalInsertionSort(first, last int) {
	if last-first > stdSortThreshold {
		s.insertionSort(first, first+stdSortThreshold)
		for i := first + stdSortThreshold; i < last; i++ {
			s.linearInsert(i)
		}
		return
	}
	s.insertionSort(first, last)
}

func (s *stdSort) insertionSort(first, last int) {
	for i := first + 1; i < last; i++ {
		if val := s.idx[i]; s.less(val, s.idx[first]) {
			copy(s.idx[first+1:i+1], s.idx[first:i])
			s.idx[first] = val
		} else {
			s.linearInsert(i)
		}
	}
}

// linearInsert is __unguarded_linear_insert: element i moves left past
// every element it is less than.
func (s *stdSort) linearInsert(i int) {
	val := s.idx[i]
	j := i - 1
	for s.less(val, s.idx[j]) {
		s.idx[j+1] = s.idx[j]
		j--
	}
	s.idx[j+1] = val
}

// heapSort is __partial_sort(first, last, last): make_heap, then sort_heap.
func (s *stdSort) heapSort(first, last int) {
	n := last - first
	if n >= 2 {
		for parent := (n - 2) / 2; ; parent-- {
			s.adjustHeap(first, parent, n, s.idx[first+parent])
			if parent == 0 {
				break
			}
		}
	}
	for last-first > 1 {
		last--
		val := s.idx[last]
		s.idx[last] = s.idx[first]
		s.adjustHeap(first, 0, last-first, val)
	}
}

func (s *stdSort) adjustHeap(first, hole, n int, val int32) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if s.less(s.idx[first+child], s.idx[first+child-1]) {
			child--
		}
		s.idx[first+hole] = s.idx[first+child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		s.idx[first+hole] = s.idx[first+child-1]
		hole = child - 1
	}
	// __push_heap
	parent := (hole - 1) / 2
	for hole > top && s.less(s.idx[first+parent], val) {
		s.idx[first+hole] = s.idx[first+parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	s.idx[first+hole] = val
}
