package bigmem

import "golang.org/x/sys/unix"

func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
