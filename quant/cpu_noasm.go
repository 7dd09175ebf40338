//go:build !gc || purego || !(amd64 || arm64)

package quant

// Without assembly (the purego tag, or an architecture other than amd64 and
// arm64) only the pure Go kernels exist.

func detectLevel() isaLevel { return levelGeneric }

func addArchKernels(k *kernelSet, level isaLevel) {}
