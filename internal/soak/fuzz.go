package soak

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FuzzReport is hack/fuzz.sh's TSV report: a header line, then one line per fuzz target
// with its package, name, executions and time fuzzed, then (optionally) the wall time,
// build included, and the result, ok or FAIL.
type FuzzReport struct {
	Path    string
	Targets []FuzzTarget
}

// FuzzTarget is one line of the report.
type FuzzTarget struct {
	Package, Target string
	Executions      int64
	// Time is as the script wrote it, e.g. "30s"; Wall and Result are empty when absent.
	Time, Wall, Result string
}

// maxFuzzLines bounds what is read of a report.
const maxFuzzLines = 10000

// readFuzzReport reads a report; a missing file is os.ErrNotExist, for "not run".
func readFuzzReport(path string) (*FuzzReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseFuzzReport(path, string(data))
}

func parseFuzzReport(path, text string) (*FuzzReport, error) {
	r := &FuzzReport{Path: path}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > maxFuzzLines {
		return nil, fmt.Errorf("%s: more than %d lines", path, maxFuzzLines)
	}
	for i, line := range lines {
		if i == 0 || strings.TrimSpace(line) == "" { // the header
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 4 {
			return nil, fmt.Errorf("%s:%d: want 4 tab-separated fields (package, target, executions, time), got %d", path, i+1, len(fields))
		}
		execs, err := strconv.ParseInt(strings.TrimSpace(fields[2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: executions %q: %w", path, i+1, fields[2], err)
		}
		t := FuzzTarget{Package: strings.TrimSpace(fields[0]), Target: strings.TrimSpace(fields[1]),
			Executions: execs, Time: strings.TrimSpace(fields[3])}
		if len(fields) >= 6 {
			t.Wall, t.Result = strings.TrimSpace(fields[4]), strings.TrimSpace(fields[5])
		}
		r.Targets = append(r.Targets, t)
	}
	return r, nil
}
