//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CUDA driver API, opened at run time with purego: no cgo, no CUDA at
// build time. Handles are the driver's opaque pointers; device memory is a
// CUdeviceptr (uint64). Every function returns a CUresult, 0 for success.
type (
	cuResult   int32
	cuDevice   int32
	cuContext  uintptr
	cuModule   uintptr
	cuFunction uintptr
	cuStream   uintptr
	cuEvent    uintptr
	devPtr     uint64
)

// Device attributes read by NewBackend (CUdevice_attribute).
const (
	attrComputeMajor = 75
	attrComputeMinor = 76
	attrSMCount      = 16
)

// driver holds the functions of one opened libcuda. It has no other state:
// each Backend opens its own (the dynamic loader shares the library).
type driver struct {
	lib uintptr

	cuInit               func(flags uint32) cuResult
	cuDriverGetVersion   func(v *int32) cuResult
	cuDeviceGetCount     func(n *int32) cuResult
	cuDeviceGet          func(d *cuDevice, ordinal int32) cuResult
	cuDeviceGetName      func(name *byte, n int32, d cuDevice) cuResult
	cuDeviceGetAttribute func(v *int32, attr int32, d cuDevice) cuResult
	cuDeviceTotalMem     func(bytes *uintptr, d cuDevice) cuResult
	cuCtxCreate          func(c *cuContext, flags uint32, d cuDevice) cuResult
	cuCtxDestroy         func(c cuContext) cuResult
	cuCtxSetCurrent      func(c cuContext) cuResult
	cuMemGetInfo         func(free, total *uintptr) cuResult
	cuMemAlloc           func(p *devPtr, bytes uintptr) cuResult
	cuMemFree            func(p devPtr) cuResult
	cuMemcpyHtoD         func(dst devPtr, src unsafe.Pointer, bytes uintptr) cuResult
	cuMemcpyDtoH         func(dst unsafe.Pointer, src devPtr, bytes uintptr) cuResult
	cuMemcpyDtoD         func(dst, src devPtr, bytes uintptr) cuResult
	cuMemcpyHtoDAsync    func(dst devPtr, src unsafe.Pointer, bytes uintptr, s cuStream) cuResult
	cuMemcpyDtoHAsync    func(dst unsafe.Pointer, src devPtr, bytes uintptr, s cuStream) cuResult
	cuMemcpyDtoDAsync    func(dst, src devPtr, bytes uintptr, s cuStream) cuResult
	cuMemsetD8Async      func(dst devPtr, v uint8, n uintptr, s cuStream) cuResult
	cuStreamCreate       func(s *cuStream, flags uint32) cuResult
	cuStreamDestroy      func(s cuStream) cuResult
	cuStreamSynchronize  func(s cuStream) cuResult
	cuEventCreate        func(e *cuEvent, flags uint32) cuResult
	cuEventDestroy       func(e cuEvent) cuResult
	cuEventRecord        func(e cuEvent, s cuStream) cuResult
	cuEventSynchronize   func(e cuEvent) cuResult
	cuEventElapsedTime   func(ms *float32, start, end cuEvent) cuResult
	cuModuleLoadData     func(m *cuModule, image unsafe.Pointer) cuResult
	cuModuleUnload       func(m cuModule) cuResult
	cuModuleGetFunction  func(f *cuFunction, m cuModule, name *byte) cuResult
	cuLaunchKernel       func(f cuFunction, gx, gy, gz, bx, by, bz, shmem uint32, s cuStream, params, extra unsafe.Pointer) cuResult
	cuGetErrorString     func(r cuResult, s **byte) cuResult
}

// openDriver opens the driver library (DefaultLibrary unless path is set),
// binds the functions the backend calls and initializes the driver. A
// machine without the NVIDIA driver gets one error naming the library.
func openDriver(path string) (*driver, error) {
	if path == "" {
		path = DefaultLibrary
	}
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("cuda: no CUDA driver: %w", err)
	}
	d := &driver{lib: lib}
	// The _v2 names are the 64-bit ABI the driver has exported since CUDA
	// 3.2; the plain names are kept for old binaries.
	for _, f := range []struct {
		fn   any
		name string
	}{
		{&d.cuInit, "cuInit"},
		{&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuDeviceGetCount, "cuDeviceGetCount"},
		{&d.cuDeviceGet, "cuDeviceGet"},
		{&d.cuDeviceGetName, "cuDeviceGetName"},
		{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuCtxCreate, "cuCtxCreate_v2"},
		{&d.cuCtxDestroy, "cuCtxDestroy_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&d.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"},
		{&d.cuMemFree, "cuMemFree_v2"},
		{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&d.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
		{&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
		{&d.cuMemsetD8Async, "cuMemsetD8Async"},
		{&d.cuStreamCreate, "cuStreamCreate"},
		{&d.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuEventCreate, "cuEventCreate"},
		{&d.cuEventDestroy, "cuEventDestroy_v2"},
		{&d.cuEventRecord, "cuEventRecord"},
		{&d.cuEventSynchronize, "cuEventSynchronize"},
		{&d.cuEventElapsedTime, "cuEventElapsedTime"},
		{&d.cuModuleLoadData, "cuModuleLoadData"},
		{&d.cuModuleUnload, "cuModuleUnload"},
		{&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
		{&d.cuGetErrorString, "cuGetErrorString"},
	} {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			purego.Dlclose(lib)
			return nil, fmt.Errorf("cuda: CUDA driver %s lacks %s (too old?): %w", path, f.name, err)
		}
		purego.RegisterFunc(f.fn, sym)
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		purego.Dlclose(lib)
		return nil, err
	}
	return d, nil
}

// check turns a CUresult into an error naming the call.
func (d *driver) check(call string, r cuResult) error {
	if r == 0 {
		return nil
	}
	var s *byte
	msg := "unknown error"
	if d.cuGetErrorString(r, &s) == 0 && s != nil {
		msg = cString(s)
	}
	return fmt.Errorf("cuda: %s: %s (CUresult %d)", call, msg, r)
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	var b []byte
	for ; *p != 0; p = (*byte)(unsafe.Add(unsafe.Pointer(p), 1)) {
		b = append(b, *p)
	}
	return string(b)
}

// deviceInfo is what the backend checks before placing a model.
type deviceInfo struct {
	count        int
	name         string
	total        int64
	major, minor int
	sms          int
}

// device checks the device number against the driver's count and reads
// its name, memory and compute capability.
func (d *driver) device(n int) (cuDevice, deviceInfo, error) {
	var info deviceInfo
	var count int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&count)); err != nil {
		return 0, info, err
	}
	info.count = int(count)
	if err := checkDevice(n, info.count); err != nil {
		return 0, info, err
	}
	var dev cuDevice
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(n))); err != nil {
		return 0, info, err
	}
	var name [256]byte
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)-1), dev)); err != nil {
		return 0, info, err
	}
	info.name = cString(&name[0])
	var total uintptr
	if err := d.check("cuDeviceTotalMem", d.cuDeviceTotalMem(&total, dev)); err != nil {
		return 0, info, err
	}
	info.total = int64(total)
	for _, a := range []struct {
		v    *int
		attr int32
	}{{&info.major, attrComputeMajor}, {&info.minor, attrComputeMinor}, {&info.sms, attrSMCount}} {
		var v int32
		if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a.attr, dev)); err != nil {
			return 0, info, err
		}
		*a.v = int(v)
	}
	return dev, info, nil
}

// onThread runs f with ctx current on a locked OS thread: a CUDA context is
// current per thread, and goroutines move between threads.
func (d *driver) onThread(ctx cuContext, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(ctx)); err != nil {
		return err
	}
	return f()
}

// launcher packs kernel arguments for cuLaunchKernel: each argument is
// stored in a 64-bit slot (the driver reads as many bytes as the kernel's
// parameter has, and the machine is little endian), and params points at
// the slots. launch pins it during the call, so that the driver may read
// the Go pointers in params.
type launcher struct {
	slots  [24]uint64
	params [24]unsafe.Pointer
}

func newLauncher() *launcher {
	l := &launcher{}
	for i := range l.slots {
		l.params[i] = unsafe.Pointer(&l.slots[i])
	}
	return l
}

// arg is one kernel argument: a devPtr, an int32 or a float32.
type arg = any

// launch runs f on grid×block threads with shmem bytes of dynamic shared
// memory, on stream s.
func (d *driver) launch(l *launcher, name string, f cuFunction, grid, block [3]uint32, shmem uint32, s cuStream, args ...arg) error {
	if len(args) > len(l.slots) {
		return fmt.Errorf("cuda: kernel %s: %d arguments, at most %d", name, len(args), len(l.slots))
	}
	for i, a := range args {
		switch v := a.(type) {
		case devPtr:
			l.slots[i] = uint64(v)
		case int32:
			l.slots[i] = uint64(uint32(v))
		case int:
			l.slots[i] = uint64(uint32(int32(v)))
		case float32:
			l.slots[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: kernel %s: argument %d has Go type %T", name, i, a)
		}
	}
	var pin runtime.Pinner
	pin.Pin(l)
	r := d.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, s, unsafe.Pointer(&l.params[0]), nil)
	pin.Unpin()
	return d.check("cuLaunchKernel "+name, r)
}
