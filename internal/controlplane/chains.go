package controlplane

import (
	"fmt"
	"regexp"
	"strings"
)

// loadedChain matches the line kube-apiserver logs (at the default verbosity) when it has
// built an admission chain.
var loadedChain = regexp.MustCompile(`Loaded \d+ (mutating|validating) admission controller\(s\) successfully in the following order: ([^ ]*)\.`)

// Chains are the admission plugins a server loaded, in the order they run.
type Chains struct {
	Mutating   []string
	Validating []string
}

// ParseChains reads the admission chains from a kube-apiserver log. If the log holds them
// more than once (a restart appended to it), the last copy wins.
func ParseChains(log []byte) (Chains, error) {
	var chains Chains
	found := false
	for _, m := range loadedChain.FindAllSubmatch(log, -1) {
		found = true
		names := splitNames(string(m[2]))
		if string(m[1]) == "mutating" {
			chains.Mutating = names
		} else {
			chains.Validating = names
		}
	}
	if !found {
		return Chains{}, fmt.Errorf("the log holds no admission chain")
	}
	return chains, nil
}

func splitNames(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
