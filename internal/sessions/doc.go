// Package sessions is the API's session service: a session is the
// sandbox's (reached through a Backend: the queue-backed jobs client in
// production) and its record (package sessionrecords), and this package
// keeps the two together. Opening checks the owner's budgets first and
// undoes the sandbox's session when no replica could find its record; a
// session the sandbox says is gone loses its record at once, so every
// route answers 404 from then on; a session's view joins its record and
// the sandbox's live state (a sandbox that does not answer in time leaves
// the live fields out). Files move in bounded chunks, and a folder listing
// walks breadth first within bounds, one sandbox listing at a time.
package sessions
