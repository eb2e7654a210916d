//go:build !kube1.35 && !kube1.36

package app

// upstreamRunNamesInformers: upstream's Run names the informers since 1.37.
const upstreamRunNamesInformers = true
