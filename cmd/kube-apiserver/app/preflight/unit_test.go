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

func TestCheckRollbackProgram(t *testing.T) {
	const ours = "v1.37.2+portcullis.1"
	dir := t.TempDir()
	program := func(name, script string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stock := program("stock", `echo "Kubernetes v1.37.2"`)
	older := program("older", `echo "Kubernetes v1.36.5"`)
	portcullis := program("portcullis", `echo "Kubernetes v1.37.2+portcullis.1"`)
	failing := program("failing", `echo "unknown flag: --version" >&2; exit 1`)
	other := program("other", `echo "etcd Version: 3.6.8"`)
	running136 := program("running136", `echo "Kubernetes v1.36.5+portcullis.1"`)
	tests := []struct {
		name, program, target string
		// running is the running unit's program, when --running-unit is given.
		running     string
		wantProblem string
		// wantWarning is a warning the check gives.
		wantWarning string
	}{
		{name: "stock of the version the node runs", program: stock},
		{name: "stock of the version named", program: older, target: "v1.36.5"},
		// The node runs a 1.36 release of ours while this preflight is 1.37's: the running
		// unit says the version.
		{name: "stock of the running unit's version", program: older, running: running136},
		{name: "stock of this preflight's, not the running unit's", program: stock, running: running136,
			wantProblem: "stock kube-apiserver v1.37.2, not v1.36.5, the version the node runs (the running unit's " + running136 + ")"},
		{name: "stock left from before an upgrade", program: older,
			wantProblem: "--rollback: the unit runs " + older + ", stock kube-apiserver v1.36.5, not v1.37.2, the version the node runs"},
		{name: "another patch than the one named", program: stock, target: "v1.37.3", wantProblem: "stock kube-apiserver v1.37.2, not v1.37.3"},
		{name: "still Portcullis", program: portcullis, wantProblem: "--rollback, but the unit runs " + portcullis + ", a Portcullis release (v1.37.2+portcullis.1)"},
		{name: "a program that does not say", program: failing, wantProblem: "which does not say its version (" + failing + " --version: exit status 1: unknown flag: --version)"},
		{name: "another program", program: other, wantProblem: "not a Kubernetes component's version"},
		{name: "missing", program: filepath.Join(dir, "missing"), wantProblem: "which does not say its version"},
		// A running unit's program that does not answer: this preflight's version, said.
		{name: "a running program that does not say", program: stock, running: failing,
			wantWarning: "the running unit's program does not say its version (" + failing + " --version: exit status 1: unknown flag: --version), so the version the node runs is taken from this preflight's release, " + ours},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &PreflightReport{}
			var running *nodeconfig.SystemdService
			if tc.running != "" {
				running = &nodeconfig.SystemdService{Program: tc.running}
			}
			r.checkRollbackProgram(&nodeconfig.SystemdService{Program: tc.program}, running, tc.target, ours)
			switch {
			case tc.wantProblem == "" && len(r.Problems) > 0:
				t.Errorf("want no problem, got %q", r.Problems)
			case tc.wantProblem != "" && (len(r.Problems) != 1 || !strings.Contains(r.Problems[0], tc.wantProblem)):
				t.Errorf("want one problem saying %q, got %q", tc.wantProblem, r.Problems)
			}
			if got := slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "does not say its version") }); got != (tc.wantWarning != "") ||
				tc.wantWarning != "" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("warnings %q, want one saying %q (none when empty)", r.Warnings, tc.wantWarning)
			}
		})
	}
}

// TestCheckUnitNotOlder: outside a rollback, the new unit must not run an older Kubernetes
// than the running one (going back to ours after an upgrade on stock).
func TestCheckUnitNotOlder(t *testing.T) {
	dir := t.TempDir()
	program := func(name, version string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho 'Kubernetes "+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ours := program("ours", "v1.37.2+portcullis.1")
	for _, tc := range []struct {
		name, running string
		wantProblem   string
	}{
		{name: "stock of the same version (the swap)", running: program("stock", "v1.37.2")},
		{name: "an earlier release of ours (an upgrade)", running: program("earlier", "v1.36.5+portcullis.1")},
		{name: "stock of a later patch (going back after an upgrade)", running: program("later-patch", "v1.37.3"),
			wantProblem: "Kubernetes v1.37.2, older than v1.37.3, which the running unit RUNNING runs"},
		{name: "stock of a later minor", running: program("later-minor", "v1.38.0"),
			wantProblem: "older than v1.38.0"},
		{name: "a running program that does not say", running: filepath.Join(dir, "missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &PreflightReport{}
			r.checkUnitNotOlder("RUNNING", &nodeconfig.SystemdService{Program: ours}, &nodeconfig.SystemdService{Program: tc.running})
			switch {
			case tc.wantProblem == "" && len(r.Problems) > 0:
				t.Errorf("want no problem, got %q", r.Problems)
			case tc.wantProblem != "" && (len(r.Problems) != 1 || !strings.Contains(r.Problems[0], tc.wantProblem)):
				t.Errorf("want one problem saying %q, got %q", tc.wantProblem, r.Problems)
			}
		})
	}
}

func TestCompareUnits(t *testing.T) {
	// An operator's unit: its own user, limits, restart policy and proxy.
	const running = `[Service]
SetCredential=token:secret
RestartSec=5s
User=kube
Group=kube
LimitNOFILE=65536
TasksMax=4096
Restart=always
Environment=HTTPS_PROXY=http://user:secret@proxy.example:3128 NO_PROXY=10.0.0.0/8 BINARY=/usr/local/bin/kube-apiserver
ProtectSystem=full
ExecStart=/usr/bin/env ${BINARY} --secure-port=6443
`
	tests := []struct {
		name, next   string
		wantProblems []string
		wantNotes    []string
	}{
		{name: "the same unit", next: running},
		{name: "the same settings, hardened, another binary", next: strings.Replace(strings.Replace(running, "ProtectSystem=full", "ProtectSystem=strict\nPrivateTmp=yes\nCapabilityBoundingSet=", 1), "BINARY=/usr/local/bin/kube-apiserver", "BINARY=/usr/local/lib/portcullis/kube-apiserver", 1)},
		{name: "the kit's unit in its place", next: `[Service]
Type=notify
Environment=BINARY=/usr/local/lib/portcullis/kube-apiserver
ExecStart=/usr/bin/env ${BINARY} --secure-port=6443
Restart=on-failure
RestartSec=5s
TimeoutStopSec=30
LimitNOFILE=1048576
SetCredential=token:secret
`,
			wantProblems: []string{
				"Group=kube, which the running unit RUNNING sets, is gone from the new unit: carry it over in a drop-in",
				"LimitNOFILE= changes from 65536 (the running unit RUNNING's) to 1048576",
				"Restart= changes from always (the running unit RUNNING's) to on-failure",
				"TasksMax=4096, which the running unit RUNNING sets, is gone",
				"User=kube, which the running unit RUNNING sets, is gone",
				"the environment variable HTTPS_PROXY, which the running unit RUNNING gives the server, is gone from the new unit",
				"the environment variable NO_PROXY, which the running unit RUNNING gives the server, is gone",
			},
			wantNotes: []string{"the new unit adds TimeoutStopSec=30, which the running unit RUNNING does not set"}},
		{name: "a drop-in's reset takes a setting away", next: strings.Replace(running, "TasksMax=4096", "TasksMax=4096\nTasksMax=", 1),
			wantProblems: []string{"TasksMax=4096, which the running unit RUNNING sets, is gone"}},
		// Spellings systemd reads as one value.
		{name: "the same values spelled otherwise", next: strings.NewReplacer("LimitNOFILE=65536", "LimitNOFILE=65536:65536", "RestartSec=5s", "RestartSec=5").Replace(running)},
		{name: "a single-valued setting given again: the last counts", next: strings.Replace(running, "TasksMax=4096", "TasksMax=1\nTasksMax=4096", 1)},
		{name: "a credential changes", next: running + "SetCredential=token:other\n",
			wantProblems: []string{"SetCredential= changes from (a credential, not shown) (the running unit RUNNING's) to (a credential, not shown)"}},
		{name: "a proxy's value changes", next: strings.Replace(running, "proxy.example:3128", "proxy.example:8080", 1),
			wantProblems: []string{"the environment variable HTTPS_PROXY, which the running unit RUNNING gives the server, changes its value in the new unit"}},
	}
	dir := t.TempDir()
	runningPath := writeFile(t, dir, "running-kube-apiserver.service", running)
	before, err := nodeconfig.ReadSystemdUnit(runningPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after, err := nodeconfig.ReadSystemdUnit(writeFile(t, t.TempDir(), "next-kube-apiserver.service", tc.next))
			if err != nil {
				t.Fatal(err)
			}
			r := &PreflightReport{}
			r.compareUnits("RUNNING", before, after)
			checkComparison(t, r, tc.wantProblems, tc.wantNotes)
			for _, p := range r.Problems {
				if strings.Contains(p, "secret") {
					t.Errorf("a problem prints an environment variable's value: %q", p)
				}
			}
		})
	}
}

// TestCompareDependencies: the kit's unit replaces the running one's [Unit] and [Install]
// sections too; what the running unit starts after, requires or is wanted by must stay.
func TestCompareDependencies(t *testing.T) {
	const service = "[Service]\nExecStart=/usr/local/bin/kube-apiserver --secure-port=6443\n"
	const running = "[Unit]\nDescription=the API server\nAfter=network.target etcd.service\nRequires=etcd.service\n" +
		"ConditionPathExists=/etc/kubernetes/pki/apiserver.crt\nStartLimitBurst=10\n" + service + "[Install]\nWantedBy=multi-user.target\n"
	// The kit's: its own description, network-online.target, multi-user.target.
	const kit = "[Unit]\nDescription=Kubernetes API server (Portcullis)\nWants=network-online.target\nAfter=network-online.target\n" + service + "[Install]\nWantedBy=multi-user.target\n"
	tests := []struct {
		name, next   string
		wantProblems []string
		wantNotes    []string
	}{
		{name: "the same unit", next: running},
		{name: "the kit's unit in its place", next: kit,
			wantProblems: []string{
				"[Unit] After=etcd.service, which the running unit RUNNING has, is gone from the new unit",
				"[Unit] ConditionPathExists=/etc/kubernetes/pki/apiserver.crt, which the running unit RUNNING has, is gone",
				"[Unit] Requires=etcd.service, which the running unit RUNNING has, is gone",
			},
			// A target and a start limit: notes.
			wantNotes: []string{
				"the new unit adds [Unit] Wants=network-online.target, which the running unit RUNNING does not have",
				"[Unit] After=network.target, which the running unit RUNNING has, is not in the new unit",
				"[Unit] StartLimitBurst=10, which the running unit RUNNING sets, is not set in the new unit",
			}},
		{name: "carried over in a drop-in", next: kit, wantNotes: []string{"the new unit adds [Unit] Wants=network-online.target"}},
		// systemd resets no list of units; an empty condition resets every condition.
		{name: "an empty dependency in a drop-in changes nothing", next: running + "[Unit]\nRequires=\n"},
		{name: "an empty condition resets them all", next: running + "[Unit]\nConditionPathIsDirectory=\n",
			wantProblems: []string{"[Unit] ConditionPathExists=/etc/kubernetes/pki/apiserver.crt, which the running unit RUNNING has, is gone"}},
	}
	dir := t.TempDir()
	before, err := nodeconfig.ReadSystemdUnit(writeFile(t, dir, "running-kube-apiserver.service", running))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unitDir := t.TempDir()
			unit := writeFile(t, unitDir, "kube-apiserver.service", tc.next)
			if tc.name == "carried over in a drop-in" {
				if err := os.Mkdir(filepath.Join(unitDir, "kube-apiserver.service.d"), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(unitDir, "kube-apiserver.service.d"), "10-etcd.conf",
					"[Unit]\nAfter=etcd.service\nRequires=etcd.service\nConditionPathExists=/etc/kubernetes/pki/apiserver.crt\nStartLimitBurst=10\n")
			}
			after, err := nodeconfig.ReadSystemdUnitCopy(unit)
			if err != nil {
				t.Fatal(err)
			}
			r := &PreflightReport{}
			r.compareUnits("RUNNING", before, after)
			checkComparison(t, r, tc.wantProblems, tc.wantNotes)
		})
	}
}

// checkComparison checks a unit comparison's problems, in order, each starting as wanted, and
// that a note starts as each of wantNotes.
func checkComparison(t *testing.T, r *PreflightReport, wantProblems, wantNotes []string) {
	t.Helper()
	if len(r.Problems) != len(wantProblems) {
		t.Errorf("problems: %q, want %d", r.Problems, len(wantProblems))
	}
	for i := range min(len(r.Problems), len(wantProblems)) {
		if !strings.HasPrefix(r.Problems[i], wantProblems[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, r.Problems[i], wantProblems[i])
		}
	}
	for _, want := range wantNotes {
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no note %q; notes: %q", want, r.Notes)
		}
	}
}

func TestUnitValue(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"RestartSec", []string{"5"}, "5s"},
		{"RestartSec", []string{"5s"}, "5s"},
		{"TimeoutStopSec", []string{"1min 30s"}, "1m30s"},
		{"TimeoutStopSec", []string{"1min30s"}, "1m30s"},
		{"TimeoutStopSec", []string{"500ms"}, "500ms"},
		{"TimeoutStopSec", []string{"soon"}, "soon"},
		{"LimitNOFILE", []string{"65536:65536"}, "65536"},
		{"LimitNOFILE", []string{"1024:65536"}, "1024:65536"},
		{"User", []string{"root"}, ""},
		{"Delegate", []string{"yes"}, "true"},
		{"Delegate", []string{"off"}, "false"},
		{"TasksMax", []string{"1", "4096"}, "4096"},
		{"SupplementaryGroups", []string{"a", "b"}, "a b"},
	} {
		if got := unitValue(c.name, c.values); got != c.want {
			t.Errorf("unitValue(%s, %q) = %q, want %q", c.name, c.values, got, c.want)
		}
	}
}

func TestExpandsVariable(t *testing.T) {
	for _, c := range []struct {
		execStart string
		want      bool
	}{
		{"/usr/bin/env ${BINARY} --x", true},
		{"/bin/kube-apiserver --x=${VALUE}", true},
		{"/bin/kube-apiserver $ARGS", true},
		{"/bin/kube-apiserver --x=$VALUE", false},
		{"/bin/kube-apiserver $$ARGS", false},
		{":/bin/kube-apiserver ${ARGS}", false},
		{"/bin/kube-apiserver $ARGSX", false},
	} {
		s := &nodeconfig.SystemdService{Settings: map[string][]string{"ExecStart": {c.execStart}}}
		name := "ARGS"
		if strings.Contains(c.execStart, "BINARY") {
			name = "BINARY"
		} else if strings.Contains(c.execStart, "VALUE") {
			name = "VALUE"
		}
		if got := s.ExpandsVariable(name); got != c.want {
			t.Errorf("ExecStart=%s expands %s: %v, want %v", c.execStart, name, got, c.want)
		}
	}
}
