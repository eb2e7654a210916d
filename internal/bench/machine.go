package bench

import (
	"bufio"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	CPUModel string
	// CPUs is the number of logical CPUs.
	CPUs int
	// MemoryBytes is the total memory.
	MemoryBytes uint64
	Kernel      string
	GoVersion   string
}

// readMachine reads the machine's description from /proc. A field it cannot read says so
// rather than failing the run: the figures are still worth having.
func readMachine() Machine {
	m := Machine{CPUModel: "unknown", CPUs: runtime.NumCPU(), Kernel: "unknown", GoVersion: runtime.Version()}
	if v, err := procField("/proc/cpuinfo", "model name"); err == nil {
		m.CPUModel = v
	}
	if v, err := procField("/proc/meminfo", "MemTotal"); err == nil {
		if kib, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64); err == nil {
			m.MemoryBytes = kib * 1024
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		k, v, ok := strings.Cut(scanner.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s has no %q", path, key)
}

// LoadAverage is the 1-, 5- and 15-minute load averages at one moment.
type LoadAverage struct {
	At                 time.Time
	One, Five, Fifteen float64
	Unknown            bool
}

// readLoadAverage reads /proc/loadavg; the notes use it to warn of a machine that was busy
// with something else.
func readLoadAverage() LoadAverage {
	la := LoadAverage{At: time.Now(), Unknown: true}
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return la
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return la
	}
	values := make([]float64, 3)
	for i := range values {
		if values[i], err = strconv.ParseFloat(fields[i], 64); err != nil {
			return la
		}
	}
	return LoadAverage{At: la.At, One: values[0], Five: values[1], Fifteen: values[2]}
}

// Binary describes one of the binaries compared.
type Binary struct {
	Path string
	// Version is what --version prints.
	Version string
	// KubernetesModule is the k8s.io/kubernetes module version it was built from.
	KubernetesModule string
}

// describeBinary runs binary --version and reads its build information.
func describeBinary(path string) (Binary, error) {
	b := Binary{Path: path}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return Binary{}, fmt.Errorf("%s --version: %w", path, err)
	}
	b.Version = strings.TrimSpace(string(out))
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	// Stock is built as k8s.io/kubernetes's own command, so the module is its main module.
	if info.Main.Path == "k8s.io/kubernetes" {
		b.KubernetesModule = info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			b.KubernetesModule = dep.Version
			if dep.Replace != nil {
				b.KubernetesModule += " => " + dep.Replace.Path + " " + dep.Replace.Version
			}
		}
	}
	if b.KubernetesModule == "" {
		b.KubernetesModule = "unknown"
	}
	return b, nil
}

// cpuSample is the machine's CPU time and this process's own, its waited-for descendants'
// included, at one moment, in clock ticks.
type cpuSample struct {
	// busy is user, nice and system time over all CPUs; total adds idle, I/O wait, interrupts
	// and steal.
	busy, total uint64
	// own is this process's user and system time plus its waited-for children's.
	own uint64
	ok  bool
}

// readCPUSample reads /proc/stat and /proc/self/stat. It returns a sample with ok false
// when either cannot be read, and the disturbance figure is then left out.
func readCPUSample() cpuSample {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuSample{}
	}
	var s cpuSample
	for i, f := range fields[1:9] { // user nice system idle iowait irq softirq steal
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuSample{}
		}
		s.total += v
		if i < 3 {
			s.busy += v
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return cpuSample{}
	}
	if s.own, err = statCPUTicks(string(self), true); err != nil {
		return cpuSample{}
	}
	s.ok = true
	return s
}

// clockTicksPerSecond is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicksPerSecond = 100

// processCPU returns the CPU time, user and system, that process pid has used so far.
func processCPU(pid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	ticks, err := statCPUTicks(string(stat), false)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// statCPUTicks sums utime and stime of a /proc/<pid>/stat line, and with children also the
// waited-for children's cutime and cstime.
func statCPUTicks(stat string, children bool) (uint64, error) {
	// The command name, in parentheses, may hold spaces: count fields after its end.
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	rest := strings.Fields(stat[end+1:])
	// rest[0] is field 3 (state); utime, stime, cutime and cstime are fields 14 to 17.
	last := 13
	if children {
		last = 15
	}
	if len(rest) < last {
		return 0, fmt.Errorf("%d fields after the command name, want at least %d", len(rest), last)
	}
	var ticks uint64
	for _, f := range rest[11:last] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", f, err)
		}
		ticks += v
	}
	return ticks, nil
}

// Disturbance is how much of the machine's CPU time, between two samples, went to processes
// the harness did not start (and to the kernel's own threads).
type Disturbance struct {
	// Table names what ran between the samples.
	Table string
	// ForeignShare is that CPU time as a fraction of all the CPUs' time; Known is false when
	// it could not be measured.
	ForeignShare float64
	Known        bool
}

// disturbance compares two samples taken around work whose child processes have all been
// waited for by the second.
func disturbance(table string, before, after cpuSample) Disturbance {
	if !before.ok || !after.ok || after.total <= before.total || after.busy < before.busy || after.own < before.own {
		return Disturbance{Table: table}
	}
	busy := float64(after.busy - before.busy)
	own := float64(after.own - before.own)
	foreign := max(busy-own, 0)
	return Disturbance{Table: table, ForeignShare: foreign / float64(after.total-before.total), Known: true}
}
