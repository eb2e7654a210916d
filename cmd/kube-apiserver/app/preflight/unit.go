package preflight

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// capNetBindService is CAP_NET_BIND_SERVICE's number: binding a port below
// ip_unprivileged_port_start needs it.
const capNetBindService = 10

// checkUnitProgram reports a unit that would not run this release with the command line
// checked: a program other than this binary while the flags name our plugins (stock refuses
// them: the server stays down), an ExecStart= of a drop-in that overrides the unit file's
// (the command line checked is that one, whatever the new unit file says), and a secure port
// the unit's capabilities do not let the server bind.
func (r *PreflightReport) checkUnitProgram(unitPath string, service *nodeconfig.SystemdService) {
	if service.ExecStartFile != "" && service.ExecStartFile != unitPath {
		r.Warnings = append(r.Warnings, fmt.Sprintf("ExecStart is set by the drop-in %s, which overrides %s's: the server runs that command line (%s); remove or update the drop-in with the unit", service.ExecStartFile, unitPath, service.Program))
	}
	if edits := ourPluginNames(r.Args); len(edits) > 0 {
		self, err := os.Executable()
		switch same, why := sameFile(self, service.Program); {
		case err != nil:
			r.Notes = append(r.Notes, fmt.Sprintf("the unit runs %s; preflight cannot read its own binary to compare (%v)", service.Program, err))
		case !same:
			r.problem("the unit runs %s, which %s: stock kube-apiserver refuses Portcullis's plugin names (%s) and the server would not start; point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at this release's binary, installed as in docs/operating.md, 2b", service.Program, why, strings.Join(edits, "; "))
		}
	}
	port := 6443
	if p, err := strconv.Atoi(lastFlagValue(r.Args, "secure-port")); err == nil {
		port = p
	}
	if port > 0 && port < unprivilegedPortStart() && !service.Capabilities().Has(capNetBindService) {
		r.problem("--secure-port=%d: the unit leaves the server without CAP_NET_BIND_SERVICE (%s), which binding a port below %d needs; the server would fail to listen: add CAP_NET_BIND_SERVICE to CapabilityBoundingSet= (and AmbientCapabilities= for another user) in a drop-in, or use a port from %d up", port, service.CapabilitySettings(), unprivilegedPortStart(), unprivilegedPortStart())
	}
}

// unitSettingsJudgedElsewhere are the [Service] settings compareUnits leaves to other checks:
// the command line (ExecStart=; the environment is compared apart), Type= (the kit's notify
// is what kube-apiserver supports), and the sandbox and capabilities, which the kit's unit
// tightens on purpose and checkSandbox and checkUnitProgram judge by what the server reads,
// writes and binds.
var unitSettingsJudgedElsewhere = regexp.MustCompile(`^(ExecStart|Environment|EnvironmentFile|Type|Protect.*|Private.*|Restrict.*|SystemCall.*|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths|ExecPaths|NoExecPaths|(Logs|State|Cache|Runtime|Configuration)Directory(Mode)?|NoNewPrivileges|CapabilityBoundingSet|AmbientCapabilities|LockPersonality|MemoryDenyWriteExecute|UMask)$`)

// compareUnits reports what the new unit changes in how the running one runs the server,
// besides its flags (compareFlags): a setting of the running unit (User=, Group=, the
// Limit*= and resource settings, Restart=, the timeouts, SyslogIdentifier=, ...) gone or
// changed, and an environment variable it gives the server (one ExecStart= does not expand:
// a proxy, GOMAXPROCS, GODEBUG, ...) gone or changed, are problems, as a manifest's pod
// settings are; a setting the new unit adds is a note. Values of environment variables are
// not printed: a proxy's may hold a password.
func (r *PreflightReport) compareUnits(runningPath string, running, next *nodeconfig.SystemdService) {
	const hint = "carry it over in a drop-in (systemctl edit kube-apiserver), or take it out of the running unit first if it is meant to go"
	for _, name := range slices.Sorted(maps.Keys(running.Settings)) {
		if unitSettingsJudgedElsewhere.MatchString(name) {
			continue
		}
		before, after := running.Effective(name), next.Effective(name)
		switch {
		case slices.Equal(before, after) || len(before) == 0 && len(after) == 0:
		case len(after) == 0:
			r.problem("%s=%s, which the running unit %s sets, is gone from the new unit: %s", name, strings.Join(before, " "), runningPath, hint)
		default:
			r.problem("%s= changes from %s (the running unit %s's) to %s: %s", name, strings.Join(before, " "), runningPath, strings.Join(after, " "), hint)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.Settings)) {
		if _, ok := running.Settings[name]; ok || unitSettingsJudgedElsewhere.MatchString(name) || len(next.Effective(name)) == 0 {
			continue
		}
		r.Notes = append(r.Notes, fmt.Sprintf("the new unit adds %s=%s, which the running unit %s does not set", name, strings.Join(next.Effective(name), " "), runningPath))
	}
	for _, name := range slices.Sorted(maps.Keys(running.Environment)) {
		if running.ExpandsVariable(name) {
			continue
		}
		switch value, ok := next.Environment[name]; {
		case !ok:
			r.problem("the environment variable %s, which the running unit %s gives the server, is gone from the new unit: carry it over (Environment= in a drop-in, or the environment file)", name, runningPath)
		case value != running.Environment[name]:
			r.problem("the environment variable %s, which the running unit %s gives the server, changes its value in the new unit: carry it over as it is (Environment= in a drop-in, or the environment file)", name, runningPath)
		}
	}
}

// checkRollbackProgram reports, for a rollback (--rollback), a unit whose program is not stock
// kube-apiserver of the Kubernetes version the node runs: targetVersion
// (--kubernetes-version), or that of ours, the release running now. A stock binary left
// from before an upgrade would run an API server older than the controller manager,
// scheduler and kubelets, which the version-skew policy forbids. The program is asked its
// version (--version), as an operator would.
func (r *PreflightReport) checkRollbackProgram(service *nodeconfig.SystemdService, targetVersion, ours string) {
	want := targetVersion
	if want == "" {
		want, _, _ = strings.Cut(ours, "+")
	}
	got, err := programVersion(service.Program)
	switch {
	case err != nil:
		r.problem("--rollback: the unit runs %s, which does not say its version (%v): install stock kube-apiserver %s and point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at it (docs/operating.md, 4)", service.Program, err, want)
	case strings.Contains(got, "+portcullis."):
		r.problem("--rollback, but the unit runs %s, a Portcullis release (%s): point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at stock kube-apiserver %s (docs/operating.md, 4)", service.Program, got, want)
	case got != want:
		r.problem("--rollback: the unit runs %s, stock kube-apiserver %s, not %s, the version the node runs: a rollback must not change the version (an older API server than the controller manager, scheduler and kubelets breaks the version-skew policy); install stock kube-apiserver %s and point the unit at it (docs/operating.md, 4)", service.Program, got, want, want)
	}
}

// programVersion runs program --version and returns the version a Kubernetes component
// prints ("Kubernetes v1.37.2").
func programVersion(program string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "--version")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s --version: %w", program, err)
	}
	fields := strings.Fields(out.String())
	if len(fields) != 2 || fields[0] != "Kubernetes" {
		return "", fmt.Errorf("%s --version printed %q, not a Kubernetes component's version", program, strings.TrimSpace(limitString(out.String(), 200)))
	}
	return fields[1], nil
}

func limitString(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// unprivilegedPortStart is the kernel's net.ipv4.ip_unprivileged_port_start (1024 when it
// cannot be read).
func unprivilegedPortStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 1024
	}
	return n
}

// sameFile reports whether the files at a and b hold the same bytes, and otherwise why not.
func sameFile(a, b string) (bool, string) {
	if !filepath.IsAbs(b) {
		return false, "is not an absolute path (systemd runs an absolute path, or one it finds in its own search path)"
	}
	infoA, err := os.Stat(a)
	if err != nil {
		return false, fmt.Sprintf("cannot be compared with this binary (%v)", err)
	}
	infoB, err := os.Stat(b)
	if err != nil {
		return false, fmt.Sprintf("cannot be read (%v)", err)
	}
	if os.SameFile(infoA, infoB) {
		return true, ""
	}
	if infoA.Size() != infoB.Size() {
		return false, fmt.Sprintf("is not this release's binary (%d bytes, this one %d)", infoB.Size(), infoA.Size())
	}
	sumA, errA := fileSum(a)
	sumB, errB := fileSum(b)
	switch {
	case errA != nil || errB != nil:
		return false, fmt.Sprintf("cannot be compared with this binary (%v)", errors.Join(errA, errB))
	case !bytes.Equal(sumA, sumB):
		return false, "is not this release's binary (its content differs)"
	}
	return true, ""
}

func fileSum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
