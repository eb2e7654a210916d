package app

import "context"

// ExitRollbackBlocked is preflight's exit code when the swap is safe but a rollback to stock
// would fail. Every other failure exits 1, as component-base's cli.Run has it.
const ExitRollbackBlocked = 3

type exitCodeKey struct{}

// WithExitCode returns a context under which the command records in code the exit code its
// error asks for when that is not 1 (preflight's blocked rollback). main passes it, and exits
// with code when the command failed and code is set.
func WithExitCode(ctx context.Context, code *int) context.Context {
	return context.WithValue(ctx, exitCodeKey{}, code)
}

func setExitCode(ctx context.Context, code int) {
	if p, ok := ctx.Value(exitCodeKey{}).(*int); ok && p != nil {
		*p = code
	}
}
