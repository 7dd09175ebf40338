//go:build unix && !linux

package bigmem

func adviseHuge([]byte) {}
