package kernels

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/jupyter"
)

// SpecPrefix starts the kernel name of a custom environment's kernelspec:
// airlock-NAME (Jupyter kernel names are [a-zA-Z0-9._-]; the prefix keeps
// them apart from python, python3 and the clients' own kernels).
const SpecPrefix = "airlock-"

// specsTimeout bounds listing the environments for the kernelspecs.
const specsTimeout = 3 * time.Second

// envSpecs is a kernelspec per custom Python environment owner may use,
// in the order EnvironmentNames gives them.
func (b *Backend) envSpecs(owner string) []jupyter.Spec {
	if b.EnvironmentNames == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), specsTimeout)
	defer cancel()
	var out []jupyter.Spec
	for _, name := range b.EnvironmentNames(ctx, owner) {
		if environments.Builtin(name) {
			continue
		}
		out = append(out, jupyter.Spec{Name: SpecPrefix + name, DisplayName: "Python 3 (Airlock: " + name + ")", Language: "python", Environment: name})
	}
	return out
}

// openTarget is the environment a kernel of spec opens its session in:
// the zero Target for the built-in python one.
func (b *Backend) openTarget(ctx context.Context, owner string, spec jupyter.Spec) (environments.Target, error) {
	env := spec.Environment
	if env == "" || env == environments.Python || b.Resolve == nil {
		return environments.Target{}, nil
	}
	return b.Resolve(ctx, owner, env)
}
