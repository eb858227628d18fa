package core

// IntrospectVariables asks an OpSessionIntrospect for the session's globals
// (name, type, shape, size and a short summary of each), for a variable
// panel; the reply is {"status", "variables": [...], "more"}.
const IntrospectVariables = "variables"
