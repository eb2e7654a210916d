package capabilities

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"
)

type caps = []api.Capability

func container(c *api.Capabilities) *api.Container {
	if c == nil {
		return &api.Container{}
	}
	return &api.Container{SecurityContext: &api.SecurityContext{Capabilities: c}}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name                              string
		defaultAdd, requiredDrop, allowed caps
		own                               *api.Capabilities
		want                              *api.Capabilities
		wantSame                          bool // the container's own object comes back
	}{
		{name: "nothing to do", want: nil},
		{name: "own kept when compliant", requiredDrop: caps{"NET_RAW"},
			own: &api.Capabilities{Drop: caps{"NET_RAW"}}, wantSame: true},
		{name: "ALL covers required drops", requiredDrop: caps{"NET_RAW", "SYS_ADMIN"},
			own: &api.Capabilities{Drop: caps{"all"}}, wantSame: true},
		{name: "defaults added", defaultAdd: caps{"NET_BIND_SERVICE"}, requiredDrop: caps{"ALL"},
			want: &api.Capabilities{Add: caps{"NET_BIND_SERVICE"}, Drop: caps{"ALL"}}},
		{name: "merged after the container's own, in order", defaultAdd: caps{"CHOWN", "KILL"}, requiredDrop: caps{"NET_RAW"},
			own:  &api.Capabilities{Add: caps{"KILL", "SETUID"}, Drop: caps{"MKNOD"}},
			want: &api.Capabilities{Add: caps{"KILL", "SETUID", "CHOWN"}, Drop: caps{"MKNOD", "NET_RAW"}}},
		{name: "a dropped default is not added", defaultAdd: caps{"CHOWN"},
			own: &api.Capabilities{Drop: caps{"CHOWN"}}, wantSame: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewDefaultCapabilities(tc.defaultAdd, tc.requiredDrop, tc.allowed)
			got, err := s.Generate(&api.Pod{}, container(tc.own))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantSame {
				if got != tc.own {
					t.Fatalf("got %+v, want the container's own object", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	p := field.NewPath("spec", "containers").Index(0).Child("securityContext", "capabilities")
	tests := []struct {
		name                              string
		defaultAdd, requiredDrop, allowed caps
		caps                              *api.Capabilities
		want                              []string
	}{
		{name: "nil with no requirements"},
		{name: "nil with required drops", requiredDrop: caps{"ALL"},
			want: []string{"spec.containers[0].securityContext.capabilities: Invalid value: null: required capabilities are not set on the securityContext"}},
		{name: "add not allowed", caps: &api.Capabilities{Add: caps{"SYS_ADMIN"}},
			want: []string{"spec.containers[0].securityContext.capabilities.add[0]: Invalid value: \"SYS_ADMIN\": capability may not be added"}},
		{name: "add allowed", allowed: caps{"NET_ADMIN"}, caps: &api.Capabilities{Add: caps{"NET_ADMIN"}}},
		{name: "add default", defaultAdd: caps{"CHOWN"}, caps: &api.Capabilities{Add: caps{"CHOWN"}}},
		{name: "wildcard allows any add", allowed: caps{"*"}, caps: &api.Capabilities{Add: caps{"SYS_ADMIN", "NET_ADMIN"}}},
		{name: "wildcard does not waive required drops", allowed: caps{"*"}, requiredDrop: caps{"NET_RAW"},
			caps: &api.Capabilities{Add: caps{"SYS_ADMIN"}},
			want: []string{"spec.containers[0].securityContext.capabilities.drop: Invalid value: null: NET_RAW is required to be dropped but was not found"}},
		{name: "required drop missing", requiredDrop: caps{"ALL"}, caps: &api.Capabilities{Drop: caps{"NET_RAW"}},
			want: []string{"spec.containers[0].securityContext.capabilities.drop: Invalid value: [\"NET_RAW\"]: ALL is required to be dropped but was not found"}},
		{name: "required drop present", requiredDrop: caps{"NET_RAW"}, caps: &api.Capabilities{Drop: caps{"NET_RAW"}}},
		{name: "ALL covers named drops", requiredDrop: caps{"NET_RAW"}, caps: &api.Capabilities{Drop: caps{"ALL"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewDefaultCapabilities(tc.defaultAdd, tc.requiredDrop, tc.allowed)
			var got []string
			for _, e := range s.Validate(p, &api.Pod{}, &api.Container{}, tc.caps) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
