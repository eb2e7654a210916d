package sysctl

import (
	"reflect"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
)

func podWith(names ...string) *api.Pod {
	sc := &api.PodSecurityContext{}
	for _, n := range names {
		sc.Sysctls = append(sc.Sysctls, api.Sysctl{Name: n, Value: "1"})
	}
	return &api.Pod{Spec: api.PodSpec{SecurityContext: sc}}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.tcp_rmem":                "net.ipv4.tcp_rmem",
		"net/ipv4/tcp_rmem":                "net.ipv4.tcp_rmem",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel":                           "kernel",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	safe := SafeSysctlAllowlist()
	tests := []struct {
		name              string
		unsafe, forbidden []string
		sysctls           []string
		want              []string
	}{
		{name: "no sysctls"},
		{name: "safe allowed by default", sysctls: []string{"kernel.shm_rmid_forced", "net.ipv4.ping_group_range", "net/ipv4/ip_local_port_range"}},
		// 1.24's safe set is five; the kubelet's has grown since, and a 1.24 policy did not
		// mean to allow what it could not know.
		{name: "safe to the 1.37 kubelet but not to 1.24", sysctls: []string{"net.ipv4.tcp_keepalive_time"},
			want: []string{`spec.securityContext.sysctls[0]: Forbidden: unsafe sysctl "net.ipv4.tcp_keepalive_time" is not allowed`}},
		{name: "unsafe rejected", sysctls: []string{"kernel.msgmax"},
			want: []string{`spec.securityContext.sysctls[0]: Forbidden: unsafe sysctl "kernel.msgmax" is not allowed`}},
		{name: "unsafe allowed exactly", unsafe: []string{"kernel.msgmax"}, sysctls: []string{"kernel.msgmax"}},
		{name: "unsafe allowed by prefix", unsafe: []string{"kernel.msg*"}, sysctls: []string{"kernel.msgmax", "kernel.sem"},
			want: []string{`spec.securityContext.sysctls[1]: Forbidden: unsafe sysctl "kernel.sem" is not allowed`}},
		{name: "unsafe allowed by *", unsafe: []string{"*"}, sysctls: []string{"kernel.sem"}},
		{name: "forbidden wins over safe", forbidden: []string{"net.ipv4.tcp_syncookies"}, sysctls: []string{"net.ipv4.tcp_syncookies"},
			want: []string{`spec.securityContext.sysctls[0]: Forbidden: sysctl "net.ipv4.tcp_syncookies" is not allowed`}},
		{name: "forbidden * wins over allowed unsafe", unsafe: []string{"*"}, forbidden: []string{"*"}, sysctls: []string{"kernel.sem"},
			want: []string{`spec.securityContext.sysctls[0]: Forbidden: sysctl "kernel.sem" is not allowed`}},
		{name: "forbidden prefix catches a slash spelling", forbidden: []string{"net.ipv4.*"}, sysctls: []string{"net/ipv4/tcp_rmem"},
			want: []string{`spec.securityContext.sysctls[0]: Forbidden: sysctl "net/ipv4/tcp_rmem" is not allowed`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMustMatchPatterns(safe, tc.unsafe, tc.forbidden)
			var got []string
			for _, e := range s.Validate(podWith(tc.sysctls...)) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The cases of 1.24's mustmatchpatterns_test.go: each allowed name passes in one pod, each
// disallowed name fails alone.
func TestValidate124(t *testing.T) {
	tests := []struct {
		name                           string
		safe, forbidden, allowedUnsafe []string
		allowed, disallowed            []string
	}{
		{name: "with allow all", safe: []string{"foo"}, allowed: []string{"foo"}},
		{name: "empty", safe: []string{"foo"}, forbidden: []string{"*"}, disallowed: []string{"foo"}},
		{name: "without wildcard", safe: []string{"a", "a.b"}, allowed: []string{"a", "a.b"}, disallowed: []string{"b"}},
		{name: "with catch-all wildcard and non-wildcard", allowedUnsafe: []string{"a.b.c", "*"}, allowed: []string{"a", "a.b", "a.b.c", "b"}},
		{name: "without catch-all wildcard", allowedUnsafe: []string{"a.*", "b.*", "c.d.e", "d.e.f.*"},
			allowed: []string{"a.b", "b.c", "c.d.e", "d.e.f.g.h"}, disallowed: []string{"a", "b", "c", "c.d", "d.e", "d.e.f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMustMatchPatterns(tc.safe, tc.allowedUnsafe, tc.forbidden)
			if errs := s.Validate(&api.Pod{}); len(errs) != 0 {
				t.Errorf("a pod without sysctls: %v", errs)
			}
			if errs := s.Validate(podWith(tc.allowed...)); len(errs) != 0 {
				t.Errorf("allowed %v: %v", tc.allowed, errs)
			}
			for _, name := range tc.disallowed {
				if errs := s.Validate(podWith(name)); len(errs) != 1 {
					t.Errorf("%q: %d errors, want 1", name, len(errs))
				}
			}
		})
	}
}
