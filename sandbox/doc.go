// Package sandbox runs one piece of untrusted code in one throwaway Docker
// container: it creates the container with hard limits (memory, CPU, pids,
// ulimits, no network, read-only root, dropped capabilities, non-root user),
// runs the code, collects bounded output and artifacts, and destroys the
// container whatever happened. It also keeps a warm pool of started
// containers and stateful sessions bound to one container each.
//
// It knows nothing of tools, HTTP or Redis; it talks to Docker only through
// the narrow DockerAPI interface so that its logic can be tested with a fake.
package sandbox
