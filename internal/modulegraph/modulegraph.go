// Package modulegraph compares the modules a binary links with upstream's module graph for a
// Kubernetes release: the go.mod of k8s.io/kubernetes at that version, which names every module
// of upstream's build at the version upstream's build selects (graph pruning keeps indirect
// ones listed), its staging modules replaced by their directories, published as v0.N.P.
package modulegraph

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// Graph maps a module path to its version.
type Graph map[string]string

// Upstream reads k8s.io/kubernetes's go.mod of release kubeVersion (v1.N.P): its required
// modules at their versions, each staging module (replaced by ./staging/...) at v0.N.P.
func Upstream(gomod []byte, kubeVersion string) (Graph, error) {
	if !strings.HasPrefix(kubeVersion, "v1.") {
		return nil, fmt.Errorf("kubernetes version %q: want v1.N.P", kubeVersion)
	}
	stagingVersion := "v0." + strings.TrimPrefix(kubeVersion, "v1.")
	graph := Graph{}
	staging := map[string]bool{}
	// replacement records one replace directive's fields (old [version] => new [version]).
	replacement := func(fields []string) error {
		arrow := -1
		for i, f := range fields {
			if f == "=>" {
				arrow = i
			}
		}
		if arrow < 1 || arrow+1 >= len(fields) {
			return fmt.Errorf("replace directive %q: cannot read it", strings.Join(fields, " "))
		}
		if !strings.HasPrefix(fields[arrow+1], "./staging/") {
			return fmt.Errorf("upstream's go.mod replaces %s with %s: not a staging directory, which this comparison does not know", fields[0], strings.Join(fields[arrow+1:], " "))
		}
		staging[fields[0]] = true
		return nil
	}
	block := ""
	scanner := bufio.NewScanner(bytes.NewReader(gomod))
	for scanner.Scan() {
		line := scanner.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == ")":
			block = ""
		case len(fields) == 2 && fields[1] == "(":
			block = fields[0]
		case fields[0] == "require" && len(fields) == 3:
			graph[fields[1]] = fields[2]
		case fields[0] == "replace":
			if err := replacement(fields[1:]); err != nil {
				return nil, err
			}
		case block == "require" && len(fields) == 2:
			graph[fields[0]] = fields[1]
		case block == "replace":
			if err := replacement(fields); err != nil {
				return nil, err
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(staging) == 0 {
		return nil, fmt.Errorf("upstream's go.mod replaces no module with a staging directory: is it k8s.io/kubernetes's?")
	}
	for module := range staging {
		graph[module] = stagingVersion
	}
	graph["k8s.io/kubernetes"] = kubeVersion
	return graph, nil
}

// OwnModule is this repository's staging API module, which every minor's go.mod replaces with
// its directory: the distribution's code, like the main module, and so not compared.
const OwnModule = "github.com/portcullis-k8s/api"

// Linked returns the modules a binary links, each at the version it was built from: a module
// replaced by another version is at that version, one replaced by a directory at "dir:" and
// the directory (a difference from any graph), but for OwnModule, which is left out.
func Linked(info *debug.BuildInfo) Graph {
	graph := Graph{}
	for _, dep := range info.Deps {
		version := dep.Version
		if dep.Replace != nil {
			switch {
			case dep.Path == OwnModule && isDirectory(dep.Replace.Path):
				continue
			case isDirectory(dep.Replace.Path):
				version = "dir:" + dep.Replace.Path
			case dep.Replace.Path != dep.Path:
				version = dep.Replace.Path + "@" + dep.Replace.Version
			default:
				version = dep.Replace.Version
			}
		}
		graph[dep.Path] = version
	}
	if info.Main.Path == "k8s.io/kubernetes" {
		graph[info.Main.Path] = info.Main.Version
	}
	return graph
}

// isDirectory reports whether a replacement's path is a directory (go.mod's ./ or ../ or an
// absolute path) rather than a module path.
func isDirectory(path string) bool {
	return strings.HasPrefix(path, "./") || strings.HasPrefix(path, "../") || strings.HasPrefix(path, "/")
}

// Difference is a module a binary links at another version than upstream's (Upstream is empty
// when upstream's graph has no such module).
type Difference struct {
	Path, Linked, Upstream string
}

func (d Difference) String() string {
	upstream := d.Upstream
	if upstream == "" {
		upstream = "not in upstream's graph"
	}
	return fmt.Sprintf("%s %s (upstream: %s)", d.Path, d.Linked, upstream)
}

// Compare lists, sorted by path, every module linked that upstream's graph names at another
// version or does not name.
func Compare(linked, upstream Graph) []Difference {
	var diffs []Difference
	for path, version := range linked {
		if want := upstream[path]; want != version {
			diffs = append(diffs, Difference{Path: path, Linked: version, Upstream: want})
		}
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].Path < diffs[j].Path })
	return diffs
}

// Exception is one row of the documented list of differences: on Minor (1.N), Path links
// Linked where upstream's graph has Upstream ("-" for none), for the reason Why.
type Exception struct {
	Minor, Path, Linked, Upstream, Why string
}

// Matches reports whether the exception covers d on minor.
func (e Exception) Matches(minor string, d Difference) bool {
	upstream := d.Upstream
	if upstream == "" {
		upstream = "-"
	}
	return e.Minor == minor && e.Path == d.Path && e.Linked == d.Linked && e.Upstream == upstream
}

// ParseExceptions reads the markdown table under the heading (a line equal to heading) of a
// doc: | minor | module | linked | upstream's | why |, each cell of the first four in
// backquotes or plain. Every row must have a reason.
func ParseExceptions(doc []byte, heading string) ([]Exception, error) {
	lines := strings.Split(string(doc), "\n")
	start := -1
	for i, line := range lines {
		if strings.TrimSpace(line) == heading {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	var exceptions []Exception
	inTable := false
	for _, line := range lines[start:] {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		if len(cells) != 5 {
			return nil, fmt.Errorf("row %q: want 5 cells (minor, module, linked, upstream's, why), got %d", line, len(cells))
		}
		if cells[0] == "minor" || strings.Trim(cells[0], "-: ") == "" {
			continue // the header and its rule
		}
		if cells[4] == "" {
			return nil, fmt.Errorf("row %q: no reason given", line)
		}
		exceptions = append(exceptions, Exception{Minor: cells[0], Path: cells[1], Linked: cells[2], Upstream: cells[3], Why: cells[4]})
	}
	return exceptions, nil
}
