package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// BuildCost is what compiling our binary with its PGO profile costs, against compiling it
// without one.
type BuildCost struct {
	// ColdPGO and ColdNoPGO are the wall times of building ./cmd/kube-apiserver with an empty
	// build cache: with the profile (go build's default, -pgo=auto) and with -pgo=off.
	ColdPGO, ColdNoPGO time.Duration
	// SizePGO and SizeNoPGO are the two binaries' sizes in bytes.
	SizePGO, SizeNoPGO int64
}

// measureBuildCost builds our binary twice from cold, each with a build cache of its own
// (the module cache is shared: downloads are not compile time), in the configuration of
// every other build: static and -trimpath.
func measureBuildCost(ctx context.Context, env *environment) (cost *BuildCost, err error) {
	dir, err := os.MkdirTemp(env.workDir, "build-cost-")
	if err != nil {
		return nil, err
	}
	// Two cold caches hold about 3 GiB each: never keep them.
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	build := func(name, pgo string) (time.Duration, int64, error) {
		out := filepath.Join(dir, name, "kube-apiserver")
		cmd := exec.CommandContext(ctx, env.goTool, "build", "-pgo="+pgo, "-o", out, "./cmd/kube-apiserver")
		cmd.Dir = env.repoRoot
		cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(dir, name, "cache"), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
		started := time.Now()
		if output, err := cmd.CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("go build -pgo=%s with an empty cache: %w\n%s", pgo, err, output)
		}
		took := time.Since(started)
		size, err := fileSize(out)
		if err != nil {
			return 0, 0, err
		}
		// Free the cache before the next build: it is the disk the next one writes to.
		return took, size, os.RemoveAll(filepath.Join(dir, name, "cache"))
	}
	cost = &BuildCost{}
	env.progressf("PGO build cost: cold build without the profile")
	if cost.ColdNoPGO, cost.SizeNoPGO, err = build("no-pgo", "off"); err != nil {
		return nil, err
	}
	env.progressf("PGO build cost: cold build with the profile (%s)", cost.ColdNoPGO.Round(time.Second))
	if cost.ColdPGO, cost.SizePGO, err = build("pgo", "auto"); err != nil {
		return nil, err
	}
	env.progressf("PGO build cost: %s with the profile", cost.ColdPGO.Round(time.Second))
	return cost, nil
}
