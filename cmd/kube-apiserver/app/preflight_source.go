package app

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// commandLineFromManifest returns the arguments kube-apiserver gets from a static pod
// manifest: its container's command after the program name, then its args, as the kubelet
// passes them.
func commandLineFromManifest(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--manifest: %w", err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return nil, fmt.Errorf("--manifest %s: not a Pod manifest: %w", path, err)
	}
	for _, c := range pod.Spec.Containers {
		argv := append(append([]string{}, c.Command...), c.Args...)
		if len(argv) == 0 {
			continue
		}
		if c.Name == "kube-apiserver" || filepath.Base(argv[0]) == "kube-apiserver" {
			if filepath.Base(argv[0]) != "kube-apiserver" {
				return nil, fmt.Errorf("--manifest %s: container %q runs %q, not kube-apiserver", path, c.Name, argv[0])
			}
			return argv[1:], nil
		}
	}
	return nil, fmt.Errorf("--manifest %s: no container runs kube-apiserver", path)
}

// commandLineFromSystemdUnit returns the arguments of the unit's ExecStart, with the
// environment of its Environment= lines and of its EnvironmentFile (or environmentFile, when
// given, in its place) substituted as systemd does: ${VAR} in place, $VAR split into words.
func commandLineFromSystemdUnit(unitPath, environmentFile string) ([]string, error) {
	unit, err := parseUnit(unitPath)
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("--systemd-unit %s: want exactly one ExecStart=, found %d", unitPath, len(starts))
	}
	// Prefixes that change how systemd runs the command, not the command itself.
	line := strings.TrimLeft(starts[0], "-@+!:|")
	var argv []string
	for _, word := range splitWords(line) {
		argv = append(argv, expand(word, env)...)
	}
	argv = withoutEnvWrapper(argv)
	if len(argv) == 0 || filepath.Base(argv[0]) != "kube-apiserver" {
		return nil, fmt.Errorf("--systemd-unit %s: ExecStart runs %q, not kube-apiserver", unitPath, strings.Join(argv, " "))
	}
	return argv[1:], nil
}

// withoutEnvWrapper drops a leading env(1) and its NAME=VALUE assignments: units start a
// binary whose path is a variable through env, since systemd expands none in the program.
func withoutEnvWrapper(argv []string) []string {
	if len(argv) == 0 || filepath.Base(argv[0]) != "env" {
		return argv
	}
	argv = argv[1:]
	for len(argv) > 0 && strings.Contains(argv[0], "=") && !strings.HasPrefix(argv[0], "-") {
		argv = argv[1:]
	}
	return argv
}

// parseUnit returns the [Service] settings of a unit file, in order, line continuations
// joined.
func parseUnit(path string) (map[string][]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--systemd-unit: %w", err)
	}
	settings := map[string][]string{}
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
			return nil, fmt.Errorf("--systemd-unit %s: cannot parse %q", path, full)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if value == "" {
			delete(settings, key) // an empty assignment resets the list, as in systemd
			continue
		}
		settings[key] = append(settings[key], value)
	}
	return settings, scanner.Err()
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
