package initialresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseImage: references as a runtime reads them, where 1.10's split at ":" cut a
// registry port and kept a digest as a tag.
func TestParseImage(t *testing.T) {
	const digest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		written        string
		wantKey        string
		wantExact      []string
		wantRepository []string
	}{
		{"nginx", "docker.io/library/nginx:latest",
			[]string{"docker.io/library/nginx", "docker.io/library/nginx:latest", "nginx", "nginx:latest"},
			[]string{"docker.io/library/nginx", "nginx"}},
		{"docker.io/library/nginx:latest", "docker.io/library/nginx:latest",
			[]string{"docker.io/library/nginx", "docker.io/library/nginx:latest", "nginx", "nginx:latest"},
			[]string{"docker.io/library/nginx", "nginx"}},
		{"nginx:1.25", "docker.io/library/nginx:1.25",
			[]string{"docker.io/library/nginx:1.25", "nginx:1.25"},
			[]string{"docker.io/library/nginx", "nginx"}},
		{"docker.io/library/nginx:1.25", "docker.io/library/nginx:1.25",
			[]string{"docker.io/library/nginx:1.25", "nginx:1.25"},
			[]string{"docker.io/library/nginx", "nginx"}},
		{"registry.local:5000/team/app:v2", "registry.local:5000/team/app:v2",
			[]string{"registry.local:5000/team/app:v2"},
			[]string{"registry.local:5000/team/app"}},
		{"quay.io/prometheus/node-exporter@" + digest, "quay.io/prometheus/node-exporter@" + digest,
			[]string{"quay.io/prometheus/node-exporter@" + digest},
			[]string{"quay.io/prometheus/node-exporter"}},
		{"nginx:1.25@" + digest, "docker.io/library/nginx:1.25@" + digest,
			[]string{"docker.io/library/nginx:1.25", "docker.io/library/nginx:1.25@" + digest, "docker.io/library/nginx@" + digest,
				"nginx:1.25", "nginx:1.25@" + digest, "nginx@" + digest},
			[]string{"docker.io/library/nginx", "nginx"}},
	}
	for _, tc := range tests {
		t.Run(tc.written, func(t *testing.T) {
			img, ok := parseImage(tc.written)
			if !ok {
				t.Fatal("not parsed")
			}
			if img.key != tc.wantKey {
				t.Errorf("key %q, want %q", img.key, tc.wantKey)
			}
			if diff := cmp.Diff(tc.wantExact, img.exact); diff != "" {
				t.Errorf("exact spellings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRepository, img.repository); diff != "" {
				t.Errorf("repository spellings (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"", "upper/Case:1", "nginx:", "a b"} {
		if img, ok := parseImage(bad); ok {
			t.Errorf("parseImage(%q) = %+v, want not an image", bad, img)
		}
	}
}
