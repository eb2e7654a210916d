package trace

import (
	"slices"
	"testing"
)

func TestChangedPaths(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          []string
	}{
		{name: "same", before: `{"a":{"b":[1,2]}}`, after: `{"a":{"b":[1,2]}}`},
		{name: "added key", before: `{"metadata":{"name":"p"}}`, after: `{"metadata":{"name":"p","labels":{"a":"b"}}}`, want: []string{"/metadata/labels"}},
		{name: "removed key", before: `{"a":1,"b":2}`, after: `{"a":1}`, want: []string{"/b"}},
		{name: "replaced value", before: `{"a":{"b":"x"}}`, after: `{"a":{"b":"y"}}`, want: []string{"/a/b"}},
		{name: "type changed", before: `{"a":{"b":"x"}}`, after: `{"a":["b"]}`, want: []string{"/a"}},
		{name: "list element changed", before: `{"c":[{"n":"a"},{"n":"b"}]}`, after: `{"c":[{"n":"a"},{"n":"b","env":[]}]}`, want: []string{"/c/1/env"}},
		{name: "list grew", before: `{"c":[1]}`, after: `{"c":[1,2,3]}`, want: []string{"/c/1", "/c/2"}},
		{name: "list shrank", before: `{"c":[1,2]}`, after: `{"c":[]}`, want: []string{"/c/0", "/c/1"}},
		{name: "escaped keys", before: `{"labels":{}}`, after: `{"labels":{"example.com/a~b":"x"}}`, want: []string{"/labels/example.com~1a~0b"}},
		{name: "sorted", before: `{}`, after: `{"z":1,"a":1}`, want: []string{"/a", "/z"}},
		{name: "root replaced", before: `1`, after: `2`, want: []string{""}},
		{name: "undecodable", before: `{`, after: `{}`, want: []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChangedPaths([]byte(tc.before), []byte(tc.after)); !slices.Equal(got, tc.want) {
				t.Errorf("ChangedPaths = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPatchPaths(t *testing.T) {
	got := PatchPaths([]byte(`[{"op":"add","path":"/a"},{"op":"replace","path":"/b/0"},{"op":"add","path":"/a"}]`))
	if want := []string{"/a", "/b/0"}; !slices.Equal(got, want) {
		t.Errorf("PatchPaths = %q, want %q", got, want)
	}
	if got := PatchPaths([]byte(`not json`)); got != nil {
		t.Errorf("PatchPaths of garbage = %q, want none", got)
	}
}

func TestStepString(t *testing.T) {
	s := Step{Name: "P", Verdict: "denied (403): a\nb", Paths: []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7", "/8", "/9", "/10"}, Duration: 1500}
	// What the client sees: the decision, not its reason (the log and Request-level audit
	// have it).
	if got, want := s.String(), "P: denied (403), changed /1 /2 /3 /4 /5 /6 /7 /8 and 2 more (1.5µs)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
