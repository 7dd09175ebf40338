// Package quant implements ggml's tensor block formats: their byte layouts,
// dequantization to float32, and the reference quantizers that llama.cpp
// uses to write GGUF files.
//
// # Blocks
//
// A quantized tensor row is a sequence of fixed-size blocks. Each block holds
// a few scales in float16 (or float32) and small integer quants; a weight is
// a quant times a scale, sometimes minus a per-block minimum. The 32-element
// formats keep one scale per block; the K-quants group 256 elements into a
// super-block of 8 or 16 sub-blocks whose scales are themselves quantized to
// 4, 6 or 8 bits against one or two float16 super-scales.
//
//	type    elements  bytes  bits/weight  weight =
//	Q4_0    32        18     4.5          d * (q - 8)
//	Q4_1    32        20     5.0          d * q + m
//	Q5_0    32        22     5.5          d * (q - 16)
//	Q5_1    32        24     6.0          d * q + m
//	Q8_0    32        34     8.5          d * q
//	Q2_K    256       84     2.625        d*sc * q - dmin*m   (16 sub-blocks of 16)
//	Q3_K    256       110    3.4375       d*sc * (q - 4)       (16 sub-blocks of 16)
//	Q4_K    256       144    4.5          d*sc * q - dmin*m   (8 sub-blocks of 32)
//	Q5_K    256       176    5.5          d*sc * q - dmin*m   (8 sub-blocks of 32)
//	Q6_K    256       210    6.5625       d*sc * (q - 32)      (16 sub-blocks of 16)
//	Q8_K    256       292    9.125        d * q  (f32 scale; activations only)
//
// The exact field order of each block is documented beside its offsets in
// blocks.go (read it with `go doc -u quant`). Everything is little endian.
//
// # Exactness
//
// Dequantize reproduces ggml's dequantize_row_* bit for bit (tested against
// SHA-256 digests of every tensor of llama.cpp's golden models), so code
// built on it sees exactly the weights llama.cpp sees.
package quant
