package tensor

// The float kernels' assembly that a program writes (gen_packed.go says
// what and why); `go generate ./tensor` runs it, whatever the machine's
// architecture, and TestGeneratedUpToDate fails when the committed file
// differs from what it writes.
//
//go:generate go run gen_packed.go
