package grammar

import (
	"context"
	"strings"
	"testing"
)

func TestSchemaMatch(t *testing.T) {
	tests := []struct {
		name, schema string
		cases        []matchCase
	}{
		{"nested arrays", `{"type":"array","items":{"type":"array","items":{"type":"number"},"maxItems":3},"minItems":1}`, []matchCase{
			{`[[1,2],[3e2,-0.5E-3],[]]`, true, true},
			{`[ [ 1 , 2 ] ]`, true, true},
			{"[\n  [1],\n  [2]\n]", true, true},
			{`[]`, false, false}, // minItems 1
			{`[[1,2,3,4]]`, false, false},
			{`[[1,2],[3]`, true, false},
			{`[[1,2]]]`, false, false},
			{`[["a"]]`, false, false},
		}},
		{"escaped strings", `{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`, []matchCase{
			{`{"s":"plain"}`, true, true},
			{`{"s":"quote \" backslash \\ slash \/ controls \b\f\n\r\t"}`, true, true},
			{`{"s":"unicode \u00e9\uD83D\uDE00 and raw é😀"}`, true, true},
			{`{"s":"bad \x escape"}`, false, false},
			{`{"s":"short \u12G4"}`, false, false},
			{"{\"s\":\"raw\nnewline\"}", false, false},
			{"{\"s\":\"raw\ttab\"}", false, false},
			{"{\"s\":\"bad utf-8 \xff\"}", false, false},
			{`{"s":"unfinished \`, true, false},
			{`{"s":"x","t":1}`, false, false}, // no additional properties are generated
		}},
		{"numbers with exponents", `{"type":"array","items":{"type":"number"}}`, []matchCase{
			{`[0,-0,1.5,1e5,1E+5,-2.5e-10,123456789]`, true, true},
			{`[01]`, false, false}, {`[1.]`, false, false}, {`[.5]`, false, false},
			{`[1e]`, false, false}, {`[+1]`, false, false}, {`[1e+]`, false, false},
			{`[1e999]`, false, false}, // exponents have at most two digits (float64 range)
			{`[1e99]`, true, true},
		}},
		{"integers", `{"type":"integer"}`, []matchCase{
			{`42`, true, true}, {`-7`, true, true}, {`0`, true, true},
			{`1.0`, false, false}, {`1e3`, false, false}, {`007`, false, false}, {`-`, true, false},
		}},
		{"enum and const", `{"type":"object","properties":{"c":{"enum":["red","gr\"een",3,null,{"k":[1]}]},"v":{"const":"fixed"}},"required":["c","v"]}`, []matchCase{
			{`{"c":"red","v":"fixed"}`, true, true},
			{`{"c":"gr\"een","v":"fixed"}`, true, true},
			{`{"c":3,"v":"fixed"}`, true, true},
			{`{"c":null,"v":"fixed"}`, true, true},
			{`{"c":{"k":[1]},"v":"fixed"}`, true, true},
			{`{"c":"blue"`, false, false},
			{`{"c":"red","v":"other"}`, false, false},
			{`{"v":"fixed","c":"red"}`, false, false}, // schema order
		}},
		{"optional properties", `{"properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"null"}},"required":["b"]}`, []matchCase{
			{`{"b":true}`, true, true},
			{`{"a":1,"b":false}`, true, true},
			{`{"b":true,"c":null}`, true, true},
			{`{"a":1,"b":true,"c":null}`, true, true},
			{`{"a":1}`, false, false},
			{`{"a":1,"c":null}`, false, false},
			{`{}`, false, false},
			{`{"b":true,}`, false, false},
		}},
		{"all optional", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, []matchCase{
			{`{}`, true, true}, {`{"a":""}`, true, true}, {`{ }`, true, true},
		}},
		{"type lists and anyOf", `{"type":"array","items":{"anyOf":[{"type":["string","null"]},{"type":"boolean"}]}}`, []matchCase{
			{`["x",null,true]`, true, true}, {`[1]`, false, false},
		}},
		{"string and array bounds", `{"type":"array","items":{"type":"string","minLength":2,"maxLength":3},"minItems":2,"maxItems":2}`, []matchCase{
			{`["ab","c\"d"]`, true, true}, {`["a","bc"]`, false, false}, {`["abcd","bc"]`, false, false},
			{`["ab"]`, false, false}, {`["ab","cd","ef"]`, false, false},
		}},
		{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`, []matchCase{
			{`{"x":1,"y":-2}`, true, true}, {`{}`, true, true}, {`{"x":"1"}`, false, false},
		}},
		{"any value", `{}`, []matchCase{
			{`{"a":[1,{"b":null}],"c":"d"}`, true, true}, {`"s"`, true, true}, {`[true,false]`, true, true}, {`tru`, true, false},
		}},
		{"references and recursion", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]},
		  "pair":{"type":"array","items":{"$ref":"#/definitions/x~1y"},"minItems":2,"maxItems":2}},
		  "definitions":{"x/y":{"type":"boolean"}},
		  "type":"object","properties":{"tree":{"$ref":"#/$defs/node"},"pair":{"$ref":"#/$defs/pair"},"again":{"$ref":"#/$defs/node"}},"required":["tree","pair"]}`, []matchCase{
			{`{"tree":{"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]},"pair":[true,false]}`, true, true},
			{`{"tree":{"v":1},"pair":[true,false],"again":{"v":0}}`, true, true},
			{`{"tree":{"v":1,"kids":[{"kids":[]}]}`, false, false},
			{`{"tree":{"v":1},"pair":[true]}`, false, false},
		}},
		{"root reference", `{"type":"array","items":{"$ref":"#"},"maxItems":2}`, []matchCase{
			{`[[],[[],[[]]]]`, true, true}, {`[[],[],[]]`, false, false}, {`[1]`, false, false},
		}},
		{"property names are escaped", `{"properties":{"we\"ird\\key":{"type":"boolean"}},"required":["we\"ird\\key"]}`, []matchCase{
			{`{"we\"ird\\key":true}`, true, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			checkMatches(t, g, tt.cases)
		})
	}
}

func TestSchemaUnsupported(t *testing.T) {
	tests := []struct {
		schema, want string
	}{
		{`{"type":"string","pattern":"(a)\\1"}`, `at /pattern: keyword "pattern": position 3: escape \1 is not supported`},
		{`{"type":"string","pattern":"a(?=b)"}`, `position 1: lookaround`},
		{`{"type":"string","pattern":"^a|b"}`, `an anchor applies to one alternative only`},
		{`{"type":"string","pattern":"a^b"}`, `position 1: anchor ^ is supported only at the start`},
		{`{"type":"string","pattern":"\\p{L}"}`, `escape \p is not supported`},
		{`{"type":"string","pattern":"[a-"}`, `unterminated character class`},
		{`{"type":"string","pattern":"^a+$","maxLength":0}`, `no string of the pattern has from 0 to 0 characters`},
		{`{"type":"string","pattern":"^a?$","minLength":2}`, `no string of the pattern has at least 2 characters`},
		{`{"type":"string","format":"email","pattern":"^(?!\\.)a"}`, `at /pattern: keyword "pattern": position 1: lookaround`},
		{`{"type":"string","format":"uuid","pattern":"^x"}`, `no string matches it (and the format beside it)`},
		{`{"type":"string","format":"duration"}`, `at /format: format "duration" is not supported`},
		{`{"type":"number","minimum":0.25,"exclusiveMaximum":0.25}`, `no number lies between the bounds`},
		{`{"type":"number","exclusiveMinimum":1,"maximum":1}`, `no number lies between the bounds`},
		{`{"properties":{"n":{"type":"number","multipleOf":2}}}`, `at /properties/n: keyword "multipleOf"`},
		{`{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}`, `at /oneOf: branches 0 and 1 may match the same value`},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `branches 0 and 1 may match`},
		{`{"oneOf":[{"type":"string"}],"type":"string"}`, `keyword "type" beside oneOf`},
		{`{"allOf":[{"type":"string"}]}`, `keyword "allOf"`},
		{`{"$ref":"#/$defs/x"}`, `at /$ref: "#/$defs/x": no "$defs"`},
		{`{"$ref":"other.json#/a"}`, `only references inside the schema`},
		{`{"$ref":"#/a","type":"string","a":{}}`, `keyword "a" is not supported`},
		{`{"$defs":{"a":{}},"$ref":"#/$defs/a","type":"string"}`, `keyword "type" beside $ref`},
		{`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `can never finish`},
		{`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, `left-recursive`},
		{`{"$defs":{"a":{"properties":{"b":{"$ref":"#/$defs/a"}},"required":["b"]}},"$ref":"#/$defs/a"}`, `can never finish`},
		{`{"type":"array","items":{"not":{}}}`, `at /items: keyword "not"`},
		{`{"type":"array","contains":{}}`, `keyword "contains"`},
		{`{"prefixItems":[{"type":"string"}],"items":false,"minItems":2}`, `minItems 2 is more than the 1 items allowed`},
		{`{"type":"object","propertyNames":{"type":"integer"}}`, `at /propertyNames/type: property names are strings`},
		{`{"type":"object","propertyNames":{"pattern":"^a"},"properties":{"a":{}}}`, `propertyNames beside properties`},
		{`{"type":"object","additionalProperties":{"type":"integer"},"minProperties":2}`, `minProperties above 1`},
		{`{"type":"object","properties":{"a":{}},"minProperties":2}`, `minProperties 2 is more than the 1 properties`},
		{`{"type":"object","properties":{"a":{},"b":{},"c":{}},"required":["a","b","c"],"maxProperties":2}`, `no object has between 0 and 2`},
		{`{"type":"array","uniqueItems":true}`, `keyword "uniqueItems"`},
		{`{"type":"object","patternProperties":{}}`, `keyword "patternProperties"`},
		{`{"type":"date"}`, `at /type: unknown type "date"`},
		{`{"required":["a"],"properties":{"b":{}}}`, `required property "a" is not in properties`},
		{`{"type":"array","minItems":3,"maxItems":2}`, `maxItems 2 is below minItems 3`},
		{`{"type":"string","maxLength":-1}`, `maxLength: must be an integer`},
		{`{"enum":[]}`, `enum: must be a non-empty array`},
		{`false`, `the schema false matches nothing`},
		{`[1]`, `not a schema object`},
		{`{"anyOf":[{"type":"string"}],"type":"string"}`, `keyword "type" beside anyOf`},
		{`{"properties":{"a/b":{"properties":{"c":{"pattern":"x(?!y)"}}}}}`, `at /properties/a~1b/properties/c/pattern: keyword "pattern"`},
		{strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70), `nested deeper than 64`},
	}
	for _, tt := range tests {
		_, err := FromJSONSchema([]byte(tt.schema))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromJSONSchema(%.60s) error = %v, want one containing %q", tt.schema, err, tt.want)
		}
	}
}

// TestSchemaGBNF pins the translation of a small schema, so that changes to
// the generated grammar are deliberate.
func TestSchemaGBNF(t *testing.T) {
	src, err := JSONSchemaGBNF([]byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `root ::= s3
s0 ::= "\"age\"" ws ":" ws integer ws "}" | "}"
s1 ::= "," ws "\"age\"" ws ":" ws integer ws "}" | "}"
s2 ::= "\"name\"" ws ":" ws string ws s1
s3 ::= "{" ws s2
`
	if !strings.HasPrefix(src, want) {
		t.Fatalf("JSONSchemaGBNF =\n%s\nwant it to start with\n%s", src, want)
	}
}

func TestToolCalls(t *testing.T) {
	g, err := ToolCalls([]Function{
		{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "now"},
		{Name: "tree", Parameters: []byte(`{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, g, []matchCase{
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", true, true},
		{"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"tree\", \"arguments\": [[],[[]]]}\n</tool_call>", true, true},
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>", false, false},
		{"<tool_call>\n{\"name\": \"other\"", false, false},
		{"Sure, <tool_call>", false, false},
		{"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n", true, false},
	})
	one, err := ToolCallsContext(context.Background(), []Function{{Name: "now"}}, ToolCallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, one, []matchCase{
		{"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>", true, true},
		{"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n", false, false},
	})
	if _, err := ToolCalls(nil); err == nil {
		t.Fatal("no functions: want an error")
	}
	_, err = ToolCalls([]Function{{Name: "f", Parameters: []byte(`{"type":"string","format":"duration"}`)}})
	if err == nil || !strings.Contains(err.Error(), `function "f"`) || !strings.Contains(err.Error(), `format "duration"`) {
		t.Fatalf("error %v", err)
	}
}
