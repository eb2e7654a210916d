package nodeconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// systemdDropInRoots are the directories, besides the unit's own, where systemd looks for
// <unit>.d/*.conf drop-ins, highest priority first.
var systemdDropInRoots = []string{"/etc/systemd/system"}

// SystemdService is a systemd unit that runs kube-apiserver, after its drop-ins.
type SystemdService struct {
	// Args are the server's arguments: ExecStart's after the program, variables substituted.
	Args []string
	// Program is the file ExecStart runs (through env(1), when the unit uses it).
	Program string
	// ExecStartFile is the file whose ExecStart= is in force: the unit's, or a drop-in's.
	ExecStartFile string
	// Settings are the unit's [Service] settings, by name, in the order they apply. An empty
	// assignment resets a setting; for the capability settings, whose empty assignment means
	// the empty set rather than the default, it is kept as the one value "".
	Settings map[string][]string
	// Environment is what Environment= and the environment files give the process (and
	// ExecStart's expansion), by name.
	Environment map[string]string
	// Dependencies are the unit's [Unit] and [Install] settings (when and with what it starts),
	// by section and name ("Unit.After", "Install.WantedBy"), in the order they apply; an empty
	// assignment resets one.
	Dependencies map[string][]string

	// sources are, by setting, the files of the assignments in Settings, in the same order.
	sources map[string][]string
}

// ReadSystemdUnit reads the unit at unitPath and its drop-ins, and substitutes the
// environment of its Environment= lines and of its EnvironmentFile= files (or
// environmentFiles, when given, in their place, read in order as systemd reads several) in
// ExecStart as systemd does: ${VAR} in place, $VAR split into words. Errors name the file.
func ReadSystemdUnit(unitPath string, environmentFiles ...string) (*SystemdService, error) {
	return readSystemdUnit(unitPath, environmentFiles, systemdDropInRoots)
}

// ReadSystemdUnitCopy is ReadSystemdUnit for a copy of a unit (a backup, --running-unit):
// only the drop-ins of its own directory apply (<unit>.d beside it), not those of systemd's
// directories, which belong to the live unit and may have changed since the copy was made.
// For the live unit's own path the two are the same.
func ReadSystemdUnitCopy(unitPath string, environmentFiles ...string) (*SystemdService, error) {
	return readSystemdUnit(unitPath, environmentFiles, nil)
}

func readSystemdUnit(unitPath string, environmentFiles []string, dropInRoots []string) (*SystemdService, error) {
	unit, sources, dependencies := map[string][]string{}, map[string][]string{}, map[string][]string{}
	if err := parseUnit(unitPath, unit, sources, dependencies); err != nil {
		return nil, err
	}
	dropIns, err := systemdDropIns(unitPath, dropInRoots)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", unitPath, err)
	}
	for _, dropIn := range dropIns {
		if err := parseUnit(dropIn, unit, sources, dependencies); err != nil {
			return nil, fmt.Errorf("%s: drop-in: %w", unitPath, err)
		}
	}
	env := map[string]string{}
	for _, assignment := range unit["Environment"] {
		for _, word := range splitWords(assignment) {
			if k, v, ok := strings.Cut(word, "="); ok {
				env[k] = v
			}
		}
	}
	files := unit["EnvironmentFile"]
	if given := slices.DeleteFunc(slices.Clone(environmentFiles), func(f string) bool { return f == "" }); len(given) > 0 {
		files = given
	}
	for _, f := range files {
		optional := strings.HasPrefix(f, "-")
		f = strings.TrimPrefix(f, "-")
		if err := readEnvironmentFile(f, env); err != nil {
			if optional && os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("EnvironmentFile %s: %w", f, err)
		}
	}
	starts := unit["ExecStart"]
	if len(starts) != 1 {
		return nil, fmt.Errorf("%s (with %d drop-ins): want exactly one ExecStart=, found %d", unitPath, len(dropIns), len(starts))
	}
	// Of the prefixes (systemd.service(5), "Command lines"), "@" makes the second word
	// argv[0] and ":" turns off variable substitution; "-", "+", "!", "!!" and "|" change
	// how the command runs, not what it is.
	prefixes := starts[0][:len(starts[0])-len(strings.TrimLeft(starts[0], "-@+!:|"))]
	var argv []string
	for _, word := range splitWords(starts[0][len(prefixes):]) {
		if strings.Contains(prefixes, ":") {
			argv = append(argv, word)
			continue
		}
		argv = append(argv, expand(word, env)...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: ExecStart is empty", unitPath)
	}
	// argv[0] is what systemd executes; with "@" the next word is only the name the
	// program sees as its argv[0].
	program, args := argv[0], argv[1:]
	if strings.Contains(prefixes, "@") && len(args) > 0 {
		args = args[1:]
	}
	program, args = withoutEnvWrapper(program, args)
	if filepath.Base(program) != "kube-apiserver" {
		return nil, fmt.Errorf("%s: ExecStart runs %q, not kube-apiserver", unitPath, strings.Join(append([]string{program}, args...), " "))
	}
	execStartFile := unitPath
	if from := sources["ExecStart"]; len(from) > 0 {
		execStartFile = from[len(from)-1]
	}
	return &SystemdService{Args: args, Program: program, ExecStartFile: execStartFile, Settings: unit, Environment: env, Dependencies: dependencies, sources: sources}, nil
}

// systemdDropIns returns the unit's drop-ins, <unit>.d/*.conf in the unit's directory and
// in dropInRoots, in the order systemd applies them: by file name, a name in a
// higher-priority directory hiding the same name in a lower one.
func systemdDropIns(unitPath string, dropInRoots []string) ([]string, error) {
	name := filepath.Base(unitPath)
	dirs := make([]string, 0, len(dropInRoots)+1)
	for _, root := range dropInRoots {
		dirs = append(dirs, filepath.Join(root, name+".d"))
	}
	dirs = append(dirs, filepath.Join(filepath.Dir(unitPath), name+".d"))
	byName := map[string]string{}
	for _, dir := range dirs {
		matches, err := filepath.Glob(filepath.Join(dir, "*.conf"))
		if err != nil {
			return nil, err
		}
		for _, path := range matches {
			if _, hidden := byName[filepath.Base(path)]; !hidden {
				byName[filepath.Base(path)] = path
			}
		}
	}
	names := slices.Sorted(maps.Keys(byName))
	dropIns := make([]string, len(names))
	for i, n := range names {
		dropIns[i] = byName[n]
	}
	return dropIns, nil
}

// withoutEnvWrapper looks through a program run by env(1) with NAME=VALUE assignments:
// units start a binary whose path is a variable through env, since systemd expands none in
// the program.
func withoutEnvWrapper(program string, args []string) (string, []string) {
	if filepath.Base(program) != "env" {
		return program, args
	}
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	if len(args) == 0 {
		return program, args
	}
	return args[0], args[1:]
}

// unitLists are the [Unit] and [Install] settings that list units.
var unitLists = regexp.MustCompile(`^Unit\.(After|Before|Requires|Wants|BindsTo|Requisite|PartOf|Upholds|Conflicts|OnFailure|OnSuccess|PropagatesReloadTo|ReloadPropagatedFrom|JoinsNamespaceOf)$|^Install\.(WantedBy|RequiredBy|UpheldBy|Also|Alias)$`)

// IsUnitList reports whether a setting of Dependencies ("Unit.After") lists units.
func IsUnitList(name string) bool { return unitLists.MatchString(name) }

// IsCondition reports whether a setting of Dependencies is a condition or an assertion
// ("Unit.ConditionPathExists"), each assignment one check.
func IsCondition(name string) bool { return conditionFamily(name) != "" }

// conditionFamily is "Unit.Condition" or "Unit.Assert" for the settings of either, else "".
func conditionFamily(name string) string {
	for _, family := range []string{"Unit.Condition", "Unit.Assert"} {
		if strings.HasPrefix(name, family) {
			return family
		}
	}
	return ""
}

// parseUnit adds the [Service] settings of a unit file or drop-in to settings, in order,
// line continuations joined, and the file of each assignment to sources; an empty assignment
// resets a setting, as in systemd (for the capability settings, to the empty set: it is kept
// as the value ""). The [Unit] and [Install] settings go to dependencies, by section and name.
func parseUnit(path string, settings, sources, dependencies map[string][]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	section := ""
	var logical strings.Builder
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 1024*1024), 1024*1024)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if logical.Len() == 0 && (line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";")) {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			logical.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		logical.WriteString(line)
		full := logical.String()
		logical.Reset()
		if strings.HasPrefix(full, "[") && strings.HasSuffix(full, "]") {
			section = full
			continue
		}
		if section != "[Service]" && section != "[Unit]" && section != "[Install]" {
			continue
		}
		key, value, ok := strings.Cut(full, "=")
		if !ok {
			return fmt.Errorf("%s: cannot parse %q", path, full)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if section != "[Service]" {
			key = strings.Trim(section, "[]") + "." + key
			switch {
			case value != "":
				dependencies[key] = append(dependencies[key], value)
			case IsUnitList(key):
				// systemd resets no list of units: an empty assignment adds nothing.
			case conditionFamily(key) != "":
				// An empty condition resets every condition (or assertion), of any kind.
				family := conditionFamily(key)
				maps.DeleteFunc(dependencies, func(k string, _ []string) bool { return conditionFamily(k) == family })
			default:
				delete(dependencies, key)
			}
			continue
		}
		switch {
		case value == "" && capabilitySettings[key]:
			settings[key], sources[key] = []string{""}, []string{path}
		case value == "":
			delete(settings, key) // an empty assignment resets the list, as in systemd
			delete(sources, key)
		default:
			settings[key] = append(settings[key], value)
			sources[key] = append(sources[key], path)
		}
	}
	return scanner.Err()
}

// readEnvironmentFile reads KEY=VALUE lines (comments and blank lines skipped, values
// optionally quoted) into env.
func readEnvironmentFile(path string, env map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("line %d: want KEY=VALUE, got %q", i+1, line)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		env[strings.TrimSpace(key)] = value
	}
	return nil
}

// splitWords splits a command line into words as systemd does: on white space, with single
// and double quotes grouping.
func splitWords(s string) []string {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// expand substitutes ${VAR} within a word and, for a word that is exactly $VAR, splits the
// value into words, as systemd's ExecStart does.
func expand(word string, env map[string]string) []string {
	if strings.HasPrefix(word, "$") && !strings.HasPrefix(word, "${") && !strings.ContainsAny(word[1:], "$/ =") {
		return splitWords(env[word[1:]])
	}
	var out strings.Builder
	for {
		start := strings.Index(word, "${")
		if start < 0 {
			out.WriteString(word)
			break
		}
		end := strings.Index(word[start:], "}")
		if end < 0 {
			out.WriteString(word)
			break
		}
		out.WriteString(word[:start])
		out.WriteString(env[word[start+2:start+end]])
		word = word[start+end+1:]
	}
	return []string{out.String()}
}

// What the service runs as, after the drop-ins: its user and groups (User=, Group=,
// SupplementaryGroups=, DynamicUser=) and the capabilities it holds (CapabilityBoundingSet=,
// AmbientCapabilities=, and ExecStart's "+" and "!" prefixes), as systemd.exec(5) has them.

// CapabilitySet is a set of Linux capabilities, bit n for capability number n.
type CapabilitySet uint64

// AllCapabilities is the set systemd starts a bounding set from: every capability.
const AllCapabilities = ^CapabilitySet(0)

// The capabilities that let a process read a file, or search a directory, whatever its mode.
const (
	CapDACOverride   = 1
	CapDACReadSearch = 2
)

// capabilityNames are the capabilities by number, as capabilities(7) names them.
var capabilityNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// capabilitySettings are the settings whose empty assignment is the empty set.
var capabilitySettings = map[string]bool{"CapabilityBoundingSet": true, "AmbientCapabilities": true}

// Has says whether the set holds capability number c.
func (s CapabilitySet) Has(c int) bool { return c >= 0 && c < 64 && s&(1<<c) != 0 }

// ReadsAnything says whether the set holds CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH: either
// lets a process read any file and search any directory, whatever their modes.
func (s CapabilitySet) ReadsAnything() bool { return s.Has(CapDACOverride) || s.Has(CapDACReadSearch) }

// String names the capabilities of the set, or says it is empty or full.
func (s CapabilitySet) String() string {
	switch s {
	case 0:
		return "none"
	case AllCapabilities:
		return "all"
	}
	var names []string
	for rest := uint64(s); rest != 0; rest &= rest - 1 {
		c := bits.TrailingZeros64(rest)
		if c < len(capabilityNames) {
			names = append(names, capabilityNames[c])
		} else {
			names = append(names, strconv.Itoa(c))
		}
	}
	return strings.Join(names, " ")
}

// capabilityFromName returns a capability's number from its name (with or without CAP_,
// in any case) or number, as systemd reads them.
func capabilityFromName(name string) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n >= 0 && n < 64
	}
	upper := strings.ToUpper(name)
	if !strings.HasPrefix(upper, "CAP_") {
		upper = "CAP_" + upper
	}
	for i, known := range capabilityNames {
		if known == upper {
			return i, true
		}
	}
	return 0, false
}

// capabilitySet computes a capability set from its assignments, in order, starting from
// initial (all for the bounding set, none for the ambient set), as systemd's
// config_parse_capability_set does: a list ("~" first: every capability but those) replaces
// the set while it is still initial, and later lines merge, by OR, or AND NOT for "~"; an
// empty assignment gives the empty set, "~" alone every capability. Unknown names are
// ignored, as systemd ignores them (with a warning).
func capabilitySet(assignments []string, initial CapabilitySet) CapabilitySet {
	set := initial
	for _, value := range assignments {
		value = strings.TrimSpace(value)
		invert := strings.HasPrefix(value, "~")
		value = strings.TrimPrefix(value, "~")
		var sum CapabilitySet
		for _, word := range splitWords(value) {
			if c, ok := capabilityFromName(word); ok {
				sum |= 1 << c
			}
		}
		switch {
		case sum == 0 || set == initial:
			if invert {
				set = ^sum
			} else {
				set = sum
			}
		case invert:
			set &^= sum
		default:
			set |= sum
		}
	}
	return set
}

// User, Group and SupplementaryGroups are User=, Group= and SupplementaryGroups= ("" and nil
// when unset: the server runs as root, with the user's group).
// Effective returns the assignments of a setting that are in force: those after its last
// empty assignment, which resets it (for a setting that takes one value, the last is the
// value).
func (s *SystemdService) Effective(name string) []string {
	values := s.Settings[name]
	for i := len(values) - 1; i >= 0; i-- {
		if values[i] == "" {
			return values[i+1:]
		}
	}
	return values
}

// ExpandsVariable reports whether ExecStart= substitutes the environment variable name, as
// systemd does (systemd.service(5), "Command lines"): ${name} anywhere in a word, $name as a
// word of its own, "$$" an escaped "$", and nothing under the ":" prefix. Such a variable is
// part of the command line, not only of the process's environment.
func (s *SystemdService) ExpandsVariable(name string) bool {
	start := s.value("ExecStart")
	if prefixes := start[:len(start)-len(strings.TrimLeft(start, "-@+!:|"))]; strings.Contains(prefixes, ":") {
		return false
	}
	start = strings.ReplaceAll(start, "$$", "")
	if strings.Contains(start, "${"+name+"}") {
		return true
	}
	return slices.Contains(strings.Fields(start), "$"+name)
}

func (s *SystemdService) User() string  { return s.value("User") }
func (s *SystemdService) Group() string { return s.value("Group") }
func (s *SystemdService) SupplementaryGroups() []string {
	var groups []string
	for _, assignment := range s.Settings["SupplementaryGroups"] {
		groups = append(groups, splitWords(assignment)...)
	}
	return groups
}

// DynamicUser is DynamicUser=: systemd allocates the user when the service starts.
func (s *SystemdService) DynamicUser() bool { return isTrue(s.value("DynamicUser")) }

// BoundingSet and AmbientSet are the capability bounding and ambient sets after every
// CapabilityBoundingSet= and AmbientCapabilities= line in force.
func (s *SystemdService) BoundingSet() CapabilitySet {
	return capabilitySet(s.Settings["CapabilityBoundingSet"], AllCapabilities)
}
func (s *SystemdService) AmbientSet() CapabilitySet {
	return capabilitySet(s.Settings["AmbientCapabilities"], 0)
}

// execPrefixes are the prefixes of ExecStart's command (systemd.service(5)).
func (s *SystemdService) execPrefixes() string {
	start := s.value("ExecStart")
	return start[:len(start)-len(strings.TrimLeft(start, "-@+!:|"))]
}

// Privileged is ExecStart's "+" prefix: the server runs with full privileges, User=, Group=
// and the capability settings not applied.
func (s *SystemdService) Privileged() bool { return strings.Contains(s.execPrefixes(), "+") }

// KeepsRoot is ExecStart's "!" prefix: User=, Group= and SupplementaryGroups= are not
// applied, and the server runs as root with the unit's capability sets. "!!" does that only
// on systems without ambient capabilities, which no supported kernel is.
func (s *SystemdService) KeepsRoot() bool {
	prefixes := s.execPrefixes()
	return strings.Contains(prefixes, "!") && !strings.Contains(prefixes, "!!")
}

// RunsAsRoot says whether the server runs as root: no User= (or root, or 0) and no
// DynamicUser=, or ExecStart's "+" or "!" prefix.
func (s *SystemdService) RunsAsRoot() bool {
	if s.Privileged() || s.KeepsRoot() {
		return true
	}
	user := s.User()
	return !s.DynamicUser() && (user == "" || user == "root" || user == "0")
}

// Capabilities are the capabilities the server holds: root holds its bounding set, another
// user only the ambient capabilities the bounding set allows; ExecStart's "+" gives all.
func (s *SystemdService) Capabilities() CapabilitySet {
	switch {
	case s.Privileged():
		return AllCapabilities
	case s.RunsAsRoot():
		return s.BoundingSet()
	default:
		return s.BoundingSet() & s.AmbientSet()
	}
}

// CapabilitySettings names the settings that leave the server the capabilities it holds,
// each with the file of its assignment: for root, the bounding set's lines; for another user,
// User= and the ambient set's lines too.
func (s *SystemdService) CapabilitySettings() string {
	var parts []string
	if !s.RunsAsRoot() {
		parts = append(parts, s.Assignments("User")...)
		if ambient := s.Assignments("AmbientCapabilities"); len(ambient) > 0 {
			parts = append(parts, ambient...)
		} else {
			parts = append(parts, "no AmbientCapabilities=")
		}
	}
	if bounding := s.Assignments("CapabilityBoundingSet"); len(bounding) > 0 {
		parts = append(parts, bounding...)
	}
	if len(parts) == 0 {
		return "no CapabilityBoundingSet="
	}
	return strings.Join(parts, "; ")
}

// Assignments are a setting's lines in force, each as "Name=value in file".
func (s *SystemdService) Assignments(name string) []string {
	values := s.Settings[name]
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = fmt.Sprintf("%s=%s", name, v)
		if i < len(s.sources[name]) {
			out[i] += " in " + s.sources[name][i]
		}
	}
	return out
}
