// Package secrets is the one list of what looks like a secret: the words
// that mark an environment variable name as secret-looking and the value
// patterns of known key and token formats. The sandbox's environment check,
// the dispatcher's result redaction and the agent's event redaction all use
// it, so they cannot drift apart. It also reads the operator's secrets
// files (ReadFile: one literal value per line) into Values, which never
// print their contents.
//
// It is a leaf package: it imports only the standard library.
package secrets
