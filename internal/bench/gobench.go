package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	ouradmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
)

// The kinds of request a plugin benchmark case measures, from its name: a path element
// starting with "ignored" or "checked".
const (
	CaseIgnored = "ignored"
	CaseChecked = "checked"
	CaseOther   = "other"
)

// PluginBenchmark is one Go benchmark of one or more of our plugins, over -count runs.
type PluginBenchmark struct {
	// Plugins are the plugins the benchmark measures: its package's, narrowed to the one it
	// names when the package holds several.
	Plugins []string
	Package string
	// Name is the benchmark's full name without the -GOMAXPROCS suffix.
	Name string
	// Case is CaseIgnored, CaseChecked or CaseOther.
	Case string
	// NsPerOp, BytesPerOp and AllocsPerOp hold one value per run.
	NsPerOp, BytesPerOp, AllocsPerOp []float64
}

// PluginsResult is table 4: the Go benchmarks of every plugin of ours.
type PluginsResult struct {
	Options PluginOptions
	// Plugins are every plugin of ours, in the registry's order, then our decorators.
	Plugins []string
	// Command is the go test command line that ran.
	Command    []string
	Benchmarks []PluginBenchmark
}

// CasesOf returns the benchmarks of plugin of the given case.
func (r *PluginsResult) CasesOf(plugin, kind string) []PluginBenchmark {
	var out []PluginBenchmark
	for _, b := range r.Benchmarks {
		if b.Case == kind && slices.Contains(b.Plugins, plugin) {
			out = append(out, b)
		}
	}
	return out
}

// registryPackages maps each package that registers a plugin of ours to those plugins, and
// lists the plugins in the registry's order.
func registryPackages() (map[string][]string, []string, error) {
	byPackage := map[string][]string{}
	var names []string
	for _, p := range ouradmission.Plugins() {
		fn := runtime.FuncForPC(reflect.ValueOf(p.Register).Pointer())
		if fn == nil {
			return nil, nil, fmt.Errorf("cannot tell which package registers %s", p.Name)
		}
		pkg, err := packageOfFunc(fn.Name())
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		byPackage[pkg] = append(byPackage[pkg], p.Name)
		names = append(names, p.Name)
	}
	return byPackage, names, nil
}

// packageOfFunc returns the import path in a function's symbol name, such as
// "example.com/a/b" in "example.com/a/b.Register" or "example.com/a/b.(*T).m". Symbols
// escape a dot in the path's last element as %2e, so the first dot after the last slash
// ends the path.
func packageOfFunc(symbol string) (string, error) {
	slash := strings.LastIndex(symbol, "/")
	dot := strings.Index(symbol[slash+1:], ".")
	if dot < 1 {
		return "", fmt.Errorf("no package in the symbol %q", symbol)
	}
	return strings.ReplaceAll(symbol[:slash+1+dot], "%2e", "."), nil
}

// Decorators are the admission decorators of ours that table 4 reports after the plugins,
// by name, with the package of their benchmarks: each wraps every plugin of the chain, so
// its cost is per plugin.
func Decorators() (map[string][]string, []string, error) {
	fn := runtime.FuncForPC(reflect.ValueOf(trace.New).Pointer())
	if fn == nil {
		return nil, nil, fmt.Errorf("cannot tell the admission trace's package")
	}
	pkg, err := packageOfFunc(fn.Name())
	if err != nil {
		return nil, nil, err
	}
	const name = "admission trace (per plugin)"
	return map[string][]string{pkg: {name}}, []string{name}, nil
}

// runPluginBenchmarks runs the Go benchmarks of every package that registers a plugin of
// ours, and of our decorators, with -benchmem, and attributes each benchmark to its plugins.
func runPluginBenchmarks(ctx context.Context, env *environment, opts PluginOptions) (*PluginsResult, error) {
	byPackage, names, err := registryPackages()
	if err != nil {
		return nil, err
	}
	decorators, decoratorNames, err := Decorators()
	if err != nil {
		return nil, err
	}
	maps.Copy(byPackage, decorators)
	names = append(names, decoratorNames...)
	packages := make([]string, 0, len(byPackage))
	for pkg := range byPackage {
		packages = append(packages, pkg)
	}
	slices.Sort(packages)
	// GOMAXPROCS is pinned so the suffix go test appends to names is known.
	procs := runtime.NumCPU()
	// Compiled with the binary's PGO profile, as the plugins run in the shipped binary (and as
	// the unit tests compile them, so the build is shared).
	args := append([]string{"test", "-pgo=cmd/kube-apiserver/default.pgo", "-run", "^$", "-bench", ".", "-benchmem",
		"-count", strconv.Itoa(opts.Count), "-benchtime", opts.BenchTime, "-cpu", strconv.Itoa(procs)}, packages...)
	cmd := exec.CommandContext(ctx, env.goTool, args...)
	cmd.Dir = env.repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, env.progress.Writer())
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s%s", env.goTool, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	benchmarks, err := parseBenchmarks(&stdout, byPackage, procs)
	if err != nil {
		return nil, err
	}
	return &PluginsResult{Options: opts, Plugins: names, Command: append([]string{"go"}, args...), Benchmarks: benchmarks}, nil
}

// parseBenchmarks reads go test -bench -benchmem output. Repeated lines of one benchmark
// (-count) become one PluginBenchmark with a value per run, in order of first appearance.
func parseBenchmarks(output io.Reader, byPackage map[string][]string, procs int) ([]PluginBenchmark, error) {
	suffix := ""
	if procs > 1 {
		suffix = "-" + strconv.Itoa(procs)
	}
	var (
		pkg   string
		out   []PluginBenchmark
		index = map[string]int{}
	)
	scanner := bufio.NewScanner(output)
	for scanner.Scan() {
		line := scanner.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if pkg == "" {
			return nil, fmt.Errorf("benchmark line before any pkg: line: %q", line)
		}
		name := strings.TrimSuffix(fields[0], suffix)
		values := map[string]float64{}
		// fields[1] is the iteration count; value-unit pairs follow.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", line, err)
			}
			values[fields[i+1]] = v
		}
		for _, unit := range []string{"ns/op", "B/op", "allocs/op"} {
			if _, ok := values[unit]; !ok {
				return nil, fmt.Errorf("benchmark line %q has no %s (is -benchmem set?)", line, unit)
			}
		}
		key := pkg + " " + name
		i, seen := index[key]
		if !seen {
			i = len(out)
			index[key] = i
			out = append(out, PluginBenchmark{
				Plugins: attribute(name, byPackage[pkg]),
				Package: pkg,
				Name:    name,
				Case:    caseOf(name),
			})
		}
		b := &out[i]
		b.NsPerOp = append(b.NsPerOp, values["ns/op"])
		b.BytesPerOp = append(b.BytesPerOp, values["B/op"])
		b.AllocsPerOp = append(b.AllocsPerOp, values["allocs/op"])
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// attribute narrows a package's plugins to the one a benchmark names in a path element;
// a benchmark naming none measures them all.
func attribute(name string, plugins []string) []string {
	elements := strings.Split(name, "/")
	for _, p := range plugins {
		if slices.Contains(elements, p) {
			return []string{p}
		}
	}
	return slices.Clone(plugins)
}

// caseOf reads the case from the benchmark's name.
func caseOf(name string) string {
	for _, element := range strings.Split(name, "/")[1:] {
		switch {
		case strings.HasPrefix(element, CaseIgnored):
			return CaseIgnored
		case strings.HasPrefix(element, CaseChecked):
			return CaseChecked
		}
	}
	return CaseOther
}
