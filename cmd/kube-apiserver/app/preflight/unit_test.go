package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// TestCheckUnitProgram: a unit whose program is not this binary while its flags name our
// plugins would not start (stock refuses them); an ExecStart= of a drop-in is named; a port
// below 1024 without CAP_NET_BIND_SERVICE is refused.
func TestCheckUnitProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho stock\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyOfSelf := filepath.Join(dir, "copy", "kube-apiserver")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(copyOfSelf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyOfSelf, data, 0o755); err != nil {
		t.Fatal(err)
	}
	withOurs := []string{"--enable-admission-plugins=NodeRestriction,SecurityContextDeny"}
	noCapabilities := map[string][]string{"CapabilityBoundingSet": {""}}
	for _, tc := range []struct {
		name         string
		program      string
		args         []string
		settings     map[string][]string
		execStartIn  string
		wantProblems []string
		wantWarning  string
	}{
		{name: "this release's binary, installed elsewhere", program: copyOfSelf, args: withOurs},
		{name: "stock left in place", program: other, args: withOurs,
			wantProblems: []string{"the unit runs " + other + ", which is not this release's binary", "remove SecurityContextDeny from --enable-admission-plugins"}},
		{name: "stock without our plugins: a rollback's unit", program: other, args: []string{"--enable-admission-plugins=NodeRestriction"}},
		{name: "a drop-in's ExecStart", program: copyOfSelf, args: withOurs, execStartIn: "/etc/systemd/system/kube-apiserver.service.d/10-flags.conf",
			wantWarning: "ExecStart is set by the drop-in /etc/systemd/system/kube-apiserver.service.d/10-flags.conf"},
		{name: "port 443 without capabilities", program: copyOfSelf, args: []string{"--secure-port=443"}, settings: noCapabilities,
			wantProblems: []string{"--secure-port=443: the unit leaves the server without CAP_NET_BIND_SERVICE"}},
		{name: "port 443 with every capability", program: copyOfSelf, args: []string{"--secure-port=443"}},
		{name: "the default port without capabilities", program: copyOfSelf, settings: noCapabilities},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := tc.settings
			if settings == nil {
				settings = map[string][]string{}
			}
			unit := "/etc/systemd/system/kube-apiserver.service"
			execStartIn := tc.execStartIn
			if execStartIn == "" {
				execStartIn = unit
			}
			r := &PreflightReport{Args: tc.args}
			r.checkUnitProgram(unit, &nodeconfig.SystemdService{Args: tc.args, Program: tc.program, ExecStartFile: execStartIn, Settings: settings})
			for _, want := range tc.wantProblems {
				if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("no problem says %q; problems: %q", want, r.Problems)
				}
			}
			if len(tc.wantProblems) == 0 && len(r.Problems) > 0 {
				t.Errorf("want no problem, got %q", r.Problems)
			}
			if tc.wantWarning != "" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("no warning says %q; warnings: %q", tc.wantWarning, r.Warnings)
			}
		})
	}
}
