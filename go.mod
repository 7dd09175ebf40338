module github.com/smolgo/smolgo

go 1.26.0

require (
	github.com/x448/float16 v0.8.4
	golang.org/x/sys v0.49.0
)

require github.com/ebitengine/purego v0.11.3
