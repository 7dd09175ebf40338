//go:build purego || !amd64

package quant

const hasQ8KAsm = false

func quantizeQ8K(x []float32, dst []byte, useAsm bool) { quantizeQ8KGo(x, dst) }
