package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/smolgo/smolgo/internal/chatfmt"
)

// tool is one function as llama.cpp hands it to the template: its name, its
// description ("" when it has none) and its parameters schema ({} when it
// has none).
type tool struct {
	name, description string
	parameters        value
}

// readTools reads function definitions in the OpenAI form ({"type":
// "function", "function": {...}}) or bare function objects.
func readTools(raw []json.RawMessage) ([]tool, error) {
	tools := make([]tool, 0, len(raw))
	for i, r := range raw {
		v, err := chatfmt.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("chat: Tools[%d]: %w", i, err)
		}
		f := defined(v)
		if fn := f.attr("function"); fn.defined {
			f = fn
		}
		if f.v.Kind != chatfmt.Object {
			return nil, fmt.Errorf("chat: Tools[%d]: the function is not a JSON object", i)
		}
		name, desc := f.attr("name"), f.attr("description")
		if name.v.Kind != chatfmt.String || name.v.Str == "" {
			return nil, fmt.Errorf("chat: Tools[%d]: the function has no name", i)
		}
		t := tool{name: name.v.Str, parameters: f.attr("parameters")}
		switch {
		case !desc.defined:
		case desc.v.Kind == chatfmt.String:
			t.description = desc.v.Str
		default:
			return nil, fmt.Errorf("chat: Tools[%d] (%s): the description is not a string", i, t.name)
		}
		if !t.parameters.defined {
			t.parameters = defined(chatfmt.Value{Kind: chatfmt.Object})
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// namespace writes the template's render_tool_namespace("functions", tools):
// each function as a TypeScript-like type declaration with its
// description and its parameters' descriptions as comments.
func namespace(tools []tool) (string, error) {
	var b strings.Builder
	b.WriteString("## functions\n\nnamespace functions {\n\n")
	for _, t := range tools {
		b.WriteString("// " + t.description + "\n")
		b.WriteString("type " + t.name + " = ")
		params := t.parameters
		props := params.attr("properties")
		if !params.truthy() || !props.truthy() {
			b.WriteString("() => any;\n\n")
			continue
		}
		if props.v.Kind != chatfmt.Object {
			return "", fmt.Errorf("chat: tool %s: parameters.properties is not an object", t.name)
		}
		required := params.attr("required")
		b.WriteString("(_: {\n")
		for i, name := range props.v.Keys {
			spec := defined(props.v.Items[i])
			if d := spec.attr("description"); d.truthy() {
				s, err := concat(d)
				if err != nil {
					return "", fmt.Errorf("chat: tool %s: parameter %s: description: %w", t.name, name, err)
				}
				b.WriteString("// " + s + "\n")
			}
			b.WriteString(name)
			if err := optional(&b, name, required); err != nil {
				return "", fmt.Errorf("chat: tool %s: parameters.required: %w", t.name, err)
			}
			b.WriteString(": ")
			ts, err := typeScript(spec)
			if err != nil {
				return "", fmt.Errorf("chat: tool %s: parameter %s: %w", t.name, name, err)
			}
			b.WriteString(ts)
			if d := spec.attr("default"); d.defined {
				switch {
				case spec.attr("enum").truthy(), spec.attr("oneOf").truthy():
					s, err := concat(d)
					if err != nil {
						return "", fmt.Errorf("chat: tool %s: parameter %s: default: %w", t.name, name, err)
					}
					if spec.attr("enum").truthy() {
						b.WriteString(", ")
					}
					b.WriteString("// default: " + s)
				default:
					b.WriteString(", // default: " + tojson(d.v))
				}
			}
			b.WriteString(",\n")
		}
		b.WriteString("}) => any;\n\n")
	}
	b.WriteString("} // namespace functions")
	return b.String(), nil
}

// optional writes "?" when name is not in required (the template's
// `name not in (required or [])`).
func optional(b *strings.Builder, name string, required value) error {
	in, err := required.contains(name)
	if err != nil {
		return err
	}
	if !in {
		b.WriteString("?")
	}
	return nil
}

// The white space the template's indentation leaves in two places: before
// the type of an object's property, and before a oneOf variant's default.
const (
	propertyIndent = "\n                "
	defaultIndent  = "                    "
)

// typeScript is the template's render_typescript_type: a JSON schema as a
// TypeScript-like type.
func typeScript(spec value) (string, error) {
	typ := spec.attr("type")
	nullable := ""
	if spec.attr("nullable").truthy() {
		nullable = " | null"
	}
	switch {
	case typ.is("array"):
		items := spec.attr("items")
		if !items.truthy() {
			// jinja2 finds dict.items, a method, where the key is
			// missing: also "any[]".
			return "any[]" + nullable, nil
		}
		it := items.attr("type")
		switch {
		case it.is("string"):
			return "string[]" + nullable, nil
		case it.is("number"), it.is("integer"):
			return "number[]" + nullable, nil
		case it.is("boolean"):
			return "boolean[]" + nullable, nil
		}
		inner, err := typeScript(items)
		if err != nil {
			return "", err
		}
		if inner == "object | object" || utf8.RuneCountInString(inner) > 50 {
			return "any[]" + nullable, nil
		}
		return inner + "[]" + nullable, nil
	case typ.defined && typ.v.Kind == chatfmt.Array && len(typ.v.Items) > 0:
		parts := make([]string, len(typ.v.Items))
		for i, x := range typ.v.Items {
			parts[i] = chatfmt.PyStr(x)
		}
		return strings.Join(parts, " | "), nil
	case spec.attr("oneOf").truthy():
		return oneOf(spec.attr("oneOf"))
	case typ.is("string"):
		if enum := spec.attr("enum"); enum.truthy() {
			vals, err := enum.iterate()
			if err != nil {
				return "", fmt.Errorf("enum: %w", err)
			}
			parts := make([]string, len(vals))
			for i, x := range vals {
				parts[i] = chatfmt.PyStr(x)
			}
			return `"` + strings.Join(parts, `" | "`) + `"`, nil
		}
		return "string" + nullable, nil
	case typ.is("number"), typ.is("integer"):
		return "number", nil
	case typ.is("boolean"):
		return "boolean", nil
	case typ.is("object"):
		props := spec.attr("properties")
		if !props.truthy() {
			return "object", nil
		}
		if props.v.Kind != chatfmt.Object {
			return "", fmt.Errorf("properties is not an object")
		}
		required := spec.attr("required")
		var b strings.Builder
		b.WriteString("{\n")
		for i, name := range props.v.Keys {
			b.WriteString(name)
			if err := optional(&b, name, required); err != nil {
				return "", fmt.Errorf("required: %w", err)
			}
			b.WriteString(": " + propertyIndent)
			ts, err := typeScript(defined(props.v.Items[i]))
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			b.WriteString(ts)
			if i < len(props.v.Keys)-1 {
				b.WriteString(", ")
			}
		}
		b.WriteString("}")
		return b.String(), nil
	}
	return "any", nil
}

// oneOf is the oneOf branch of render_typescript_type: the variants joined
// by " | ", each with its description and default as comments. (The
// template means to write "any" for a union with object variants, but its
// flag is set inside the for loop, a scope of its own in Jinja, and stays
// false.)
func oneOf(alts value) (string, error) {
	vals, err := alts.iterate()
	if err != nil {
		return "", fmt.Errorf("oneOf: %w", err)
	}
	var b strings.Builder
	for i, x := range vals {
		variant := defined(x)
		ts, err := typeScript(variant)
		if err != nil {
			return "", err
		}
		b.WriteString(ts)
		if d := variant.attr("description"); d.truthy() {
			s, err := concat(d)
			if err != nil {
				return "", fmt.Errorf("oneOf[%d]: description: %w", i, err)
			}
			b.WriteString("// " + s)
		}
		if d := variant.attr("default"); d.defined {
			b.WriteString(defaultIndent + "// default: " + tojson(d.v))
		}
		if i < len(vals)-1 {
			b.WriteString(" | \n")
		}
	}
	return b.String(), nil
}
