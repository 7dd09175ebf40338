//go:build cuda

package cuda

import (
	"fmt"
	"regexp"
	"strings"
	"unsafe"
)

// gpu is one device in use: a context, a stream that orders all of its
// work, and the kernels loaded from the embedded PTX. Its methods run with
// the context current on a locked OS thread (run), so callers pass their
// work as a function.
type gpu struct {
	d      *driver
	n      int
	dev    cuDevice
	info   deviceInfo
	ctx    cuContext
	stream cuStream
	mods   []cuModule
	fns    map[string]cuFunction
	params map[string]string // kernel name: its parameter types, one letter each
	l      *launcher
}

// openDevice opens the driver and checks device n; no context yet.
func openDevice(lib string, n int) (*gpu, error) {
	d, err := openDriver(lib)
	if err != nil {
		return nil, err
	}
	dev, info, err := d.device(n)
	if err != nil {
		return nil, err
	}
	return &gpu{d: d, n: n, dev: dev, info: info, fns: map[string]cuFunction{}, params: map[string]string{}, l: newLauncher()}, nil
}

// start creates the context and stream and loads the kernels.
func (g *gpu) start() error {
	if g.info.major < 8 {
		return fmt.Errorf("cuda: cuda:%d (%s) has compute capability %d.%d; the kernels need 8.0 (Ampere) or later", g.n, g.info.name, g.info.major, g.info.minor)
	}
	if err := g.d.check("cuCtxCreate", g.d.cuCtxCreate(&g.ctx, 0, g.dev)); err != nil {
		return err
	}
	return g.run(func() error {
		if err := g.d.check("cuStreamCreate", g.d.cuStreamCreate(&g.stream, 1)); err != nil { // CU_STREAM_NON_BLOCKING
			return err
		}
		for _, m := range modules {
			// cuModuleLoadData wants a NUL-terminated PTX string.
			img := append([]byte(*m.ptx), 0)
			var mod cuModule
			if err := g.d.check("cuModuleLoadData "+m.name+".ptx", g.d.cuModuleLoadData(&mod, unsafe.Pointer(&img[0]))); err != nil {
				return err
			}
			g.mods = append(g.mods, mod)
			for k, v := range ptxParams(*m.ptx) {
				g.params[k] = v
			}
		}
		return nil
	})
}

// run calls f with the context current on this goroutine's thread.
func (g *gpu) run(f func() error) error { return g.d.onThread(g.ctx, f) }

// fn returns the kernel of that name (from any loaded module).
func (g *gpu) fn(name string) (cuFunction, error) {
	if f, ok := g.fns[name]; ok {
		return f, nil
	}
	cname := append([]byte(name), 0)
	for _, m := range g.mods {
		var f cuFunction
		if g.d.cuModuleGetFunction(&f, m, &cname[0]) == 0 {
			g.fns[name] = f
			return f, nil
		}
	}
	return 0, fmt.Errorf("cuda: no kernel %s in the embedded PTX", name)
}

// launch runs kernel name on the stream (inside run). The arguments must
// match the kernel's PTX parameters in number and kind (a devPtr for .u64,
// an int for .u32, a float32 for .f32): a mismatch is an error here rather
// than garbage on the device.
func (g *gpu) launch(name string, grid, block [3]uint32, shmem uint32, args ...arg) error {
	f, err := g.fn(name)
	if err != nil {
		return err
	}
	if err := checkArgs(name, g.params[name], args); err != nil {
		return err
	}
	return g.d.launch(g.l, name, f, grid, block, shmem, g.stream, args...)
}

func (g *gpu) alloc(bytes int64) (devPtr, error) {
	var p devPtr
	if bytes <= 0 {
		bytes = 1
	}
	err := g.d.check(fmt.Sprintf("cuMemAlloc(%s)", mib(bytes)), g.d.cuMemAlloc(&p, uintptr(bytes)))
	return p, err
}

func (g *gpu) free(p devPtr) {
	if p != 0 {
		g.d.cuMemFree(p)
	}
}

// upload copies host bytes to device memory (inside run). b may be Go
// memory (copied before the call returns) or a file mapping.
func (g *gpu) upload(dst devPtr, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return g.d.check("cuMemcpyHtoDAsync", g.d.cuMemcpyHtoDAsync(dst, unsafe.Pointer(&b[0]), uintptr(len(b)), g.stream))
}

// download copies device memory to b, after the stream's earlier work.
func (g *gpu) download(b []byte, src devPtr) error {
	if len(b) == 0 {
		return nil
	}
	if err := g.sync(); err != nil {
		return err
	}
	return g.d.check("cuMemcpyDtoH", g.d.cuMemcpyDtoH(unsafe.Pointer(&b[0]), src, uintptr(len(b))))
}

func (g *gpu) copyD(dst, src devPtr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return g.d.check("cuMemcpyDtoDAsync", g.d.cuMemcpyDtoDAsync(dst, src, uintptr(bytes), g.stream))
}

// used is the device memory in use by every process (total - free).
func (g *gpu) used() (int64, error) {
	var free, total uintptr
	err := g.run(func() error { return g.d.check("cuMemGetInfo", g.d.cuMemGetInfo(&free, &total)) })
	return int64(total) - int64(free), err
}

func (g *gpu) sync() error {
	return g.d.check("cuStreamSynchronize", g.d.cuStreamSynchronize(g.stream))
}

// close frees the context (and with it all device memory and modules).
func (g *gpu) close() error {
	if g.ctx == 0 {
		return nil
	}
	g.sync()
	err := g.d.check("cuCtxDestroy", g.d.cuCtxDestroy(g.ctx))
	g.ctx = 0
	return err
}

var reParam = regexp.MustCompile(`\.param \.(u64|u32|f32) `)

// ptxParams reads the parameter kinds of every kernel in a PTX module:
// 'p' for .u64 (our kernels' pointers), 'i' for .u32, 'f' for .f32.
func ptxParams(ptx string) map[string]string {
	out := map[string]string{}
	for _, entry := range strings.Split(ptx, ".entry ")[1:] {
		name, rest, ok := strings.Cut(entry, "(")
		if !ok {
			continue
		}
		list, _, _ := strings.Cut(rest, ")")
		var kinds []byte
		for _, m := range reParam.FindAllStringSubmatch(list, -1) {
			kinds = append(kinds, map[string]byte{"u64": 'p', "u32": 'i', "f32": 'f'}[m[1]])
		}
		out[name] = string(kinds)
	}
	return out
}

// checkArgs compares launch arguments with a kernel's parameter kinds.
func checkArgs(name, kinds string, args []arg) error {
	if len(args) != len(kinds) {
		return fmt.Errorf("cuda: kernel %s takes %d arguments, launched with %d", name, len(kinds), len(args))
	}
	for i, a := range args {
		var k byte
		switch a.(type) {
		case devPtr:
			k = 'p'
		case int, int32:
			k = 'i'
		case float32:
			k = 'f'
		}
		if k != kinds[i] {
			return fmt.Errorf("cuda: kernel %s: argument %d is a %T, the kernel wants kind %c", name, i, a, kinds[i])
		}
	}
	return nil
}

// floats and ints view numeric slices as bytes for the copies.
func floats(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

func ints(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
