// Package deploy holds deployment material (docker-compose.yml at the
// repository root, deploy/Dockerfile, Kubernetes manifests and systemd
// units) and the tests that check it stays valid.
package deploy
