//go:build !gc || purego || !amd64

package quant

const q8KLevel = levelGeneric

func quantizeQ8K(x []float32, dst []byte, level isaLevel) { quantizeQ8KGo(x, dst) }

func quantizeQ8_0(x []float32, dst []byte, level isaLevel) { quantizeQ8_0Go(x, dst) }

func toF16(x []float32, dst []byte, level isaLevel) { toF16Go(x, dst) }
