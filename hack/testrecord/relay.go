package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, and go test's build
// events).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// relayState prints and records the events of one run.
type relayState struct {
	out, record io.Writer
	// pending holds, per package, the output of its top-level tests still running, in the
	// order they started: printed if one fails (or its package does: a panic or a timeout),
	// dropped when it passes, as go test does without -v.
	pending map[string][]*testOutput
	failed  bool
	// recordErr is the record's first write error, after which the record is given up.
	recordErr error
	err       error
}

// testOutput is the output of a top-level test and its subtests.
type testOutput struct {
	test  string
	lines []string
}

func newRelay(out, record io.Writer) *relayState {
	return &relayState{out: out, record: record, pending: map[string][]*testOutput{}}
}

// output returns the pending output of a package's top-level test, added if new.
func (r *relayState) output(pkg, test string) *testOutput {
	for _, o := range r.pending[pkg] {
		if o.test == test {
			return o
		}
	}
	o := &testOutput{test: test}
	r.pending[pkg] = append(r.pending[pkg], o)
	return o
}

// flush prints, if print is set, then drops a package's pending output: test's, or every
// test's if test is "".
func (r *relayState) flush(pkg, test string, print bool) {
	kept := r.pending[pkg][:0]
	for _, o := range r.pending[pkg] {
		if test != "" && o.test != test {
			kept = append(kept, o)
			continue
		}
		if print {
			r.print(strings.Join(o.lines, ""))
		}
	}
	r.pending[pkg] = kept
	if len(kept) == 0 {
		delete(r.pending, pkg)
	}
}

// event handles one line of input; a line that is not JSON is printed as it is.
func (r *relayState) event(line []byte) {
	var e event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
		r.print(string(line) + "\n")
		return
	}
	top, _, _ := strings.Cut(e.Test, "/")
	switch e.Action {
	case "build-output":
		r.print(e.Output)
	case "build-fail":
		r.failed = true
	case "output":
		if e.Test == "" {
			// The package's own lines: its result ("ok", "FAIL"), and what no test wrote. A
			// package that fails with a test running (a panic, a timeout) has that test's
			// output printed before its result, as go test prints it.
			if strings.HasPrefix(e.Output, "FAIL\t") {
				r.flush(e.Package, "", true)
			}
			if e.Output != "PASS\n" {
				r.print(e.Output)
			}
			return
		}
		o := r.output(e.Package, top)
		o.lines = append(o.lines, e.Output)
	case "pass", "fail", "skip":
		if e.Action == "fail" {
			r.failed = true
		}
		if _, err := fmt.Fprintf(r.record, "%s\t%s\t%s\t%.2f\n", e.Action, e.Package, e.Test, e.Elapsed); err != nil {
			r.recordErr, r.record = err, io.Discard
		}
		if e.Test == top {
			r.flush(e.Package, top, e.Action == "fail")
		}
	}
}

func (r *relayState) print(s string) {
	if _, err := io.WriteString(r.out, s); err != nil && r.err == nil {
		r.err = err
	}
}
