package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRelay(t *testing.T) {
	for _, tc := range []struct {
		name                string
		in                  string
		wantOut, wantRecord string
		wantFailed          bool
	}{{
		name: "a passing package prints its result only",
		in: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"p","Test":"TestA/sub"}
{"Action":"output","Package":"p","Test":"TestA/sub","Output":"    a_test.go:3: noise\n"}
{"Action":"pass","Package":"p","Test":"TestA/sub","Elapsed":0.5}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t1.2s\n"}
{"Action":"pass","Package":"p","Elapsed":1.2}
`,
		wantOut:    "ok  \tp\t1.2s\n",
		wantRecord: "pass\tp\tTestA/sub\t0.50\npass\tp\tTestA\t1.00\npass\tp\t\t1.20\n",
	}, {
		name: "a failing test prints its output and its subtests', not a passing one's",
		in: `{"Action":"output","Package":"p","Test":"TestOK","Output":"quiet\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"p","Test":"TestBad/case","Output":"    bad_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"p","Test":"TestBad/case","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad","Elapsed":0}
{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":0}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`,
		wantOut:    "=== RUN   TestBad\n    bad_test.go:9: want 1, got 2\n--- FAIL: TestBad (0.00s)\nFAIL\tp\t0.1s\n",
		wantRecord: "fail\tp\tTestBad/case\t0.00\nfail\tp\tTestBad\t0.00\npass\tp\tTestOK\t0.00\nfail\tp\t\t0.10\n",
		wantFailed: true,
	}, {
		name: "a package that fails while a test runs (a panic, a timeout) prints that test's output",
		in: `{"Action":"output","Package":"p","Test":"TestHang","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`,
		wantOut:    "panic: test timed out after 1s\nFAIL\tp\t1.0s\n",
		wantRecord: "fail\tp\t\t1.00\n",
		wantFailed: true,
	}, {
		name: "a build failure is printed and fails the run",
		in: `{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p\n./a.go:1:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","Elapsed":0}
`,
		wantOut:    "# p\n./a.go:1:1: syntax error\nFAIL\tp [build failed]\n",
		wantRecord: "fail\tp\t\t0.00\n",
		wantFailed: true,
	}, {
		name:    "a line that is not an event is printed as it is",
		in:      "go: downloading example.com/m v1.0.0\n",
		wantOut: "go: downloading example.com/m v1.0.0\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out, record bytes.Buffer
			failed, recordErr, err := relay(strings.NewReader(tc.in), &out, &record)
			if err != nil || recordErr != nil {
				t.Fatal(err, recordErr)
			}
			if out.String() != tc.wantOut {
				t.Errorf("printed\n%q\nwant\n%q", out.String(), tc.wantOut)
			}
			if record.String() != tc.wantRecord {
				t.Errorf("recorded\n%q\nwant\n%q", record.String(), tc.wantRecord)
			}
			if failed != tc.wantFailed {
				t.Errorf("failed = %v, want %v", failed, tc.wantFailed)
			}
		})
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("no space left on device")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestARecordThatFailsMidRunStillRelaysTheRun(t *testing.T) {
	in := `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestB","Output":"bad\n"}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`
	var out bytes.Buffer
	failed, recordErr, err := relay(strings.NewReader(in), &out, &failingWriter{n: 20})
	if err != nil {
		t.Fatal(err)
	}
	if recordErr == nil || !strings.Contains(recordErr.Error(), "no space left") {
		t.Errorf("the record's error is %v, want the write's", recordErr)
	}
	if want := "bad\nFAIL\tp\t0.1s\n"; out.String() != want || !failed {
		t.Errorf("printed %q (failed %v), want %q and failed", out.String(), failed, want)
	}
}

func TestRun(t *testing.T) {
	const passing = `{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p","Elapsed":0.1}
`
	const failing = `{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, in, record string
		args             []string
		wantCode         int
		wantOut          string
		wantRecord       string
		wantErr          string
	}{
		{name: "a green run", in: passing, record: "r.tsv", args: []string{"-run", "abc123"}, wantCode: 0,
			wantOut: "ok  \tp\t0.1s\n", wantRecord: "run\tabc123\npass\tp\t\t0.10\n"},
		{name: "a failed run ends as go test's does", in: failing, record: "f.tsv", wantCode: 1,
			wantOut: "FAIL\tp\t0.1s\nFAIL\n", wantRecord: "fail\tp\t\t0.10\n"},
		{name: "a record that cannot be written still relays the run", in: failing, record: "missing/dir/r.tsv", wantCode: 2,
			wantOut: "FAIL\tp\t0.1s\n", wantErr: "testrecord: the record " + filepath.Join(dir, "missing/dir/r.tsv")},
		{name: "no record named", in: passing, wantCode: 2, wantErr: "usage: go test -json ... | testrecord"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.record != "" {
				args = append(args, "-o", filepath.Join(dir, tc.record))
			}
			var out, errOut bytes.Buffer
			if code := run(args, strings.NewReader(tc.in), &out, &errOut); code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			if out.String() != tc.wantOut {
				t.Errorf("printed %q, want %q", out.String(), tc.wantOut)
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), tc.wantErr)
			}
			if tc.wantRecord != "" {
				data, err := os.ReadFile(filepath.Join(dir, tc.record))
				if err != nil || string(data) != tc.wantRecord {
					t.Errorf("record %q (%v), want %q", data, err, tc.wantRecord)
				}
			}
		})
	}
}
