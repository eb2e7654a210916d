// Command buildtags writes the build constraint of every file that adapts to Kubernetes minors,
// from the file's name and the list of minors, so that the constraints are derived, never
// kept by hand:
//
//	x_1_35.go       Kubernetes 1.35 only
//	x_upto_1_36.go  every minor up to 1.36, that one included
//	x_from_1_37.go  every minor from 1.37 on, that one included
//
// (each with or without _test). The minors are releases/minors (oldest first; the newest is
// the default build, which has no tag of its own) and, when the file exists, releases/preview
// (a pre-release minor built and tested, never released, with its tag kube1.N like an older
// minor's). A minor other than the default is selected by its tag kube1.N; the default is
// the build with none of them. A file whose name selects no minor, or every minor, is an
// error: delete it, or merge it into the file without a suffix.
//
// usage: go run ./hack/buildtags [-verify] [-root DIR]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	verify := flag.Bool("verify", false, "write nothing; fail unless every constraint is the derived one")
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*root, *verify); err != nil {
		fmt.Fprintf(os.Stderr, "buildtags: %v\n", err)
		os.Exit(1)
	}
}

func run(root string, verify bool) error {
	lanes, err := readLanes(root)
	if err != nil {
		return err
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		return fmt.Errorf("listing the Go files: %v", err)
	}
	var errs []error
	for _, file := range strings.Fields(string(out)) {
		rule, ok := parseName(file)
		if !ok {
			// A minor's tag on a file of another name would be a constraint kept by hand.
			if data, err := os.ReadFile(filepath.Join(root, file)); err == nil && kubeConstraint.Match(data) {
				errs = append(errs, fmt.Errorf("%s: a Kubernetes minor's build tag on a file whose name says no minor: name it x_1_N.go, x_upto_1_N.go or x_from_1_N.go", file))
			}
			continue
		}
		constraint, err := lanes.constraint(rule)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		path := filepath.Join(root, file)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet from git's index
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		updated := withConstraint(data, constraint)
		if bytes.Equal(updated, data) {
			continue
		}
		if verify {
			errs = append(errs, fmt.Errorf("%s: want //go:build %s (run go run ./hack/buildtags)", file, constraint))
			continue
		}
		if err := os.WriteFile(path, updated, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// minor is a Kubernetes minor, 1.N, by N.
type minor int

func (m minor) String() string { return "1." + strconv.Itoa(int(m)) }
func (m minor) tag() string    { return "kube" + m.String() }

// lanes are the minors built: the supported ones and the preview, sorted, and the default.
type lanes struct {
	all         []minor
	defaultLane minor
}

func parseMinor(s string) (minor, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "1."))
	if !strings.HasPrefix(s, "1.") || err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a Kubernetes minor (1.N)", s)
	}
	return minor(n), nil
}

func readLanes(root string) (lanes, error) {
	data, err := os.ReadFile(filepath.Join(root, "releases", "minors"))
	if err != nil {
		return lanes{}, err
	}
	var l lanes
	for _, f := range strings.Fields(string(data)) {
		m, err := parseMinor(f)
		if err != nil {
			return lanes{}, fmt.Errorf("releases/minors: %w", err)
		}
		l.all = append(l.all, m)
	}
	if len(l.all) == 0 {
		return lanes{}, errors.New("releases/minors lists no minor")
	}
	l.defaultLane = l.all[len(l.all)-1]
	data, err = os.ReadFile(filepath.Join(root, "releases", "preview"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return lanes{}, err
	default:
		for _, f := range strings.Fields(string(data)) {
			m, err := parseMinor(f)
			if err != nil {
				return lanes{}, fmt.Errorf("releases/preview: %w", err)
			}
			if m <= l.defaultLane {
				return lanes{}, fmt.Errorf("releases/preview: %s is not newer than the newest supported minor, %s", m, l.defaultLane)
			}
			l.all = append(l.all, m)
		}
	}
	sort.Slice(l.all, func(i, j int) bool { return l.all[i] < l.all[j] })
	return l, nil
}

// rule is what a file's name selects: minors from lo to hi, both included.
type rule struct{ lo, hi minor }

// kubeConstraint matches a build constraint line that names a minor's tag.
var kubeConstraint = regexp.MustCompile(`(?m)^//go:build .*\bkube1\.\d+`)

var adapterName = regexp.MustCompile(`_(upto_|from_)?1_(\d+)(_test)?\.go$`)

// parseName reads the rule of a file's name; ok is false for a file that adapts to no minor.
func parseName(file string) (rule, bool) {
	m := adapterName.FindStringSubmatch(filepath.Base(file))
	if m == nil {
		return rule{}, false
	}
	n, _ := strconv.Atoi(m[2])
	switch m[1] {
	case "upto_":
		return rule{lo: 0, hi: minor(n)}, true
	case "from_":
		return rule{lo: minor(n), hi: minor(1 << 30)}, true
	}
	return rule{lo: minor(n), hi: minor(n)}, true
}

// constraint is the build constraint that selects exactly the lanes r names: the tags of
// those lanes, or, when the default lane is among them, the absence of the others' tags.
func (l lanes) constraint(r rule) (string, error) {
	var in, out []minor
	for _, m := range l.all {
		if m >= r.lo && m <= r.hi {
			in = append(in, m)
		} else {
			out = append(out, m)
		}
	}
	switch {
	case len(in) == 0:
		return "", errors.New("its name selects no minor that is built (releases/minors, releases/preview): delete it")
	case len(out) == 0:
		return "", errors.New("its name selects every minor that is built: merge it into the file without the suffix")
	}
	var terms []string
	for _, m := range in {
		if m == l.defaultLane {
			for _, o := range out {
				terms = append(terms, "!"+o.tag())
			}
			return strings.Join(terms, " && "), nil
		}
	}
	for _, m := range in {
		terms = append(terms, m.tag())
	}
	return strings.Join(terms, " || "), nil
}

// withConstraint returns the file with its //go:build line (the one before the package clause,
// after a header comment or not) set to constraint; a file without one gets it first, followed
// by a blank line.
func withConstraint(data []byte, constraint string) []byte {
	line := []byte("//go:build " + constraint)
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		trimmed := bytes.TrimSpace(l)
		if bytes.HasPrefix(trimmed, []byte("package ")) {
			break
		}
		if bytes.HasPrefix(trimmed, []byte("//go:build ")) {
			out := append([][]byte{}, lines[:i]...)
			out = append(out, append(line, '\n'))
			out = append(out, lines[i+1:]...)
			return bytes.Join(out, nil)
		}
	}
	return append(append(line, '\n', '\n'), data...)
}
