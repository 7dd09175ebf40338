package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// -models-preset FILE reads per-model options from an INI file, as
// llama-server's --models-preset does (llama.cpp's common/preset.cpp):
//
//	version = 1
//
//	[*]                         ; every model
//	c = 4096
//
//	[Qwen3-8B-Q4_K_M]           ; a model of -models-dir or -model
//	model-draft = /models/Qwen3-0.6B-Q8_0.gguf
//	spec-draft-n-max = 3
//
//	[my-model]                  ; a new model: it needs model
//	model = /models/other.gguf
//	load-on-startup = true
//
// A key is a llama-server argument without its dashes (long or short
// form); webchat reads the ones listed in presetKeys and refuses others,
// naming the line. A model's section overrides [*], and a flag given on
// the command line overrides both, as in llama-server. Paths are relative
// to the working directory.

// presetKey is an option a preset may set.
type presetKey struct {
	names  []string // the first is the canonical one
	kind   string   // "path", "int", "float" or "bool"
	model  bool     // only in a model's section, not in [*]
	flag   string   // the webchat flag it stands for ("": none), which wins when given
	usage  string
	minInt int
}

// presetKeys are the keys webchat reads, by llama-server's names.
var presetKeys = []presetKey{
	{names: []string{"model", "m"}, kind: "path", model: true, usage: "the model's file or folder"},
	{names: []string{"mmproj", "mm"}, kind: "path", model: true, usage: "its vision projector"},
	{names: []string{"spec-draft-model", "md", "model-draft"}, kind: "path", model: true, usage: "its draft model"},
	{names: []string{"spec-draft-n-max", "draft-max"}, kind: "int", flag: "draft-max", minInt: 1},
	{names: []string{"spec-draft-n-min", "draft-min"}, kind: "int", flag: "draft-min"},
	{names: []string{"spec-draft-p-min", "draft-p-min"}, kind: "float", flag: "draft-p-min"},
	{names: []string{"ctx-size", "c"}, kind: "int", flag: "ctx"},
	{names: []string{"chat-template-file"}, kind: "path", flag: "chat-template-file"},
	{names: []string{"load-on-startup"}, kind: "bool"},
}

// lookupPresetKey finds a key by any of its names.
func lookupPresetKey(name string) (presetKey, bool) {
	for _, k := range presetKeys {
		if slices.Contains(k.names, name) {
			return k, true
		}
	}
	return presetKey{}, false
}

// presetSection is one [NAME] of a preset file: its options by canonical
// key, in the file's order of sections.
type presetSection struct {
	name string
	line int
	opts map[string]string
}

// preset is a read preset file: [*] and the models' sections.
type preset struct {
	path   string
	global map[string]string
	models []presetSection
}

// readPreset reads and checks a preset file: every key known, every
// value of its kind. Errors name the file and line.
func readPreset(path string) (*preset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-models-preset: %w", err)
	}
	defer f.Close()
	p := &preset{path: path, global: map[string]string{}}
	var cur map[string]string // nil before the first section
	global := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		where := fmt.Sprintf("%s:%d", path, n)
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			name, rest, ok := strings.Cut(line[1:], "]")
			name = strings.TrimSpace(name)
			if rest = strings.TrimSpace(rest); !ok || name == "" || (rest != "" && rest[0] != ';' && rest[0] != '#') {
				return nil, fmt.Errorf("%s: a section is [NAME] (or [*] for every model): %q", where, line)
			}
			global = name == "*"
			if global {
				cur = p.global
				continue
			}
			if slices.ContainsFunc(p.models, func(s presetSection) bool { return s.name == name }) {
				return nil, fmt.Errorf("%s: a second [%s] section", where, name)
			}
			p.models = append(p.models, presetSection{name: name, line: n, opts: map[string]string{}})
			cur = p.models[len(p.models)-1].opts
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: want key = value or [NAME]: %q", where, line)
		}
		key, value = strings.TrimSpace(key), stripComment(value)
		if key == "version" {
			continue // reserved, as llama-server reads it
		}
		k, known := lookupPresetKey(key)
		switch {
		case !known:
			var names []string
			for _, k := range presetKeys {
				names = append(names, k.names[0])
			}
			return nil, fmt.Errorf("%s: %q is not an option webchat reads from a preset (it reads %s)", where, key, strings.Join(names, ", "))
		case cur == nil:
			return nil, fmt.Errorf("%s: %s is outside a section; put it under [*] or a model's [NAME]", where, key)
		case global && k.model:
			return nil, fmt.Errorf("%s: %s is a model's own (%s); it goes in the model's [NAME] section, not [*]", where, key, k.usage)
		}
		if err := checkPresetValue(k, value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", where, key, err)
		}
		cur[k.names[0]] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-models-preset: %w", err)
	}
	return p, nil
}

// stripComment trims a value and cuts a comment after it (a ; or # after
// a space, as llama.cpp's preset grammar reads values).
func stripComment(v string) string {
	v = strings.TrimSpace(v)
	if v != "" && (v[0] == ';' || v[0] == '#') {
		return ""
	}
	for i := 1; i < len(v); i++ {
		if (v[i] == ';' || v[i] == '#') && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i])
		}
	}
	return v
}

// checkPresetValue checks that a value reads as its key's kind.
func checkPresetValue(k presetKey, v string) error {
	switch k.kind {
	case "path":
		if v == "" {
			return fmt.Errorf("an empty path")
		}
	case "int":
		n, err := strconv.Atoi(v)
		if err != nil || n < k.minInt {
			return fmt.Errorf("%q is not a whole number of at least %d", v, k.minInt)
		}
	case "float":
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || f > 1 {
			return fmt.Errorf("%q is not a probability from 0 to 1", v)
		}
	case "bool":
		if _, err := parsePresetBool(v); err != nil {
			return err
		}
	}
	return nil
}

// parsePresetBool reads a boolean as llama.cpp's is_truthy/is_falsey do.
func parsePresetBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "on", "yes", "enabled":
		return true, nil
	case "0", "false", "off", "no", "disabled":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// modelOptions are the options a preset gives one model, [*] merged under
// its own section's, as values of their kind; a nil field was not given
// (or its flag was given on the command line, which wins).
type modelOptions struct {
	ctxLen             *int
	draftMax, draftMin *int
	draftPMin          *float64
	templateFile       string
	pin                bool
}

// options merges [*] and a model's section (nil: none) into its options,
// leaving out those whose flag was given on the command line.
func (p *preset) options(section map[string]string, flagSet map[string]bool) modelOptions {
	merged := map[string]string{}
	for k, v := range p.global {
		merged[k] = v
	}
	for k, v := range section {
		merged[k] = v
	}
	var o modelOptions
	for name, v := range merged {
		k, _ := lookupPresetKey(name)
		if k.flag != "" && flagSet[k.flag] {
			continue
		}
		switch name { // the values were checked by readPreset
		case "ctx-size":
			n, _ := strconv.Atoi(v)
			o.ctxLen = &n
		case "spec-draft-n-max":
			n, _ := strconv.Atoi(v)
			o.draftMax = &n
		case "spec-draft-n-min":
			n, _ := strconv.Atoi(v)
			o.draftMin = &n
		case "spec-draft-p-min":
			f, _ := strconv.ParseFloat(v, 64)
			o.draftPMin = &f
		case "chat-template-file":
			o.templateFile = v
		case "load-on-startup":
			o.pin, _ = parsePresetBool(v)
		}
	}
	return o
}
