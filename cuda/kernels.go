//go:build cuda

package cuda

import _ "embed"

// The kernels as PTX for sm_80, made from kernels/*.cu by go generate.
var (
	//go:embed matmul.ptx
	matmulPTX string
	//go:embed ops.ptx
	opsPTX string
	//go:embed attn.ptx
	attnPTX string
)

// modules lists the PTX files by name, in load order.
var modules = []struct {
	name string
	ptx  *string
}{{"matmul", &matmulPTX}, {"ops", &opsPTX}, {"attn", &attnPTX}}
