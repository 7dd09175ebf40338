//go:build purego || !amd64

package quant

const q8KLevel = levelGeneric

func quantizeQ8K(x []float32, dst []byte, level isaLevel) { quantizeQ8KGo(x, dst) }
