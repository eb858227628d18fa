// Package sandbox runs untrusted code in hardened Docker containers: it
// creates each container with hard limits (memory, CPU, pids, ulimits, no
// network, read-only root, dropped capabilities, non-root user), talks to
// the image's in-container controller (images/python/PROTOCOL.md) over the
// attached stdin/stdout in JSON frames, and turns the controller's answer
// into a core.Result: head and tail of each output stream, structured
// errors, displays, re-validated artifacts. Live output goes to the
// core.Sink carried by the call's context.
//
// One-shot calls run in per-owner warm containers: generic ones are kept
// per image (demand-driven, within PoolMax and WarmMemoryBudget); an
// owner's call takes one of its own idle containers, else a generic one,
// which is the owner's from then on and never serves anyone else. The
// controller forks a fresh interpreter per call and cleans processes and
// files after it (docs/isolation.md). Sessions hold one container each.
// Containers die with the process that attached them (StdinOnce) and
// remove themselves (AutoRemove); the reaper is the second line. Images
// without the controller run code as the container's command instead.
//
// It knows nothing of tools, HTTP or Redis; it talks to Docker only through
// the narrow DockerAPI interface so that its logic can be tested with a fake.
package sandbox
