package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/pkg/admission"
)

// ourPlugins is every plugin of ours, from the registry: a plugin added there without a
// case here fails TestBadInputsCoverEveryPluginOfOurs.
func ourPlugins() []string {
	var names []string
	for _, p := range admission.Plugins() {
		names = append(names, p.Name)
	}
	for _, r := range admission.Replacements() {
		names = append(names, r.Name)
	}
	return names
}

func TestBadInputsCoverEveryPluginOfOurs(t *testing.T) {
	ours := ourPlugins()
	covered := map[string]int{}
	for _, c := range BadInputs("ns") {
		covered[c.Plugin]++
	}
	for _, name := range ours {
		if covered[name] == 0 {
			t.Errorf("no bad input is filed under the plugin %s", name)
		}
	}
	for name := range covered {
		if name != NoPlugin && !slices.Contains(ours, name) {
			t.Errorf("cases are filed under %q, which is no plugin of ours (%v)", name, ours)
		}
	}
}

func TestBadInputsAreWellFormed(t *testing.T) {
	needs := []string{"", NeedsPod, NeedsPrivilegedPod, NeedsHostPIDPod, NeedsPodPreset, NeedsPodSecurityPolicy,
		NeedsValidatingWebhookConfiguration, NeedsMutatingWebhookConfiguration}
	seen := map[string]bool{}
	all := BadInputs("ns")
	for _, c := range all {
		if c.Name == "" || seen[c.Name] {
			t.Errorf("case name %q is empty or not unique", c.Name)
		}
		seen[c.Name] = true
		if !slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, c.Method) {
			t.Errorf("%s: method %q", c.Name, c.Method)
		}
		if !strings.HasPrefix(c.Path, "/api/") && !strings.HasPrefix(c.Path, "/apis/") {
			t.Errorf("%s: path %q is not an API path", c.Name, c.Path)
		}
		if strings.Contains(c.Path, "/namespaces/") && !strings.Contains(c.Path, "/namespaces/ns/") {
			t.Errorf("%s: path %q is outside the namespace", c.Name, c.Path)
		}
		if c.Twin != "" && !slices.ContainsFunc(all, func(twin BadInput) bool { return twin.Name == c.Twin && twin.Twin == "" }) {
			t.Errorf("%s: its twin %q is no case, or has a twin itself", c.Name, c.Twin)
		}
		if !slices.Contains(needs, c.Needs) {
			t.Errorf("%s: needs %q, which PrepareBadInputs does not create", c.Name, c.Needs)
		}
		if c.Want != 0 && (c.Want < 400 || c.Want > 499) {
			t.Errorf("%s: wants %d, not a 4xx", c.Name, c.Want)
		}
		if len(c.Body) > RequestBodyLimit+1 {
			t.Errorf("%s: a body of %d bytes; the table probes the limit, it need not go further", c.Name, len(c.Body))
		}
	}
}

// The cases at the body limit are exactly at it and one byte past it.
func TestBadInputsProbeTheBodyLimit(t *testing.T) {
	var at, over int
	for _, c := range BadInputs("ns") {
		switch len(c.Body) {
		case RequestBodyLimit:
			at++
			if c.Want != 422 {
				t.Errorf("%s: a body of exactly the limit is read, and refused for its annotation: want 422, not %d", c.Name, c.Want)
			}
		case RequestBodyLimit + 1:
			over++
			if c.Want != 413 {
				t.Errorf("%s: a body past the limit is refused unread: want 413, not %d", c.Name, c.Want)
			}
		}
	}
	if at != 5 || over < 5 {
		t.Errorf("%d cases at the limit and %d past it; want one of each per resource (5), or more past it", at, over)
	}
}

// The bodies meant to be well-formed JSON apart from one thing are; the deep ones are as
// deep as they say.
func TestBadInputsBodies(t *testing.T) {
	for _, c := range BadInputs("ns") {
		switch {
		case strings.Contains(c.Name, "past etcd's request limit"), strings.Contains(c.Name, "past the etcd client's"):
			limit := 1_572_864 + 10_000
			if strings.Contains(c.Name, "client's") {
				limit = 2 << 20
			}
			if !json.Valid(c.Body) || len(c.Body) < limit || len(c.Body) > RequestBodyLimit {
				t.Errorf("%s: %d bytes, valid JSON %v: want well-formed JSON past %d bytes and within the 3 MiB limit", c.Name, len(c.Body), json.Valid(c.Body), limit)
			}
		case c.ContentType == contentJSON && (strings.Contains(c.Name, "fieldValidation=Strict") ||
			strings.Contains(c.Name, "wrong kind") || strings.Contains(c.Name, "a string where")):
			if !json.Valid(c.Body) {
				t.Errorf("%s: the body is not valid JSON: %.200s", c.Name, c.Body)
			}
		case strings.HasSuffix(c.Name, "invalid JSON"), strings.Contains(c.Name, "truncated JSON"):
			if json.Valid(c.Body) {
				t.Errorf("%s: the body is valid JSON", c.Name)
			}
		case strings.Contains(c.Name, "10,001 levels"), strings.Contains(c.Name, "10,001 nested"):
			if !bytes.Contains(c.Body, []byte(strings.Repeat("[", 10_001))) {
				t.Errorf("%s: not 10,001 levels deep", c.Name)
			}
		}
	}
}

func TestAliasBombExpandsToABillion(t *testing.T) {
	bomb := string(aliasBomb("v1", "Pod"))
	if got := strings.Count(bomb, "*"); got != 80 {
		t.Errorf("%d aliases, want 8 levels of 10", got)
	}
	if !strings.Contains(bomb, "i: &i [*h,") {
		t.Errorf("the last level is missing:\n%s", bomb)
	}
}

func TestBadInputResultClear(t *testing.T) {
	for _, tc := range []struct {
		r    BadInputResult
		want bool
	}{
		{BadInputResult{Status: 400, Message: "bad"}, true},
		{BadInputResult{Status: 413, Message: "limit is 3145728"}, true},
		{BadInputResult{Status: 400, Message: "  "}, false},
		{BadInputResult{Status: 500, Message: "oops"}, false},
		{BadInputResult{Status: 201, Message: "created"}, false},
		{BadInputResult{Status: 0, Message: "connection reset"}, false},
	} {
		if got := tc.r.Clear(); got != tc.want {
			t.Errorf("%+v: Clear() = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestBadInputResultSameFailureAs(t *testing.T) {
	for _, tc := range []struct {
		ours, stock BadInputResult
		want        bool
	}{
		{BadInputResult{Status: 500, Message: "x"}, BadInputResult{Status: 500, Message: "y"}, true},
		{BadInputResult{Status: 0, Message: "stream error"}, BadInputResult{Status: 0, Message: "stream error"}, true},
		{BadInputResult{Status: 500, Message: "x"}, BadInputResult{Status: 400, Message: "y"}, false},
		{BadInputResult{Status: 500, Message: "x"}, BadInputResult{Status: 503, Message: "y"}, false},
		{BadInputResult{Status: 400, Message: "x"}, BadInputResult{Status: 400, Message: "y"}, false},
		{BadInputResult{Status: 201, Message: "x"}, BadInputResult{Status: 201, Message: "y"}, false},
	} {
		if got := tc.ours.SameFailureAs(tc.stock); got != tc.want {
			t.Errorf("%d.SameFailureAs(%d) = %v, want %v", tc.ours.Status, tc.stock.Status, got, tc.want)
		}
	}
}

// RunBadInputs sends bodies and content types as they are, and reads a Status or any body.
func TestRunBadInputs(t *testing.T) {
	var got []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" "+body.String())
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(strings.Repeat("plain text ", 100)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","message":"no good","code":400}`))
	}))
	defer server.Close()
	cases := []BadInput{
		{Name: "a", Method: http.MethodPost, Path: "/api/v1/x?fieldValidation=Strict", ContentType: contentJSON, Body: []byte(`{"a":`)},
		{Name: "b", Method: http.MethodPut, Path: "/api/v1/y"},
	}
	results, err := RunBadInputs(context.Background(), &rest.Config{Host: server.URL}, cases)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`POST /api/v1/x?fieldValidation=Strict application/json {"a":`, "PUT /api/v1/y  "}
	if !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if r := results[0]; r.Status != 400 || r.Reason != "BadRequest" || r.Message != "no good" || !r.Clear() {
		t.Errorf("first result %+v", r)
	}
	if r := results[1]; r.Status != 405 || r.Reason != "" || len(r.Message) > maxMessage+len(" …") || !strings.HasPrefix(r.Message, "plain text plain text") {
		t.Errorf("second result %+v", r)
	}
}
