package preflight

import "context"

// Preflight's exit codes besides 0 (the swap is safe and a rollback would work). The server
// itself exits 1 on every failure, as component-base's cli.Run has it.
const (
	// ExitUnsafe: the swap is not safe.
	ExitUnsafe = 1
	// ExitUsage: preflight could not run (a bad invocation, or a file it was given that
	// cannot be read).
	ExitUsage = 2
	// ExitRollbackBlocked: the swap is safe, but a rollback to stock would fail.
	ExitRollbackBlocked = 3
)

type exitCodeKey struct{}

// WithExitCode returns a context under which the command records in code the exit code its
// error asks for when that is not 1 (preflight's usage error and blocked rollback). main
// passes it, and exits with code when the command failed and code is set.
func WithExitCode(ctx context.Context, code *int) context.Context {
	return context.WithValue(ctx, exitCodeKey{}, code)
}

func setExitCode(ctx context.Context, code int) {
	if p, ok := ctx.Value(exitCodeKey{}).(*int); ok && p != nil {
		*p = code
	}
}
