package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// passingRuns are the records of a green run of two minors, old and new: every row's tests
// passed where its suite runs, two unit packages each (one of them test/docs, a unit package
// under test/), one under the race detector.
func passingRuns(minors []string) map[string][]string {
	runs := map[string][]string{}
	for i, minor := range minors {
		newest := i == len(minors)-1
		lines := map[string][]string{
			suiteUnit: {"pass\t" + module + "a\t\t1", "pass\t" + module + "test/docs\tTestDocs\t1", "pass\t" + module + "test/docs\t\t1", "skip\t" + module + "c\t\t0"},
		}
		if newest {
			lines[suiteRace] = []string{"pass\t" + module + "a\t\t1"}
			for _, m := range minors {
				lines[suiteUpgrade] = append(lines[suiteUpgrade], "pass\t"+module+"test/upgrade\tTestUpgradeAcrossMinors/Portcullis_"+m+"\t1")
			}
		}
		for _, c := range capabilities {
			if c.packages || c.upgradeStep || (!newest && !c.everyMinor) {
				continue
			}
			tests := c.tests
			if len(tests) == 0 {
				tests = []string{"TestOne", "TestTwo"}
			}
			for _, test := range tests {
				lines[c.suite] = append(lines[c.suite], "pass\t"+module+c.pkg+"\t"+test+"/a_case\t1", "pass\t"+module+c.pkg+"\t"+test+"\t1")
			}
			lines[c.suite] = append(lines[c.suite], "pass\t"+module+c.pkg+"\t\t2")
		}
		for suite, l := range lines {
			runs[filepath.Join(minor, suite+".tsv")] = append([]string{"run\tabc123"}, l...)
		}
	}
	return runs
}

// setUp writes the records, releases/minors and a page with an empty table; it returns the
// arguments of run.
func setUp(t *testing.T, minors []string, files map[string][]string) (records, minorsFile, doc string) {
	t.Helper()
	dir := t.TempDir()
	records = filepath.Join(dir, "records")
	for path, lines := range files {
		path = filepath.Join(records, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	minorsFile = filepath.Join(dir, "minors")
	doc = filepath.Join(dir, "compatibility.md")
	if err := os.WriteFile(minorsFile, []byte(strings.Join(minors, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte("# page\n\n"+beginMarker+"\nold\n"+endMarker+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return records, minorsFile, doc
}

// row returns the cells of the generated table's row whose capability starts with prefix.
func row(t *testing.T, page, prefix string) []string {
	t.Helper()
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "| "+prefix) {
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			return cells[1:]
		}
	}
	t.Fatalf("no row %q in\n%s", prefix, page)
	return nil
}

func TestGreenRunsWriteTheTable(t *testing.T) {
	minors := []string{"1.1", "1.2"}
	records, minorsFile, doc := setUp(t, minors, passingRuns(minors))
	if err := run(records, minorsFile, doc, true); err == nil || !strings.Contains(err.Error(), "make compatibility") {
		t.Errorf("-verify of a stale page: %v, want an error naming make compatibility", err)
	}
	if err := run(records, minorsFile, doc, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if !strings.HasPrefix(page, "# page\n\n"+beginMarker+"\n| capability | 1.2 | 1.1 |\n") || !strings.HasSuffix(page, endMarker+"\n\nafter\n") {
		t.Errorf("the table is not between the markers, newest minor first:\n%s", page)
	}
	for prefix, want := range map[string][2]string{
		"unit tests: every package":                        {"✓", "✓"},
		"the race detector":                                {"✓", "—"},
		"drift guards":                                     {"✓", "✓"},
		"every plugin of ours":                             {"✓", "✓"},
		"the rollback":                                     {"✓", "✓"},
		"webhook dispatch through real servers":            {"✓", "✓"},
		"the release (`test/release`): static":             {"✓", "✓"},
		"the release (`test/release`): the image's config": {"✓", "—"},
		"`make run`":                                       {"✓", "—"},
		"the upgrade across minors on one etcd":            {"✓", "✓"},
	} {
		if got := row(t, page, prefix); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("row %q: %q, want %q", prefix, got, want)
		}
	}
	if err := run(records, minorsFile, doc, true); err != nil {
		t.Errorf("-verify of the page just written: %v", err)
	}
}

func TestRecordsThatCannotMakeThePage(t *testing.T) {
	minors := []string{"1.1", "1.2"}
	for _, tc := range []struct {
		name   string
		change func(files map[string][]string)
		want   string
	}{{
		name:   "a minor's suite never ran",
		change: func(f map[string][]string) { delete(f, filepath.Join("1.1", "integration.tsv")) },
		want:   "integration.tsv: make test writes the newest minor's, make test-minors the others'",
	}, {
		name: "a test failed",
		change: func(f map[string][]string) {
			f[filepath.Join("1.2", "integration.tsv")] = append(f[filepath.Join("1.2", "integration.tsv")], "fail\t"+module+"test/integration/webhook\tTestThree\t1")
		},
		want: "1.2: integration test/integration/webhook TestThree failed in the last run",
	}, {
		name: "a test of an integration suite is in no row",
		change: func(f map[string][]string) {
			f[filepath.Join("1.1", "integration.tsv")] = append(f[filepath.Join("1.1", "integration.tsv")], "pass\t"+module+"test/integration/apiserver\tTestNew\t1")
		},
		want: "1.1: test/integration/apiserver.TestNew is in no row",
	}, {
		name: "a row's test did not run on a minor that ran its package",
		change: func(f map[string][]string) {
			var kept []string
			for _, l := range f[filepath.Join("1.1", "integration.tsv")] {
				if !strings.Contains(l, "\tTestRollback\t") {
					kept = append(kept, l)
				}
			}
			f[filepath.Join("1.1", "integration.tsv")] = kept
		},
		want: "1.1, \"the rollback: that minor's stock starts on every file the project ships and on the etcd ours wrote\": TestRollback did not pass in the integration record of test/integration/apiserver",
	}, {
		name: "a minor's upgrade step did not pass",
		change: func(f map[string][]string) {
			upgrade := f[filepath.Join("1.2", "upgrade.tsv")]
			f[filepath.Join("1.2", "upgrade.tsv")] = append(upgrade[:1], upgrade[2:]...)
		},
		want: "the upgrade's record has no passing step TestUpgradeAcrossMinors/Portcullis_1.1",
	}, {
		name: "a malformed line",
		change: func(f map[string][]string) {
			f[filepath.Join("1.1", "unit.tsv")] = []string{"run\tabc123", "pass only"}
		},
		want: "unit.tsv:2: want 4 tab-separated fields",
	}, {
		name: "a record of no run",
		change: func(f map[string][]string) {
			f[filepath.Join("1.1", "unit.tsv")] = f[filepath.Join("1.1", "unit.tsv")][1:]
		},
		want: "unit.tsv:1: want \"run\\t<commit>\"",
	}, {
		name: "records of two runs",
		change: func(f map[string][]string) {
			f[filepath.Join("1.1", "unit.tsv")] = append([]string{"run\tdef456"}, f[filepath.Join("1.1", "unit.tsv")][1:]...)
		},
		want: "the records must come from one commit",
	}, {
		name: "the newest minor's run left a suite out (a -run, make test-minor of the newest)",
		change: func(f map[string][]string) {
			var kept []string
			for _, l := range f[filepath.Join("1.2", "integration.tsv")] {
				if !strings.Contains(l, "test/integration/webhook") {
					kept = append(kept, l)
				}
			}
			f[filepath.Join("1.2", "integration.tsv")] = kept
		},
		want: "1.2, \"webhook dispatch through real servers (`test/integration/webhook`)\": test/integration/webhook did not pass in the integration record",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			files := passingRuns(minors)
			tc.change(files)
			records, minorsFile, doc := setUp(t, minors, files)
			before, _ := os.ReadFile(doc)
			err := run(records, minorsFile, doc, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if after, _ := os.ReadFile(doc); string(after) != string(before) {
				t.Errorf("the page was written from records that cannot make it")
			}
		})
	}
}

func TestAPageWithoutMarkers(t *testing.T) {
	minors := []string{"1.1", "1.2"}
	records, minorsFile, doc := setUp(t, minors, passingRuns(minors))
	if err := os.WriteFile(doc, []byte("# page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(records, minorsFile, doc, false); err == nil || !strings.Contains(err.Error(), "no \""+beginMarker) {
		t.Errorf("got %v, want an error naming the missing marker", err)
	}
}
