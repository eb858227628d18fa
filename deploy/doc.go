// Package deploy holds deployment material: docker-compose.yml at the
// repository root (two API replicas behind HAProxy, two workers, Redis),
// deploy/compose.registry.yml (the registry route), deploy/haproxy.cfg,
// deploy/Dockerfile, Kubernetes manifests and systemd units, and the tests
// that check it stays valid. README.md tells how to run the stack offline
// (images built from the Debian mirror) or from a registry.
package deploy
