package capabilities

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
)

type caps = []api.Capability

func container(c *api.Capabilities) *api.Container {
	return &api.Container{SecurityContext: &api.SecurityContext{Capabilities: c}}
}

// The cases of 1.24's capabilities_test.go (TestGenerateAdds, TestGenerateDrops), then ours.
func TestGenerate(t *testing.T) {
	tests := []struct {
		name                     string
		defaultAdd, requiredDrop caps
		own                      *api.Capabilities
		want                     *api.Capabilities
		wantOwn                  bool // the container's own object comes back unchanged
	}{
		// 1.24: adds.
		{name: "no required, no container requests", want: nil},
		{name: "no required, no container requests, non-nil", own: &api.Capabilities{}, wantOwn: true},
		{name: "required, no container requests", defaultAdd: caps{"foo"}, want: &api.Capabilities{Add: caps{"foo"}}},
		{name: "required, container requests add required", defaultAdd: caps{"foo"},
			own: &api.Capabilities{Add: caps{"foo"}}, wantOwn: true},
		{name: "multiple required, container requests add required", defaultAdd: caps{"foo", "bar", "baz"},
			own: &api.Capabilities{Add: caps{"foo"}}, want: &api.Capabilities{Add: caps{"bar", "baz", "foo"}}},
		{name: "required, container requests add non-required", defaultAdd: caps{"foo"},
			own: &api.Capabilities{Add: caps{"bar"}}, want: &api.Capabilities{Add: caps{"bar", "foo"}}},
		{name: "generation does not mutate unnecessarily", defaultAdd: caps{"foo", "bar"},
			own: &api.Capabilities{Add: caps{"foo", "foo", "bar", "baz"}}, wantOwn: true},
		{name: "generation dedupes", defaultAdd: caps{"foo", "bar"},
			own: &api.Capabilities{Add: caps{"foo", "baz"}}, want: &api.Capabilities{Add: caps{"bar", "baz", "foo"}}},
		{name: "generation is case sensitive - will not dedupe", defaultAdd: caps{"foo"},
			own: &api.Capabilities{Add: caps{"FOO"}}, want: &api.Capabilities{Add: caps{"FOO", "foo"}}},
		// 1.24: drops.
		{name: "required drops are defaulted", requiredDrop: caps{"foo"}, want: &api.Capabilities{Drop: caps{"foo"}}},
		{name: "required drops are defaulted when making container requests", requiredDrop: caps{"baz"},
			own: &api.Capabilities{Drop: caps{"foo", "bar"}}, want: &api.Capabilities{Drop: caps{"bar", "baz", "foo"}}},
		{name: "required drops do not mutate unnecessarily", requiredDrop: caps{"baz"},
			own: &api.Capabilities{Drop: caps{"foo", "bar", "baz"}}, wantOwn: true},
		{name: "can drop a required add", defaultAdd: caps{"foo"}, own: &api.Capabilities{Drop: caps{"foo"}}, wantOwn: true},
		{name: "can drop non-required add", defaultAdd: caps{"foo"},
			own: &api.Capabilities{Drop: caps{"bar"}}, want: &api.Capabilities{Add: caps{"foo"}, Drop: caps{"bar"}}},
		{name: "defaulting adds and drops, dropping a required add", defaultAdd: caps{"foo", "bar", "baz"}, requiredDrop: caps{"abc"},
			own: &api.Capabilities{Drop: caps{"foo"}}, want: &api.Capabilities{Add: caps{"bar", "baz"}, Drop: caps{"abc", "foo"}}},
		{name: "drop generation dedupes", requiredDrop: caps{"baz", "foo"},
			own: &api.Capabilities{Drop: caps{"bar", "foo"}}, want: &api.Capabilities{Drop: caps{"bar", "baz", "foo"}}},
		{name: "drop generation is case sensitive - will not dedupe", requiredDrop: caps{"bar"},
			own: &api.Capabilities{Drop: caps{"BAR"}}, want: &api.Capabilities{Drop: caps{"BAR", "bar"}}},
		// Ours: ALL is a name like any other, so the required drop is merged in (and the
		// policy counts as one that changes the pod), as in 1.24.
		{name: "dropping ALL still gets the required drops merged", requiredDrop: caps{"NET_RAW", "SYS_ADMIN"},
			own: &api.Capabilities{Drop: caps{"ALL"}}, want: &api.Capabilities{Drop: caps{"ALL", "NET_RAW", "SYS_ADMIN"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewDefaultCapabilities(tc.defaultAdd, tc.requiredDrop, nil)
			if err != nil {
				t.Fatal(err)
			}
			own := container(tc.own)
			before := own.DeepCopy()
			got, err := s.Generate(&api.Pod{}, own)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(own, before) {
				t.Errorf("Generate changed the container: %+v, was %+v", own, before)
			}
			if tc.wantOwn {
				if got != tc.own {
					t.Fatalf("got %+v, want the container's own object", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// The cases of 1.24's TestValidateAdds and TestValidateDrops; the expected errors are 1.24's,
// as 1.37's field errors render them.
func TestValidate(t *testing.T) {
	tests := []struct {
		name                              string
		defaultAdd, requiredDrop, allowed caps
		caps                              *api.Capabilities
		want                              []string
	}{
		{name: "no required, no allowed, no container requests"},
		{name: "no required, allowed, no container requests", allowed: caps{"foo"}},
		{name: "required, no allowed, no container requests", defaultAdd: caps{"foo"},
			want: []string{`capabilities: Invalid value: null: required capabilities are not set on the securityContext`}},
		{name: "required, no allowed, container requests valid", defaultAdd: caps{"foo"}, caps: &api.Capabilities{Add: caps{"foo"}}},
		{name: "required, no allowed, container requests invalid", defaultAdd: caps{"foo"}, caps: &api.Capabilities{Add: caps{"bar"}},
			want: []string{`capabilities.add: Invalid value: "bar": capability may not be added`}},
		{name: "no required, allowed, container requests valid", allowed: caps{"foo"}, caps: &api.Capabilities{Add: caps{"foo"}}},
		{name: "no required, all allowed, container requests valid", allowed: caps{"*"}, caps: &api.Capabilities{Add: caps{"foo"}}},
		{name: "no required, allowed, container requests invalid", allowed: caps{"foo"}, caps: &api.Capabilities{Add: caps{"bar"}},
			want: []string{`capabilities.add: Invalid value: "bar": capability may not be added`}},
		{name: "required, allowed, container requests valid required", defaultAdd: caps{"foo"}, allowed: caps{"bar"}, caps: &api.Capabilities{Add: caps{"foo"}}},
		{name: "required, allowed, container requests valid allowed", defaultAdd: caps{"foo"}, allowed: caps{"bar"}, caps: &api.Capabilities{Add: caps{"bar"}}},
		{name: "required, allowed, container requests invalid", defaultAdd: caps{"foo"}, allowed: caps{"bar"}, caps: &api.Capabilities{Add: caps{"baz"}},
			want: []string{`capabilities.add: Invalid value: "baz": capability may not be added`}},
		{name: "validation is case sensitive", defaultAdd: caps{"foo"}, caps: &api.Capabilities{Add: caps{"FOO"}},
			want: []string{`capabilities.add: Invalid value: "FOO": capability may not be added`}},
		{name: "required drop, no container requests", requiredDrop: caps{"foo"},
			want: []string{`capabilities: Invalid value: null: required capabilities are not set on the securityContext`}},
		{name: "required drop, container requests valid", requiredDrop: caps{"foo"}, caps: &api.Capabilities{Drop: caps{"foo"}}},
		{name: "required drop, container requests invalid", requiredDrop: caps{"foo"}, caps: &api.Capabilities{Drop: caps{"bar"}},
			want: []string{`capabilities.drop: Invalid value: ["bar"]: foo is required to be dropped but was not found`}},
		{name: "drop validation is case sensitive", requiredDrop: caps{"foo"}, caps: &api.Capabilities{Drop: caps{"FOO"}},
			want: []string{`capabilities.drop: Invalid value: ["FOO"]: foo is required to be dropped but was not found`}},
		// Ours, as 1.24 behaved: ALL does not stand for a named drop (Generate merges it in).
		{name: "ALL does not satisfy a named required drop", requiredDrop: caps{"NET_RAW"}, caps: &api.Capabilities{Drop: caps{"ALL"}},
			want: []string{`capabilities.drop: Invalid value: ["ALL"]: NET_RAW is required to be dropped but was not found`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewDefaultCapabilities(tc.defaultAdd, tc.requiredDrop, tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range s.Validate(field.NewPath("capabilities"), &api.Pod{}, &api.Container{}, tc.caps) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
