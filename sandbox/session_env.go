package sandbox

// SessionEnvironment returns the environment owner's session id was opened
// in ("" when it named none: the built-in python one), so a snapshot of the
// session records where it must be restored.
func (e *Engine) SessionEnvironment(owner, id string) (string, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return "", err
	}
	return ss.check.Environment, nil
}
