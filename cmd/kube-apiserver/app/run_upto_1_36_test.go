//go:build kube1.35 || kube1.36

package app

// upstreamRunNamesInformers: upstream's Run of 1.35 and 1.36 does not name the informers.
const upstreamRunNamesInformers = false
