// Package keys holds the API keys (hashed, never kept in plain) and what
// each key may use: its Policy from the keys file (limits above the server
// defaults, budgets, background sessions, approval rules, and the key's own
// secrets from secrets_file=PATH, redacted from that key's results only and
// never printed). The owner a key
// names is Airlock's trust domain; every other package receives the owner
// and, where it decides something per key, the Policy.
package keys
