package nodeconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemdDropInRoots are the directories, besides the unit's own, where systemd looks for
// <unit>.d/*.conf drop-ins, highest priority first.
var systemdDropInRoots = []string{"/etc/systemd/system"}

// SystemdService is a systemd unit that runs kube-apiserver, after its drop-ins.
type SystemdService struct {
	// Args are the server's arguments: ExecStart's after the program, variables substituted.
	Args []string
	// Settings are the unit's [Service] settings, by name, in the order they apply.
	Settings map[string][]string
}

// ReadSystemdUnit reads the unit at unitPath and its drop-ins, and substitutes the
// environment of its Environment= lines and of its EnvironmentFile (or environmentFile, when
// given, in its place) in ExecStart as systemd does: ${VAR} in place, $VAR split into words.
// Errors name the file.
func ReadSystemdUnit(unitPath, environmentFile string) (*SystemdService, error) {
	return readSystemdUnit(unitPath, environmentFile, systemdDropInRoots)
}

func readSystemdUnit(unitPath, environmentFile string, dropInRoots []string) (*SystemdService, error) {
	unit := map[string][]string{}
	if err := parseUnit(unitPath, unit); err != nil {
		return nil, err
	}
	dropIns, err := systemdDropIns(unitPath, dropInRoots)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", unitPath, err)
	}
	for _, dropIn := range dropIns {
		if err := parseUnit(dropIn, unit); err != nil {
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
	if environmentFile != "" {
		files = []string{environmentFile}
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
	return &SystemdService{Args: args, Settings: unit}, nil
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

// parseUnit adds the [Service] settings of a unit file or drop-in to settings, in order,
// line continuations joined; an empty assignment resets a setting, as in systemd.
func parseUnit(path string, settings map[string][]string) error {
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
		if section != "[Service]" {
			continue
		}
		key, value, ok := strings.Cut(full, "=")
		if !ok {
			return fmt.Errorf("%s: cannot parse %q", path, full)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if value == "" {
			delete(settings, key) // an empty assignment resets the list, as in systemd
			continue
		}
		settings[key] = append(settings[key], value)
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
