package nodeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapabilitySet: the bounding and ambient sets as systemd.exec(5) and systemd's parser
// compute them from the lines in force.
func TestCapabilitySet(t *testing.T) {
	const dac = 1<<CapDACOverride | 1<<CapDACReadSearch
	const bind = CapabilitySet(1 << 10) // CAP_NET_BIND_SERVICE
	tests := []struct {
		name        string
		assignments []string
		initial     CapabilitySet
		want        CapabilitySet
	}{
		{name: "bounding set unset: every capability", initial: AllCapabilities, want: AllCapabilities},
		{name: "ambient set unset: none", initial: 0, want: 0},
		{name: "empty: the empty set (the kit's unit)", assignments: []string{""}, initial: AllCapabilities, want: 0},
		{name: "a list replaces the initial set", assignments: []string{"CAP_NET_BIND_SERVICE"}, initial: AllCapabilities, want: bind},
		{name: "lines add up", assignments: []string{"CAP_NET_BIND_SERVICE", "CAP_DAC_OVERRIDE cap_dac_read_search"}, initial: AllCapabilities, want: bind | dac},
		{name: "~ takes all but those", assignments: []string{"~CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH"}, initial: AllCapabilities, want: AllCapabilities &^ dac},
		{name: "~ after a list removes from it", assignments: []string{"CAP_NET_BIND_SERVICE CAP_DAC_OVERRIDE", "~CAP_DAC_OVERRIDE"}, initial: AllCapabilities, want: bind},
		{name: "~ alone: every capability", assignments: []string{"~"}, initial: AllCapabilities, want: AllCapabilities},
		{name: "empty after a list resets", assignments: []string{"CAP_DAC_OVERRIDE", ""}, initial: AllCapabilities, want: 0},
		{name: "a list after empty", assignments: []string{"", "CAP_DAC_READ_SEARCH"}, initial: AllCapabilities, want: 1 << CapDACReadSearch},
		{name: "names without CAP_ and numbers", assignments: []string{"dac_override 10"}, initial: AllCapabilities, want: 1<<CapDACOverride | bind},
		{name: "unknown names are ignored", assignments: []string{"CAP_NO_SUCH CAP_NET_BIND_SERVICE"}, initial: AllCapabilities, want: bind},
		{name: "ambient: a list", assignments: []string{"CAP_NET_BIND_SERVICE"}, initial: 0, want: bind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := capabilitySet(tc.assignments, tc.initial); got != tc.want {
				t.Errorf("capabilitySet(%q) = %s, want %s", tc.assignments, got, tc.want)
			}
		})
	}
}

// TestReadSystemdUnitCredentials: the user, groups and capabilities the server runs with,
// after the drop-ins, and the settings a message names for them.
func TestReadSystemdUnitCredentials(t *testing.T) {
	tests := []struct {
		name         string
		service      string // the unit's [Service] lines besides ExecStart
		execPrefix   string
		dropIn       string // a drop-in's [Service] lines; "" for none
		wantRoot     bool
		wantUser     string
		wantGroups   []string
		wantReads    bool // CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH held
		wantSettings []string
	}{
		{
			name:         "the kit's unit: root, every capability dropped",
			service:      "NoNewPrivileges=yes\nCapabilityBoundingSet=\nAmbientCapabilities=\n",
			wantRoot:     true,
			wantSettings: []string{"CapabilityBoundingSet= in ", "kube-apiserver.service"},
		},
		{name: "root with no capability setting", service: "Type=notify\n", wantRoot: true, wantReads: true},
		{name: "User=root", service: "User=root\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", wantRoot: true, wantUser: "root", wantSettings: []string{"CapabilityBoundingSet=CAP_NET_BIND_SERVICE"}},
		{name: "User=0 keeps DAC_READ_SEARCH", service: "User=0\nCapabilityBoundingSet=CAP_DAC_READ_SEARCH\n", wantRoot: true, wantUser: "0", wantReads: true},
		{
			name:         "a drop-in excludes the DAC capabilities",
			service:      "Type=notify\n",
			dropIn:       "CapabilityBoundingSet=~CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH\n",
			wantRoot:     true,
			wantSettings: []string{"CapabilityBoundingSet=~CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH in ", "10-caps.conf"},
		},
		{
			name:      "a drop-in resets the set and grants DAC_READ_SEARCH",
			service:   "CapabilityBoundingSet=\n",
			dropIn:    "CapabilityBoundingSet=\nCapabilityBoundingSet=CAP_DAC_READ_SEARCH\n",
			wantRoot:  true,
			wantReads: true,
		},
		{
			name:         "another user holds only its ambient capabilities",
			service:      "User=kube\nGroup=kube\nSupplementaryGroups=etcd pki\nSupplementaryGroups=certs\n",
			wantUser:     "kube",
			wantGroups:   []string{"etcd", "pki", "certs"},
			wantSettings: []string{"User=kube in ", "no AmbientCapabilities="},
		},
		{
			name:      "another user with an ambient DAC capability",
			service:   "User=kube\nAmbientCapabilities=CAP_DAC_READ_SEARCH\n",
			wantUser:  "kube",
			wantReads: true,
		},
		{
			name:     "an ambient capability the bounding set leaves out",
			service:  "User=kube\nAmbientCapabilities=CAP_DAC_READ_SEARCH\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n",
			wantUser: "kube",
		},
		{name: "SupplementaryGroups= empty resets", service: "SupplementaryGroups=etcd\nSupplementaryGroups=\n", wantRoot: true, wantReads: true},
		{name: "+: full privileges", service: "User=kube\nCapabilityBoundingSet=\n", execPrefix: "+", wantRoot: true, wantUser: "kube", wantReads: true},
		{name: "!: no change of user", service: "User=kube\nCapabilityBoundingSet=\n", execPrefix: "!", wantRoot: true, wantUser: "kube"},
		{name: "!!: a user change with ambient capabilities", service: "User=kube\nCapabilityBoundingSet=\n", execPrefix: "!!", wantUser: "kube"},
		{name: "DynamicUser", service: "DynamicUser=yes\nCapabilityBoundingSet=\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			unit := writeFile(t, dir, "kube-apiserver.service", "[Service]\n"+tc.service+"ExecStart="+tc.execPrefix+"/usr/bin/kube-apiserver --v=2\n")
			if tc.dropIn != "" {
				if err := os.Mkdir(unit+".d", 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, unit+".d", "10-caps.conf", "[Service]\n"+tc.dropIn)
			}
			service, err := readSystemdUnit(unit, []string{""}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := service.RunsAsRoot(); got != tc.wantRoot {
				t.Errorf("RunsAsRoot() = %v, want %v", got, tc.wantRoot)
			}
			if service.User() != tc.wantUser {
				t.Errorf("User() %q, want %q", service.User(), tc.wantUser)
			}
			if strings.Join(service.SupplementaryGroups(), " ") != strings.Join(tc.wantGroups, " ") {
				t.Errorf("SupplementaryGroups() %q, want %q", service.SupplementaryGroups(), tc.wantGroups)
			}
			if got := service.Capabilities().ReadsAnything(); got != tc.wantReads {
				t.Errorf("Capabilities() = %s: reads anything %v, want %v", service.Capabilities(), got, tc.wantReads)
			}
			settings := service.CapabilitySettings()
			for _, want := range tc.wantSettings {
				if !strings.Contains(settings, want) {
					t.Errorf("CapabilitySettings() = %q, want it to say %q", settings, want)
				}
			}
		})
	}
	// The kit's own unit: root, with the empty bounding set, named by its file.
	kit, err := filepath.Abs("../../../../build/deploy/systemd/kube-apiserver.service")
	if err != nil {
		t.Fatal(err)
	}
	env := writeFile(t, t.TempDir(), "kube-apiserver.env", "KUBE_APISERVER_BINARY=/usr/local/bin/kube-apiserver\n")
	service, err := readSystemdUnit(kit, []string{env}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !service.RunsAsRoot() || service.Capabilities() != 0 || service.CapabilitySettings() != "CapabilityBoundingSet= in "+kit {
		t.Errorf("the kit's unit: root %v, capabilities %s, settings %q; want root with none, by CapabilityBoundingSet= in %s",
			service.RunsAsRoot(), service.Capabilities(), service.CapabilitySettings(), kit)
	}
}
