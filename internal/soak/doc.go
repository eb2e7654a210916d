// Package soak is `make soak`: it checks that Portcullis's kube-apiserver keeps every write
// it acknowledged, and recovers, when what surrounds it fails. It runs the built binaries
// (ours, and stock kube-apiserver beside it) as processes on loopback, loads them with
// client-go pod creates through a chain with every plugin of ours and four HTTPS webhooks,
// injects one fault per run (a webhook server killed, etcd killed, etcd slowed down, one of
// an HA pair killed), then reads etcd itself to find any acknowledged pod that was lost and
// any refused pod that was stored. It renders docs/reliability.md. `make soak` runs it at
// full size; `make test` runs it at a small size (test/integration/bench).
package soak
