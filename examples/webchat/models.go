package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/bert"
	"github.com/smolgo/smolgo/server"
	"github.com/smolgo/smolgo/tokenizer"
)

// Several models in one process: `-models-dir DIR` and repeated
// `-model NAME=FILE` make webchat serve a server.Router, which loads each
// model on its first request and unloads it when idle (-models-ttl) or when
// another needs its memory (-models-mem); `-pin NAME` keeps one loaded.

// modelFlag collects the -model flag's values: FILE, or NAME=FILE.
type modelFlag []string

func (m *modelFlag) String() string     { return strings.Join(*m, ",") }
func (m *modelFlag) Set(v string) error { *m = append(*m, v); return nil }

// modelFile is one model the Router serves, before its spec is made.
type modelFile struct {
	name, path string
	explicit   bool // named by -model: an error if unsupported, not a skip
}

// routerMode reports whether the flags ask for several models: a directory,
// a NAME=FILE, or more than one -model. A single -model FILE serves one
// model as it always has.
func routerMode(models []string, dir string) bool {
	if dir != "" || len(models) > 1 {
		return true
	}
	return len(models) == 1 && hasName(models[0])
}

// hasName reports whether a -model value is NAME=FILE: it has an "=" and is
// not itself the name of an existing file.
func hasName(v string) bool {
	i := strings.IndexByte(v, '=')
	if i <= 0 {
		return false
	}
	_, err := os.Stat(v)
	return err != nil
}

// modelName is a file's default model id: its name without .gguf.
func modelName(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// modelFiles lists the models the flags name: the -model values in order,
// then the directory's *.gguf files by name. A directory file whose name
// an earlier model has is skipped with a log line; two -model values with
// one name are an error.
func modelFiles(log *slog.Logger, models []string, dir string) ([]modelFile, error) {
	var out []modelFile
	taken := map[string]string{}
	for _, v := range models {
		mf := modelFile{path: v, explicit: true}
		if hasName(v) {
			i := strings.IndexByte(v, '=')
			mf.name, mf.path = v[:i], v[i+1:]
		} else {
			mf.name = modelName(v)
		}
		if prev, dup := taken[mf.name]; dup {
			return nil, fmt.Errorf("-model: two models are named %s (%s and %s); name one with -model NAME=FILE", mf.name, prev, mf.path)
		}
		taken[mf.name] = mf.path
		out = append(out, mf)
	}
	if dir == "" {
		return out, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("-models-dir: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".gguf") {
			continue
		}
		mf := modelFile{name: modelName(e.Name()), path: filepath.Join(dir, e.Name())}
		if prev, dup := taken[mf.name]; dup {
			log.Warn("skipping a model file: another model has its name", "file", mf.path, "name", mf.name, "other", prev)
			continue
		}
		taken[mf.name] = mf.path
		out = append(out, mf)
	}
	return out, nil
}

// probe says what a GGUF file is to webchat without loading it: the checks
// a load makes (its architecture is one smolgo runs, every tensor is there
// with its shape, and a chat model's tokenizer reads), on the mapped file
// with nothing copied, and its kind from the file's pooling_type (none: a
// chat model; rank: a reranker; mean, cls or last: an embedding model).
func probe(path string) (server.ModelKind, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	arch, err := f.Architecture()
	if err != nil {
		return "", 0, err
	}
	if arch == bert.Arch {
		cfg, err := bert.ConfigFromGGUF(f)
		if err != nil {
			return "", 0, err
		}
		w, err := bert.LoadWeights(f, cfg)
		switch {
		case err != nil:
			return "", 0, err
		case cfg.Pooling == backend.PoolDefault:
			return "", 0, errors.New("the BERT file has no pooling_type (an encoder without pooling gives no embedding)")
		case cfg.Pooling == backend.PoolRank && w.Ranks():
			return server.KindRerank, st.Size(), nil
		}
		return server.KindEmbedding, st.Size(), nil
	}
	if _, ok := family.Lookup(arch); !ok {
		return "", 0, fmt.Errorf("unsupported architecture %q (supported: %s, %s)", arch, strings.Join(family.Families(), ", "), bert.Arch)
	}
	cfg, a, err := family.Describe(f)
	if err == nil {
		_, err = llama.LoadWeights(f, cfg, a)
	}
	if err != nil {
		return "", 0, err
	}
	if _, err := tokenizer.FromGGUF(f); err != nil {
		return "", 0, fmt.Errorf("its tokenizer does not read: %w", err)
	}
	kind := server.KindChat
	if v, err := f.Uint32(arch + ".pooling_type"); err == nil {
		pool, ok, err := backend.PoolingFromGGUF(v)
		switch {
		case err != nil:
			return "", 0, fmt.Errorf("%s.pooling_type: %w", arch, err)
		case pool == backend.PoolRank:
			kind = server.KindRerank
		case ok:
			kind = server.KindEmbedding
		}
	}
	return kind, st.Size(), nil
}

// loadSettings are the flags every model of a Router is loaded with.
type loadSettings struct {
	ctxLen, threads int
	opts            []engine.Option
}

// modelSpecs probes the files and makes the Router's specs: unsupported
// files of the directory are skipped with a log line, an unsupported
// -model is an error, and every -pin name must be one of them.
func modelSpecs(log *slog.Logger, notes io.Writer, files []modelFile, pins []string, ls loadSettings) ([]server.ModelSpec, error) {
	var specs []server.ModelSpec
	for _, mf := range files {
		kind, size, err := probe(mf.path)
		if err != nil {
			if mf.explicit {
				return nil, fmt.Errorf("-model %s: %w", mf.path, err)
			}
			log.Warn("skipping a file webchat cannot serve", "file", mf.path, "err", err)
			continue
		}
		mf := mf
		specs = append(specs, server.ModelSpec{Name: mf.name, Kind: kind, Bytes: size, Pinned: slices.Contains(pins, mf.name),
			Load: func(ctx context.Context) (server.Engine, func(), error) {
				return loadModel(ctx, log, notes, mf.path, mf.name, ls.ctxLen, ls.threads, draftSettings{}, ls.opts...)
			}})
		log.Info("model found", "name", mf.name, "kind", kind, "file", mf.path, "bytes", size)
	}
	if len(specs) == 0 {
		return nil, errors.New("no model to serve: no supported GGUF file among the -model and -models-dir files (see the log)")
	}
	for _, p := range pins {
		if !slices.ContainsFunc(specs, func(s server.ModelSpec) bool { return s.Name == p }) {
			var names []string
			for _, s := range specs {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("-pin %s: no such model (the models are %s)", p, strings.Join(names, ", "))
		}
	}
	return specs, nil
}

// serveModels serves the models the flags name through a server.Router
// until ctx ends; it returns the exit status.
func serveModels(ctx context.Context, log *slog.Logger, stdout, stderr io.Writer, addr string, models []string, dir string,
	pins []string, rcfg server.RouterConfig, ls loadSettings) int {
	files, err := modelFiles(log, models, dir)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 2
	}
	specs, err := modelSpecs(log, stdout, files, pins, ls)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	rt, err := server.NewRouter(specs, rcfg)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 2
	}
	defer rt.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Serving %d models at http://%s/  (OpenAI API at http://%s/v1; each loads on its first request; Ctrl-C to stop)\n",
		len(specs), ln.Addr(), ln.Addr())
	for _, s := range specs {
		pinned := ""
		if s.Pinned {
			pinned = ", pinned"
		}
		fmt.Fprintf(stdout, "  %-32s %s, %s%s\n", s.Name, s.Kind, fmtSize(s.Bytes), pinned)
	}
	if err := rt.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	return 0
}

// fmtSize writes a file size for people.
func fmtSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
