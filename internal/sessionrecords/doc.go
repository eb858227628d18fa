// Package sessionrecords keeps the API's records of open sessions in the
// shared state store: who owns each, its limits, when it was last used
// and when it expires (on the sandbox's own idle and maximum-life rules),
// and what an owner's open sessions hold together, for its budgets. The
// sandbox holds the sessions themselves; a record is how any replica
// checks ownership and answers 404 from the moment the sandbox would.
package sessionrecords
