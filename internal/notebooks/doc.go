// Package notebooks keeps the notebook of each session in the shared state
// store: the client's cells, stored as sent (compact JSON), under a version that
// every save must name (compare and swap), so two tabs never overwrite
// each other's work silently. A notebook outlives its session (30 days
// after its last save), so a closed session's work can still be read.
package notebooks
