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
	"github.com/smolgo/smolgo/vision"
)

// Several models in one process: `-models-dir DIR` and repeated
// `-model NAME=FILE` make webchat serve a server.Router, which loads each
// model on its first request and unloads it when idle (-models-ttl) or when
// another needs its memory (-models-mem); `-pin NAME` keeps one loaded.

// modelFlag collects the -model flag's values: FILE, or NAME=FILE.
type modelFlag []string

func (m *modelFlag) String() string     { return strings.Join(*m, ",") }
func (m *modelFlag) Set(v string) error { *m = append(*m, v); return nil }

// modelFile is one model the Router serves, before its spec is made: its
// GGUF file and, for a vision model or a model with a draft, the files
// that go with it.
type modelFile struct {
	name, path string
	mmproj     string // the vision projector ("": none)
	draft      string // the draft model for speculative decoding ("": none)
	explicit   bool   // named by -model or a preset: an error if unsupported, not a skip
	opts       modelOptions
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

// A model directory (-models-dir) is read as llama-server's router reads
// one (llama.cpp's common/preset.cpp): every *.gguf file in it is a model
// named after the file, and every subfolder is one model named after the
// folder, whose files go together:
//
//	models/
//	  Qwen3-8B-Q4_K_M.gguf            a model, "Qwen3-8B-Q4_K_M"
//	  gemma-3-4b-it/                  a vision model, "gemma-3-4b-it"
//	    gemma-3-4b-it-Q8_0.gguf       its text model
//	    mmproj-F16.gguf               its projector: the name has "mmproj"
//	  Qwen3-8B-fast/                  a model with a draft, "Qwen3-8B-fast"
//	    Qwen3-8B-Q4_K_M.gguf          the model
//	    draft-Qwen3-0.6B-Q8_0.gguf    its draft: the name starts with "draft-"
//
// A projector (a name with "mmproj") or a draft (a name that starts with
// "draft-") goes with the model in its folder; at the top of the directory
// it is not a model and is skipped with a log line, as llama-server skips
// its companion files. llama-server's own drafts in a folder are files
// named mtp-, dspark- or dflash-* (the sidecar heads of its speculative
// decoders, which smolgo does not run); smolgo's draft is a whole model of
// the same vocabulary, which llama-server gives in a preset's model-draft.
// Files of those prefixes are skipped with a log line. -model DIR reads
// DIR as such a folder.

// draftPrefix starts the name of a model's draft in its folder.
const draftPrefix = "draft-"

// sidecarPrefixes start the names of llama-server's draft heads (MTP,
// DFlash), which smolgo does not run.
var sidecarPrefixes = []string{"mtp-", "dspark-", "dflash-"}

// companion says what a GGUF file's name makes it beside a model:
// "mmproj", "draft", "sidecar", or "" for a model.
func companion(name string) string {
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "mmproj"):
		return "mmproj"
	case strings.HasPrefix(lower, draftPrefix):
		return "draft"
	}
	for _, p := range sidecarPrefixes {
		if strings.HasPrefix(lower, p) {
			return "sidecar"
		}
	}
	return ""
}

// isGGUF reports whether a file name ends in .gguf (in any case).
func isGGUF(name string) bool { return strings.EqualFold(filepath.Ext(name), ".gguf") }

// modelFiles lists the models the flags name: the -model values in order,
// then the directory's files and folders by name. A directory model whose
// name an earlier model has is skipped with a log line; two -model values
// with one name are an error.
func modelFiles(log *slog.Logger, models []string, dir string) ([]modelFile, error) {
	var out []modelFile
	taken := map[string]string{}
	for _, v := range models {
		mf := modelFile{path: v}
		named := hasName(v)
		if named {
			i := strings.IndexByte(v, '=')
			mf.name, mf.path = v[:i], v[i+1:]
		}
		if st, err := os.Stat(mf.path); err == nil && st.IsDir() {
			folder, err := readModelFolder(log, mf.path, filepath.Base(filepath.Clean(mf.path)))
			if err != nil {
				return nil, fmt.Errorf("-model %s: %w", mf.path, err)
			}
			if named {
				folder.name = mf.name
			}
			mf = folder
		} else if !named {
			mf.name = modelName(v)
		}
		mf.explicit = true
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
		path := filepath.Join(dir, e.Name())
		var mf modelFile
		switch {
		case e.IsDir():
			if mf, err = readModelFolder(log, path, e.Name()); err != nil {
				log.Warn("skipping a model folder", "folder", path, "err", err)
				continue
			}
		case !isGGUF(e.Name()):
			continue
		case companion(e.Name()) != "":
			log.Warn("skipping a file that goes with a model: it belongs in its model's folder", "file", path, "is", companion(e.Name()))
			continue
		default:
			mf = modelFile{name: modelName(e.Name()), path: path}
		}
		if prev, dup := taken[mf.name]; dup {
			log.Warn("skipping a model: another model has its name", "file", mf.path, "name", mf.name, "other", prev)
			continue
		}
		taken[mf.name] = mf.path
		out = append(out, mf)
	}
	return out, nil
}

// readModelFolder reads a model's folder: one model file and, beside it,
// at most one projector and one draft (see companion). A folder without a
// model file, or with two of a kind, is an error that names the files.
func readModelFolder(log *slog.Logger, dir, name string) (modelFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return modelFile{}, err
	}
	var models, mmprojs, drafts []string
	for _, e := range entries {
		if e.IsDir() || !isGGUF(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch companion(e.Name()) {
		case "mmproj":
			mmprojs = append(mmprojs, path)
		case "draft":
			drafts = append(drafts, path)
		case "sidecar":
			log.Warn("not using llama-server's draft head: smolgo drafts with a whole model named "+draftPrefix+"*.gguf", "file", path)
		default:
			models = append(models, path)
		}
	}
	several := func(what string, files []string) error {
		return fmt.Errorf("%s holds %d %s (%s); a model's folder holds one", dir, len(files), what, strings.Join(files, ", "))
	}
	switch {
	case len(models) == 0:
		return modelFile{}, fmt.Errorf("%s holds no model file (a *.gguf whose name has no \"mmproj\" and does not start with %q)", dir, draftPrefix)
	case len(models) > 1:
		return modelFile{}, several("model files", models)
	case len(mmprojs) > 1:
		return modelFile{}, several("projectors (*mmproj*.gguf)", mmprojs)
	case len(drafts) > 1:
		return modelFile{}, several("drafts ("+draftPrefix+"*.gguf)", drafts)
	}
	mf := modelFile{name: name, path: models[0]}
	if len(mmprojs) == 1 {
		mf.mmproj = mmprojs[0]
	}
	if len(drafts) == 1 {
		mf.draft = drafts[0]
	}
	return mf, nil
}

// probed is what probe reads of a model file.
type probed struct {
	kind server.ModelKind
	size int64 // the file's bytes
	embd int   // a chat model's embedding width: its projector's rows
}

// probe says what a GGUF file is to webchat without loading it: the checks
// a load makes (its architecture is one smolgo runs, every tensor is there
// with its shape, and a chat model's tokenizer reads), on the mapped file
// with nothing copied, and its kind from the file's pooling_type (none: a
// chat model; rank: a reranker; mean, cls or last: an embedding model).
func probe(path string) (probed, error) {
	st, err := regularFile(path)
	if err != nil {
		return probed{}, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return probed{}, err
	}
	defer f.Close()
	arch, err := f.Architecture()
	if err != nil {
		return probed{}, err
	}
	if arch == bert.Arch {
		cfg, err := bert.ConfigFromGGUF(f)
		if err != nil {
			return probed{}, err
		}
		w, err := bert.LoadWeights(f, cfg)
		switch {
		case err != nil:
			return probed{}, err
		case cfg.Pooling == backend.PoolDefault:
			return probed{}, errors.New("the BERT file has no pooling_type (an encoder without pooling gives no embedding)")
		case cfg.Pooling == backend.PoolRank && w.Ranks():
			return probed{kind: server.KindRerank, size: st.Size()}, nil
		}
		return probed{kind: server.KindEmbedding, size: st.Size()}, nil
	}
	if _, ok := family.Lookup(arch); !ok {
		return probed{}, fmt.Errorf("unsupported architecture %q (supported: %s, %s)", arch, strings.Join(family.Families(), ", "), bert.Arch)
	}
	cfg, a, err := family.Describe(f)
	if err == nil {
		_, err = llama.LoadWeights(f, cfg, a)
	}
	if err != nil {
		return probed{}, err
	}
	if _, err := tokenizer.FromGGUF(f); err != nil {
		return probed{}, fmt.Errorf("its tokenizer does not read: %w", err)
	}
	p := probed{kind: server.KindChat, size: st.Size(), embd: cfg.Embd}
	if v, err := f.Uint32(arch + ".pooling_type"); err == nil {
		pool, ok, err := backend.PoolingFromGGUF(v)
		switch {
		case err != nil:
			return probed{}, fmt.Errorf("%s.pooling_type: %w", arch, err)
		case pool == backend.PoolRank:
			p.kind = server.KindRerank
		case ok:
			p.kind = server.KindEmbedding
		}
	}
	return p, nil
}

// regularFile stats path and refuses what is not a regular file.
func regularFile(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return st, nil
}

// probeProjector checks, without loading it, that a file is a vision
// projector smolgo runs whose rows are embd wide (the load checks the
// rest), and returns its size.
func probeProjector(path string, embd int) (int64, error) {
	st, err := regularFile(path)
	if err != nil {
		return 0, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if arch, err := f.Architecture(); err != nil || arch != "clip" {
		return 0, fmt.Errorf("%s is not a vision projector (general.architecture %q, want \"clip\")", path, arch)
	}
	typ, err := f.String("clip.projector_type")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if !slices.Contains(vision.Types, typ) {
		return 0, fmt.Errorf("%s: projector type %q is not supported (supported: %s)", path, typ, strings.Join(vision.Types, ", "))
	}
	width, err := f.Uint32("clip.vision.projection_dim")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if int(width) != embd {
		return 0, fmt.Errorf("%s: the projector makes rows %d wide (clip.vision.projection_dim) and the model's embedding is %d wide", path, width, embd)
	}
	return st.Size(), nil
}

// applyPreset gives the models their preset's options: a section named
// after a model sets its options (its model, mmproj and model-draft
// replace the files found), a section of another name is a new model,
// which needs a model key, and [*] applies to every model. Options whose
// flag was given on the command line are left out (the flag wins).
func applyPreset(log *slog.Logger, files []modelFile, p *preset, flagSet map[string]bool) ([]modelFile, error) {
	for i := range files {
		files[i].opts = p.options(nil, flagSet)
	}
	for _, s := range p.models {
		i := slices.IndexFunc(files, func(f modelFile) bool { return f.name == s.name })
		path, ok := s.opts["model"]
		if i < 0 {
			if !ok {
				return nil, fmt.Errorf("%s:%d: [%s] is not a model of -models-dir or -model, so it needs model = FILE", p.path, s.line, s.name)
			}
			files, i = append(files, modelFile{name: s.name}), len(files)
		}
		mf := &files[i]
		mf.explicit = true
		if ok {
			mf.path, mf.mmproj, mf.draft = path, "", ""
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				folder, err := readModelFolder(log, path, s.name)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: [%s]: %w", p.path, s.line, s.name, err)
				}
				mf.path, mf.mmproj, mf.draft = folder.path, folder.mmproj, folder.draft
			}
		}
		if v, ok := s.opts["mmproj"]; ok {
			mf.mmproj = v
		}
		if v, ok := s.opts["spec-draft-model"]; ok {
			mf.draft = v
		}
		mf.opts = p.options(s.opts, flagSet)
	}
	return files, nil
}

// loadSettings are the flags every model of a Router is loaded with: draft
// holds the -draft-max, -draft-min and -draft-p-min limits and the draft's
// options, for the models whose folder has a draft.
type loadSettings struct {
	ctxLen, threads int
	opts            []engine.Option
	draft           draftSettings
	preset          string          // -models-preset's file ("": none)
	flagSet         map[string]bool // the flags given on the command line, which win over the preset
}

// probeModel probes a model's files and returns its spec without its Load:
// its kind, its bytes (the model's file, its projector's and its draft's)
// and whether it takes images. A projector or draft beside an embedding
// model, a draft that is not a chat model, or a projector that does not
// fit is an error.
func probeModel(mf modelFile) (server.ModelSpec, error) {
	p, err := probe(mf.path)
	if err != nil {
		return server.ModelSpec{}, err
	}
	spec := server.ModelSpec{Name: mf.name, Kind: p.kind, Bytes: p.size}
	if p.kind != server.KindChat && (mf.mmproj != "" || mf.draft != "") {
		return server.ModelSpec{}, fmt.Errorf("%s is not a chat model (its kind is %s): a projector or a draft goes with a chat model", mf.path, p.kind)
	}
	if mf.mmproj != "" {
		n, err := probeProjector(mf.mmproj, p.embd)
		if err != nil {
			return server.ModelSpec{}, err
		}
		spec.Bytes += n
		spec.Images = true
	}
	if mf.draft != "" {
		d, err := probe(mf.draft)
		if err != nil {
			return server.ModelSpec{}, fmt.Errorf("draft %s: %w", mf.draft, err)
		}
		if d.kind != server.KindChat {
			return server.ModelSpec{}, fmt.Errorf("draft %s is not a chat model (its kind is %s)", mf.draft, d.kind)
		}
		spec.Bytes += d.size
	}
	return spec, nil
}

// modelSpecs probes the files and makes the Router's specs: unsupported
// files of the directory are skipped with a log line, an unsupported
// -model is an error, and every -pin name must be one of them.
func modelSpecs(log *slog.Logger, notes io.Writer, files []modelFile, pins []string, ls loadSettings) ([]server.ModelSpec, error) {
	var specs []server.ModelSpec
	for _, mf := range files {
		spec, err := probeModel(mf)
		if err != nil {
			if mf.explicit {
				return nil, fmt.Errorf("-model %s: %w", mf.path, err)
			}
			log.Warn("skipping a model webchat cannot serve", "name", mf.name, "file", mf.path, "err", err)
			continue
		}
		spec.Pinned = mf.opts.pin || slices.Contains(pins, mf.name)
		opts := slices.Clone(ls.opts)
		if mf.mmproj != "" {
			opts = append(opts, engine.WithProjector(mf.mmproj))
		}
		if mf.opts.templateFile != "" {
			src, err := os.ReadFile(mf.opts.templateFile)
			if err != nil {
				return nil, fmt.Errorf("model %s: chat-template-file: %w", mf.name, err)
			}
			opts = append(opts, engine.WithChatTemplate(string(src)))
		}
		ctxLen, draft := ls.ctxLen, ls.draft
		draft.path = mf.draft
		if o := mf.opts; o.ctxLen != nil {
			ctxLen = *o.ctxLen
		}
		if o := mf.opts; o.draftMax != nil {
			draft.max = *o.draftMax
		}
		if o := mf.opts; o.draftMin != nil {
			draft.min = *o.draftMin
		}
		if o := mf.opts; o.draftPMin != nil {
			draft.pMin = *o.draftPMin
		}
		spec.Load = func(ctx context.Context) (server.Engine, func(), error) {
			return loadModel(ctx, log, notes, mf.path, mf.name, ctxLen, ls.threads, draft, opts...)
		}
		specs = append(specs, spec)
		log.Info("model found", "name", mf.name, "kind", spec.Kind, "file", mf.path, "mmproj", mf.mmproj, "draft", mf.draft, "bytes", spec.Bytes)
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
	if ls.preset != "" {
		p, err := readPreset(ls.preset)
		if err == nil {
			files, err = applyPreset(log, files, p, ls.flagSet)
		}
		if err != nil {
			fmt.Fprintf(stderr, "webchat: %v\n", err)
			return 2
		}
	}
	specs, err := modelSpecs(log, stdout, files, pins, ls)
	if err != nil {
		fmt.Fprintf(stderr, "webchat: %v\n", err)
		return 1
	}
	if rcfg.Server.MaxBodyBytes == 0 && slices.ContainsFunc(specs, func(s server.ModelSpec) bool { return s.Images }) {
		rcfg.Server.MaxBodyBytes = visionBodyBytes
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
		extra := ""
		if s.Images {
			extra += ", takes images"
		}
		if f := files[slices.IndexFunc(files, func(f modelFile) bool { return f.name == s.Name })]; f.draft != "" {
			extra += ", draft " + filepath.Base(f.draft)
		}
		fmt.Fprintf(stdout, "  %-32s %s, %s%s%s\n", s.Name, s.Kind, fmtSize(s.Bytes), extra, pinned)
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
