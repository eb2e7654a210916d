package soak

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the soak ran.
type Machine struct {
	CPU         string
	CPUs        int
	MemoryBytes uint64
	Kernel      string
	GoVersion   string
}

// readMachine reads /proc; what it cannot read it reports as unknown.
func readMachine() Machine {
	m := Machine{CPU: "unknown", CPUs: runtime.NumCPU(), Kernel: "unknown", GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if v, ok := procValue(string(data), "model name"); ok {
			m.CPU = v
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if v, ok := procValue(string(data), "MemTotal"); ok {
			if kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64); err == nil {
				m.MemoryBytes = kib << 10
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// procValue returns the value of the first "key: value" line of a /proc text.
func procValue(text, key string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// BinaryInfo describes one server binary.
type BinaryInfo struct {
	Path    string
	Version string
	// Module is the k8s.io/kubernetes module version it was built from.
	Module string
}

// describeBinary asks the binary its version and reads which Kubernetes it was built from.
func describeBinary(path string) (BinaryInfo, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("%s --version: %w", path, err)
	}
	info := BinaryInfo{Path: path, Version: strings.TrimSpace(string(out)), Module: "unknown"}
	build, err := buildinfo.ReadFile(path)
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	if build.Main.Path == "k8s.io/kubernetes" { // stock: Kubernetes is its main module
		info.Module = build.Main.Version
	}
	for _, dep := range build.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			info.Module = dep.Version
		}
	}
	return info, nil
}
