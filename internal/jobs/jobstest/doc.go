// Package jobstest provides a file-keeping fake sandbox engine for tests of
// chunked file transfers through the jobs client: it implements the
// OpFilePut/OpFileGet Offset protocol (or, in legacy mode, the whole-file
// one) over files kept as SHA-256 sums and sizes, so multi-megabyte uploads
// cost the test no memory.
package jobstest
