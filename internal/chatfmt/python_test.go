package chatfmt

import "testing"

// PyStr prints what Python's str() prints for the value json.loads gives.
func TestPyStr(t *testing.T) {
	tests := []struct{ json, want string }{
		{`"a"`, "a"},
		{`null`, "None"},
		{`true`, "True"},
		{`1e400`, "inf"},
		{`-0.0`, "-0.0"},
		{`1.5e-7`, "1.5e-07"},
		{`[1, "it's", "x\"y'z", {"k": [false, null]}]`, `[1, "it's", 'x"y\'z', {'k': [False, None]}]`},
		{`["\u0007\n é 😀 \u00a0"]`, `['\x07\n é 😀 \xa0']`},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.json))
		if err != nil {
			t.Fatal(err)
		}
		if got := PyStr(v); got != tt.want {
			t.Errorf("PyStr(%s) = %s, want %s", tt.json, got, tt.want)
		}
	}
}
