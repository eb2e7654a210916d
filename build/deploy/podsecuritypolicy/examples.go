// Package podsecuritypolicy holds the example PodSecurityPolicies and grants shipped with
// the distribution: the operator's starting point, what `make run` applies, and what the
// tests apply.
package podsecuritypolicy

import (
	"bytes"
	"embed"
)

//go:embed privileged.yaml baseline.yaml restricted.yaml grants.yaml
var files embed.FS

// Files are the example files, in the order to apply them: the policies, then the grants.
var Files = []string{"privileged.yaml", "baseline.yaml", "restricted.yaml", "grants.yaml"}

// Documents returns every YAML document of the example files, in order.
func Documents() ([][]byte, error) {
	var docs [][]byte
	for _, name := range Files {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) > 0 {
				docs = append(docs, doc)
			}
		}
	}
	return docs, nil
}

// Policy returns the example policy of that name ("privileged", "baseline", "restricted").
func Policy(name string) ([]byte, error) {
	return files.ReadFile(name + ".yaml")
}
