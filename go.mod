module github.com/smolgo/smolgo

go 1.26.0

require (
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
