// Command testrecord reads `go test -json` on its standard input, prints what `go test`
// without -json prints (each package's result, and the output of the tests that failed), and
// writes the outcome of every test to a record file, from which hack/compatibility writes
// docs/compatibility.md's table of what is tested on each minor.
//
// usage: go test -json ... | testrecord [-run ID] -o FILE
//
// The record is tab-separated: a first line "run" and ID (the commit the Makefile passes), then
// one line per test and per package: action (pass, fail, skip), package, test ("" for the
// package) and seconds. testrecord exits 1 if a test, a package or
// a build failed, so a pipeline under pipefail fails as go test would.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command: its exit code is 1 if something failed, 2 if testrecord did.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	flags := flag.NewFlagSet("testrecord", flag.ContinueOnError)
	flags.SetOutput(errOut)
	path := flags.String("o", "", "the record file to write")
	runID := flags.String("run", "", "what the run was of (the commit), written as the record's first line")
	if err := flags.Parse(args); err != nil || *path == "" || flags.NArg() != 0 {
		fmt.Fprintln(errOut, "usage: go test -json ... | testrecord [-run ID] -o FILE")
		return 2
	}
	// A record that cannot be written must not cost the run its output: go test's is relayed
	// whatever happens to the record, and the failure reported after it.
	var record io.Writer = io.Discard
	f, recordErr := os.Create(*path)
	if recordErr == nil {
		record = f
		if *runID != "" {
			_, recordErr = fmt.Fprintf(f, "run\t%s\n", *runID)
		}
	}
	failed, writeErr, err := relay(in, out, record)
	if recordErr == nil {
		recordErr = writeErr
	}
	if f != nil {
		if cerr := f.Close(); recordErr == nil {
			recordErr = cerr
		}
	}
	if err == nil && recordErr != nil {
		err = fmt.Errorf("the record %s: %v", *path, recordErr)
	}
	if err != nil {
		fmt.Fprintf(errOut, "testrecord: %v\n", err)
		return 2
	}
	if failed {
		// What go test prints last when something failed, which it leaves out under -json.
		fmt.Fprintln(out, "FAIL")
		return 1
	}
	return 0
}

// relay reads the events of `go test -json` from in, prints the human output to out and the
// outcomes to record, until in ends: a record that fails to be written is given up, and
// reported (recordErr), never the run's output. It reports whether anything failed.
func relay(in io.Reader, out, record io.Writer) (failed bool, recordErr, err error) {
	r := newRelay(out, record)
	reader := bufio.NewReader(in)
	for {
		line, readErr := reader.ReadBytes('\n')
		if len(line) > 0 {
			r.event(bytes.TrimSuffix(line, []byte("\n")))
		}
		if readErr == io.EOF {
			return r.failed, r.recordErr, r.err
		}
		if readErr != nil {
			return true, r.recordErr, readErr
		}
	}
}
