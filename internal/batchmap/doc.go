// Package batchmap expands a map batch into its items: one copy of a tool
// call template per folder a glob matches under an operator's input folder
// (links resolved, never leaving the folder), or per uploaded archive
// (checked entry by entry, never unpacked on the host). The API decodes
// the request and checks the template; what it maps over is decided here.
package batchmap
