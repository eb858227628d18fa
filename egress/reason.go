package egress

// The reasons an Attempt records. A refused attempt names why it was
// refused; an allowed one that was cut short names why it ended (a cap, the
// call's end); an allowed one that ended normally has none.
const (
	ReasonNotAllowed   = "not_allowed"   // host or port not in the call's policy
	ReasonMethod       = "method"        // HTTP method not in egress_methods
	ReasonTunnel       = "tunnel"        // a CONNECT tunnel while egress_methods does not name CONNECT
	ReasonScheme       = "scheme"        // a plain request for another scheme than http
	ReasonHostMismatch = "host_mismatch" // the Host header names another host than the URL
	ReasonBadRequest   = "bad_request"   // a malformed request or target
	ReasonNotTLS       = "not_tls"       // a CONNECT tunnel that does not start with a TLS ClientHello
	ReasonSNIMismatch  = "sni_mismatch"  // the TLS server name differs from the CONNECT host (domain fronting)
	ReasonSNIMissing   = "sni_missing"   // no TLS server name in a tunnel to a host name
	ReasonECH          = "ech"           // an encrypted ClientHello, whose real server name is hidden
	ReasonResolve      = "resolve"       // the name did not resolve
	ReasonLoopback     = "loopback"      // a loopback address
	ReasonLocal        = "local"         // an address of the proxy's own host
	ReasonPrivate      = "private"       // a private address the operator did not allow
	ReasonLinkLocal    = "link_local"    // a link-local address
	ReasonMulticast    = "multicast"     // a multicast or broadcast address
	ReasonUnspecified  = "unspecified"   // 0.0.0.0/8 or ::
	ReasonMetadata     = "metadata"      // a cloud metadata endpoint
	ReasonReserved     = "reserved"      // a special-purpose range (documentation, benchmarking, ...)
	ReasonDial         = "dial"          // the connection to an allowed address failed
	ReasonUnregistered = "unregistered"  // the source address runs no call
	ReasonBusy         = "busy"          // the proxy is at its connection limit
	ReasonConnCap      = "connection_cap"
	ReasonByteCap      = "byte_cap"
	ReasonTimeCap      = "time_cap"
	ReasonCallEnded    = "call_ended"   // the call ended while the connection was open
	ReasonClosed       = "proxy_closed" // the proxy shut down while the connection was open
	ReasonIdle         = "idle_timeout" // no bytes either way for the idle timeout
	ReasonRedirects    = "redirects"    // fetch: too many redirects
	ReasonContentType  = "content_type" // fetch: a content type that is not text
	ReasonTimeout      = "timeout"      // fetch: the time cap passed
)
