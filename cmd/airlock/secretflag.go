package main

// secretFlag is a string flag whose value is never shown: its String is
// always empty, so help output prints no default (an API key taken from
// the environment would otherwise appear as the flag's default).
type secretFlag struct {
	p *string
}

// String hides the value.
func (s *secretFlag) String() string { return "" }

// Set stores v.
func (s *secretFlag) Set(v string) error {
	*s.p = v
	return nil
}
