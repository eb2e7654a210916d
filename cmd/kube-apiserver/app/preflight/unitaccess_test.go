package preflight

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// TestMayAccess: the kernel's permission check by mode bits, as a function of who asks.
func TestMayAccess(t *testing.T) {
	const none, dac, readSearch = nodeconfig.CapabilitySet(0), nodeconfig.CapabilitySet(1 << nodeconfig.CapDACOverride), nodeconfig.CapabilitySet(1 << nodeconfig.CapDACReadSearch)
	tests := []struct {
		name         string
		uid          uint32
		gids         []uint32
		caps         nodeconfig.CapabilitySet
		owner, group uint32
		perm, want   fs.FileMode
		ok           bool
	}{
		{name: "root's own key, 0600", uid: 0, gids: []uint32{0}, perm: 0o600, want: readBit, ok: true},
		{name: "root's own file, 0000, no capability", uid: 0, gids: []uint32{0}, perm: 0, want: readBit},
		{name: "another user's key, 0600", uid: 0, gids: []uint32{0}, owner: 998, group: 998, perm: 0o600, want: readBit},
		{name: "another user's key, with CAP_DAC_OVERRIDE", uid: 0, gids: []uint32{0}, caps: dac, owner: 998, group: 998, perm: 0o600, want: readBit, ok: true},
		{name: "another user's directory, with CAP_DAC_READ_SEARCH", uid: 0, caps: readSearch, owner: 998, group: 998, perm: 0o700, want: searchBit, ok: true},
		{name: "another user's directory, 0700", uid: 0, gids: []uint32{0}, owner: 998, group: 998, perm: 0o700, want: searchBit},
		{name: "a group the process has, 0640", uid: 0, gids: []uint32{0, 998}, owner: 998, group: 998, perm: 0o640, want: readBit, ok: true},
		{name: "a group the process has, 0600", uid: 0, gids: []uint32{0, 998}, owner: 998, group: 998, perm: 0o600, want: readBit},
		{name: "others may read", uid: 1001, gids: []uint32{1001}, owner: 0, group: 0, perm: 0o644, want: readBit, ok: true},
		{name: "others may search, not read", uid: 1001, gids: []uint32{1001}, perm: 0o711, want: searchBit, ok: true},
		{name: "the owner's bits decide for the owner", uid: 1001, gids: []uint32{0}, owner: 1001, group: 0, perm: 0o044, want: readBit},
		{name: "the group's bits decide for the group", uid: 1001, gids: []uint32{0}, owner: 0, group: 0, perm: 0o404, want: readBit},
		{name: "no capability held is none", uid: 0, gids: []uint32{0}, caps: none, owner: 1, group: 1, perm: 0o750, want: searchBit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayAccess(tc.uid, tc.gids, tc.caps, tc.owner, tc.group, tc.perm, tc.want); got != tc.ok {
				t.Errorf("mayAccess(uid %d, gids %v, caps %s, %d:%d %04o, want %o) = %v, want %v", tc.uid, tc.gids, tc.caps, tc.owner, tc.group, tc.perm, tc.want, got, tc.ok)
			}
		})
	}
}

// TestPreflightReadableAsUnit: with a unit that leaves the server neither CAP_DAC_OVERRIDE
// nor CAP_DAC_READ_SEARCH, each file it names that its user could not read by the mode bits,
// and each directory on the way it could not search, is a problem. The fixtures belong to
// uid 4242, which no test machine's passwd names (the test runs as root, which may chown).
func TestPreflightReadableAsUnit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user")
	}
	dir := t.TempDir()
	// t.TempDir's directories are root's, 0700: let other users through, as /etc is.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	give := func(path string, uid, gid int, mode os.FileMode) string {
		t.Helper()
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := give(writeFile(t, dir, "etcd-client.key", "key"), 4242, 4242, 0o600)
	cert := give(writeFile(t, dir, "apiserver.crt", "cert"), 0, 0, 0o644)
	groupKey := give(writeFile(t, dir, "front-proxy.key", "key"), 4242, 4243, 0o640)
	secrets := filepath.Join(dir, "etcd")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	inner := give(writeFile(t, secrets, "ca.crt", "ca"), 0, 0, 0o644)
	give(secrets, 4242, 4242, 0o700)
	link := filepath.Join(dir, "etcd-ca.crt")
	if err := os.Symlink(inner, link); err != nil {
		t.Fatal(err)
	}
	named := [][2]string{{"etcd-keyfile", key}, {"tls-cert-file", cert}, {"proxy-client-key-file", groupKey}, {"client-ca-file", inner}, {"etcd-cafile", link}}

	for i, tc := range []struct {
		name    string
		service string // the unit's [Service] lines besides ExecStart
		prefix  string // ExecStart's
		// wantUnreadable are the named files reported, by flag; wantDir says whether the
		// directory is reported.
		wantUnreadable []string
		wantDir        bool
		wantWho        string
		wantNote       string
	}{
		{name: "root with its capabilities", service: "Type=notify\n"},
		{name: "root keeps CAP_DAC_READ_SEARCH", service: "CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_NET_BIND_SERVICE\n"},
		{
			name: "the kit's unit: root without capabilities", service: "CapabilityBoundingSet=\nAmbientCapabilities=\n",
			wantUnreadable: []string{"etcd-keyfile", "proxy-client-key-file"}, wantDir: true, wantWho: "root (uid 0, groups 0)",
		},
		{
			name: "the DAC capabilities excluded", service: "CapabilityBoundingSet=~CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH\n",
			wantUnreadable: []string{"etcd-keyfile", "proxy-client-key-file"}, wantDir: true, wantWho: "root (uid 0, groups 0)",
		},
		{
			name: "Group= the key's group", service: "CapabilityBoundingSet=\nGroup=4243\n",
			wantUnreadable: []string{"etcd-keyfile"}, wantDir: true, wantWho: "root (uid 0, groups 4243)",
		},
		{
			name: "SupplementaryGroups= the key's group", service: "CapabilityBoundingSet=\nSupplementaryGroups=4243\n",
			wantUnreadable: []string{"etcd-keyfile"}, wantDir: true, wantWho: "root (uid 0, groups 0,4243)",
		},
		{
			name: "another user without ambient capabilities", service: "User=nobody\n",
			wantUnreadable: []string{"etcd-keyfile", "proxy-client-key-file"}, wantDir: true, wantWho: "nobody (uid 65534",
		},
		{name: "another user with CAP_DAC_READ_SEARCH", service: "User=nobody\nAmbientCapabilities=CAP_DAC_READ_SEARCH\n"},
		{name: "a user this machine does not know", service: "User=no-such-user-4242\n", wantNote: "User=no-such-user-4242 in "},
		{name: "ExecStart=+: full privileges", service: "User=nobody\nCapabilityBoundingSet=\n", prefix: "+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unit := writeFile(t, t.TempDir(), fmt.Sprintf("preflight-test-%d.service", i), "[Service]\n"+tc.service+"ExecStart="+tc.prefix+"/usr/bin/kube-apiserver --v=2\n")
			service, err := nodeconfig.ReadSystemdUnit(unit, "")
			if err != nil {
				t.Fatal(err)
			}
			r := &PreflightReport{namedFiles: named}
			r.checkSandbox(service)
			var want []string
			for _, flag := range tc.wantUnreadable {
				i := slices.IndexFunc(named, func(n [2]string) bool { return n[0] == flag })
				want = append(want, "--"+flag+" "+named[i][1]+": the server could not read it as the unit runs it: it is owned by ")
			}
			if tc.wantDir {
				want = append(want, fmt.Sprintf("directory %s: the server could not search it as the unit runs it, so it cannot reach --client-ca-file %s, --etcd-cafile %s: it is owned by 4242:4242, mode 0700, and ", secrets, inner, link))
			}
			if len(r.Problems) != len(want) {
				t.Fatalf("problems %q, want %d starting %q", r.Problems, len(want), want)
			}
			for i, p := range r.Problems {
				if !strings.HasPrefix(p, want[i]) || !strings.Contains(p, "the unit runs the server as "+tc.wantWho) {
					t.Errorf("problem %q, want it to start %q and say the unit runs the server as %s", p, want[i], tc.wantWho)
				}
			}
			if tc.wantNote != "" && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, tc.wantNote) }) {
				t.Errorf("notes %q, want one saying %q", r.Notes, tc.wantNote)
			}
		})
	}

	// One problem in full, as the kit's unit gets it.
	unit := writeFile(t, t.TempDir(), "kit.service", "[Service]\nCapabilityBoundingSet=\nExecStart=/usr/bin/kube-apiserver\n")
	service, err := nodeconfig.ReadSystemdUnit(unit, "")
	if err != nil {
		t.Fatal(err)
	}
	r := &PreflightReport{namedFiles: named[:1]}
	r.checkSandbox(service)
	want := "--etcd-keyfile " + key + ": the server could not read it as the unit runs it: it is owned by 4242:4242, mode 0600, and the unit runs the server as root (uid 0, groups 0) " +
		"without CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH (CapabilityBoundingSet= in " + unit + "), so only the permission bits decide; " +
		"chown it to root, or give it a group the unit has (Group=, SupplementaryGroups=) and chmod g+r"
	if !slices.Equal(r.Problems, []string{want}) {
		t.Errorf("problems %q, want %q", r.Problems, want)
	}
}
