package preflight

import (
	"bytes"
	"cmp"
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

// unitChangeHint is what to do about a setting or dependency of the running unit the new one
// drops or changes.
const unitChangeHint = "carry it over in a drop-in of the new unit, or take it out of the running unit first if it is meant to go"

// compareUnits reports what the new unit changes in how the running one runs the server,
// besides its flags (compareFlags): a setting of the running unit (User=, Group=, the
// Limit*= and resource settings, Restart=, the timeouts, SyslogIdentifier=, ...) gone or
// changed, and an environment variable it gives the server (one ExecStart= does not expand:
// a proxy, GOMAXPROCS, GODEBUG, ...) gone or changed, are problems, as a manifest's pod
// settings are; a setting the new unit adds is a note. Values are compared as systemd reads
// them (unitValue). Values of environment variables and of credential settings are not
// printed: they may hold a password.
func (r *PreflightReport) compareUnits(runningPath string, running, next *nodeconfig.SystemdService) {
	shown := func(name string, values []string) string {
		if strings.Contains(name, "Credential") {
			return "(a credential, not shown)"
		}
		return strings.Join(values, " ")
	}
	for _, name := range slices.Sorted(maps.Keys(running.Settings)) {
		if unitSettingsJudgedElsewhere.MatchString(name) {
			continue
		}
		before, after := running.Effective(name), next.Effective(name)
		switch was, is := unitValue(name, before), unitValue(name, after); {
		case was == is:
		case len(after) == 0:
			r.problem("%s=%s, which the running unit %s sets, is gone from the new unit: %s", name, shown(name, before), runningPath, unitChangeHint)
		default:
			r.problem("%s= changes from %s (the running unit %s's) to %s: %s", name, shown(name, before), runningPath, shown(name, after), unitChangeHint)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.Settings)) {
		if _, ok := running.Settings[name]; ok || unitSettingsJudgedElsewhere.MatchString(name) || unitValue(name, next.Effective(name)) == "" {
			continue
		}
		r.Notes = append(r.Notes, fmt.Sprintf("the new unit adds %s=%s, which the running unit %s does not set", name, shown(name, next.Effective(name)), runningPath))
	}
	r.compareDependencies(runningPath, running, next)
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

// unitDependenciesUnjudged change nothing in how the server starts.
var unitDependenciesUnjudged = map[string]bool{"Unit.Description": true, "Unit.Documentation": true}

// compareDependencies reports what the new unit changes in when and with what the server
// starts ([Unit], [Install]): a unit the running one is ordered after, requires, wants,
// conflicts with or is wanted by, or a condition it checks, gone from the new unit, is a
// problem; a target gone (network.target, multi-user.target: systemd's synchronization points,
// which the kit's unit orders itself by in its own way), a setting such as StartLimitBurst=
// gone or changed, and what the new unit adds are notes.
func (r *PreflightReport) compareDependencies(runningPath string, running, next *nodeconfig.SystemdService) {
	label := func(name string) string {
		section, key, _ := strings.Cut(name, ".")
		return "[" + section + "] " + key
	}
	isList := func(name string) bool {
		return nodeconfig.IsUnitList(name) || nodeconfig.IsCondition(name)
	}
	items := func(name string, values []string) []string {
		if nodeconfig.IsUnitList(name) {
			return strings.Fields(strings.Join(values, " "))
		}
		return values
	}
	for _, name := range slices.Sorted(maps.Keys(running.Dependencies)) {
		if unitDependenciesUnjudged[name] {
			continue
		}
		before, after := running.Dependencies[name], next.Dependencies[name]
		if !isList(name) {
			if was, is := unitValue(name, before), unitValue(name, after); was != is {
				r.Notes = append(r.Notes, fmt.Sprintf("%s=%s, which the running unit %s sets, is %s in the new unit", label(name), strings.Join(before, " "), runningPath, cmp.Or(strings.Join(after, " "), "not set")))
			}
			continue
		}
		kept := items(name, after)
		for _, item := range items(name, before) {
			switch {
			case slices.Contains(kept, item):
			case nodeconfig.IsUnitList(name) && strings.HasSuffix(item, ".target"):
				r.Notes = append(r.Notes, fmt.Sprintf("%s=%s, which the running unit %s has, is not in the new unit", label(name), item, runningPath))
			default:
				r.problem("%s=%s, which the running unit %s has, is gone from the new unit: it changes when or with what the server starts; %s", label(name), item, runningPath, unitChangeHint)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next.Dependencies)) {
		if unitDependenciesUnjudged[name] {
			continue
		}
		if !isList(name) {
			if _, ok := running.Dependencies[name]; !ok {
				r.Notes = append(r.Notes, fmt.Sprintf("the new unit adds %s=%s, which the running unit %s does not set", label(name), strings.Join(next.Dependencies[name], " "), runningPath))
			}
			continue
		}
		had := items(name, running.Dependencies[name])
		for _, item := range items(name, next.Dependencies[name]) {
			if !slices.Contains(had, item) {
				r.Notes = append(r.Notes, fmt.Sprintf("the new unit adds %s=%s, which the running unit %s does not have", label(name), item, runningPath))
			}
		}
	}
}

// unitValue is a setting's value as systemd reads it, so that spellings of one value compare
// equal: a time span ("5" and "5s", "1min" and "60s"), a boolean ("yes", "true", "on", "1"),
// a resource limit whose soft and hard values are one ("65536" and "65536:65536"), a list
// given in several assignments or one, and User= or Group= root, what a service runs as
// without one.
func unitValue(name string, values []string) string {
	if !unitListSettings[name] && len(values) > 1 {
		// The last assignment of a single-valued setting is the one in force.
		values = values[len(values)-1:]
	}
	joined := strings.Join(strings.Fields(strings.Join(values, " ")), " ")
	switch {
	case (name == "User" || name == "Group") && joined == "root":
		return ""
	case strings.HasPrefix(name, "Limit"):
		if soft, hard, ok := strings.Cut(joined, ":"); ok && soft == hard {
			return soft
		}
	case strings.HasSuffix(name, "Sec") || strings.HasSuffix(name, "USec"):
		if d, ok := timeSpan(joined); ok {
			return d.String()
		}
	}
	switch strings.ToLower(joined) {
	case "yes", "true", "on", "1":
		return "true"
	case "no", "false", "off", "0":
		return "false"
	}
	return joined
}

// unitListSettings are the [Service] settings compareUnits compares whose assignments add up
// (the others take the last): the lists judged elsewhere (the sandbox's paths, capabilities,
// the environment) are not among them.
var unitListSettings = map[string]bool{
	"SupplementaryGroups": true, "DeviceAllow": true, "ExecStartPre": true, "ExecStartPost": true,
	"ExecStop": true, "ExecStopPost": true, "ExecReload": true, "ExecCondition": true,
	"SetCredential": true, "SetCredentialEncrypted": true, "LoadCredential": true, "LoadCredentialEncrypted": true,
	"BindPaths": true, "BindReadOnlyPaths": true, "TemporaryFileSystem": true,
}

// timeSpan parses a systemd time span (systemd.time(7)): a number alone is seconds, and
// units follow numbers, several summed ("1min 30s", "1min30s").
func timeSpan(s string) (time.Duration, bool) {
	units := map[string]time.Duration{
		"us": time.Microsecond, "usec": time.Microsecond, "ms": time.Millisecond, "msec": time.Millisecond,
		"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	if s == "infinity" {
		return -1, true
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), true
	}
	var total time.Duration
	for _, m := range timeSpanPart.FindAllStringSubmatch(strings.ReplaceAll(s, " ", ""), -1) {
		unit, ok := units[m[2]]
		n, err := strconv.ParseFloat(m[1], 64)
		if !ok || err != nil {
			return 0, false
		}
		total += time.Duration(n * float64(unit))
	}
	if strings.ReplaceAll(s, " ", "") != strings.Join(timeSpanPart.FindAllString(strings.ReplaceAll(s, " ", ""), -1), "") {
		return 0, false
	}
	return total, true
}

var timeSpanPart = regexp.MustCompile(`([0-9.]+)([a-z]+)`)

// checkRollbackProgram reports, for a rollback (--rollback), a unit whose program is not stock
// kube-apiserver of the Kubernetes version the node runs: targetVersion
// (--kubernetes-version), else that of the program the running unit runs (running, when
// --running-unit is given), else that of ours, this preflight's release. A stock binary left
// from before an upgrade would run an API server older than the controller manager,
// scheduler and kubelets, which the version-skew policy forbids. The program is asked its
// version (--version), as an operator would.
func (r *PreflightReport) checkRollbackProgram(service, running *nodeconfig.SystemdService, targetVersion, ours string) {
	want, from := targetVersion, "--kubernetes-version"
	if want == "" && running != nil {
		if v, err := programVersion(running.Program); err == nil {
			want, _, _ = strings.Cut(v, "+")
			from = "the running unit's " + running.Program
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("--rollback: the running unit's program does not say its version (%v), so the version the node runs is taken from this preflight's release, %s: give --kubernetes-version if the node runs another", err, ours))
		}
	}
	if want == "" {
		want, _, _ = strings.Cut(ours, "+")
		from = "this preflight's release, " + ours
	}
	got, err := programVersion(service.Program)
	switch {
	case err != nil:
		r.problem("--rollback: the unit runs %s, which does not say its version (%v): install stock kube-apiserver %s and point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at it (docs/operating.md, 4)", service.Program, err, want)
	case strings.Contains(got, "+portcullis."):
		r.problem("--rollback, but the unit runs %s, a Portcullis release (%s): point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at stock kube-apiserver %s (docs/operating.md, 4)", service.Program, got, want)
	case got != want:
		r.problem("--rollback: the unit runs %s, stock kube-apiserver %s, not %s, the version the node runs (%s): a rollback must not change the version (an older API server than the controller manager, scheduler and kubelets breaks the version-skew policy); install stock kube-apiserver %s and point the unit at it (docs/operating.md, 4)", service.Program, got, want, from, want)
	}
}

// checkUnitNotOlder reports, outside a rollback, a unit whose program runs an older
// Kubernetes than the running unit's (--running-unit): going back to a release of ours after
// the cluster was upgraded on stock would start the release of the version before, and an API
// server older than the controller manager, scheduler and kubelets breaks the version-skew
// policy. A program that does not say its version is left to the other checks.
func (r *PreflightReport) checkUnitNotOlder(runningPath string, service, running *nodeconfig.SystemdService) {
	next, err := programVersion(service.Program)
	if err != nil {
		return
	}
	now, err := programVersion(running.Program)
	if err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("the running unit's program does not say its version (%v): preflight cannot tell whether %s, Kubernetes %s, is older than what the node runs", err, service.Program, next))
		return
	}
	nextKube, _, _ := strings.Cut(next, "+")
	nowKube, _, _ := strings.Cut(now, "+")
	if nextKube != nowKube && olderOrNewer(nextKube, nowKube) == "older than" {
		r.problem("the unit runs %s, Kubernetes %s, older than %s, which the running unit %s runs (%s): the API server must not go back a version; point ExecStart (KUBE_APISERVER_BINARY in the kit's environment file) at the release of ours for %s (docs/operating.md, 2b, 4)", service.Program, nextKube, nowKube, runningPath, running.Program, nowKube)
	}
}

// programVersion runs program --version, with no environment but PATH, and returns the
// version a Kubernetes component prints ("Kubernetes v1.37.2").
func programVersion(program string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "--version")
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	// A child that keeps the output open must not hold preflight past the timeout.
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", program, err, strings.TrimSpace(limitString(errOut.String(), 200)))
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
