// Package egress is Airlock's network leash (issue 29): the egress policy
// of a key or environment, the proxy through which a sandbox with a policy
// reaches the network, and the host-side fetch behind the fetch_url tool.
// Nothing here knows about Docker, keys files or the dispatcher: callers
// hand in a Policy and get back what was attempted.
//
// # Policy
//
// A Policy lists destinations: host names (exact, or "*.suffix" for every
// name under suffix, not suffix itself), or IP addresses (raw IP
// destinations are refused unless listed), each with its ports (80 and
// 443 unless the entry names one: "*.data.example:8443"), and optionally
// the HTTP methods allowed ("GET,HEAD"). ParseHosts and ParseMethods read
// the keys-file fields egress= and egress_methods=; a bad entry is an
// *EntryError naming it. Narrow intersects a key's policy with an
// environment's egress list, which can only narrow it. String is a
// canonical form (Parse reads it back) and Hash its digest, the key that
// pools containers per policy. The zero Policy allows nothing.
//
// # Addresses
//
// The proxy and the fetcher resolve every name themselves (Resolver;
// StaticResolver for tests and the operator's fixed names) and check every
// address they would connect to with the Guard, then connect to that
// address, never to the name again: a name that resolves to a forbidden
// address is refused whatever the policy says, and DNS rebinding gains
// nothing. Always refused: loopback, the host's own addresses,
// unspecified, link-local, multicast, broadcast, reserved and
// documentation ranges, cloud metadata endpoints (169.254.169.254,
// fd00:ec2::254, 100.100.100.200, 168.63.129.16, ...), in IPv4-mapped,
// NAT64 and 6to4 spellings too. Private ranges (RFC 1918, 100.64/10,
// fc00::/7) are refused unless the operator allows a range (NewGuard),
// which is how an internal mirror such as pypi.internal becomes reachable;
// loopback and metadata can never be allowed (AllowLoopbackForTest exists
// for tests whose servers listen on 127.0.0.1).
//
// # Proxy
//
// One Proxy runs per worker host, inside the worker. Sandboxes never join
// a Docker network: a container with a policy keeps NetworkMode "none"
// like every other (loopback only: no route, no DNS, no UDP, no raw IP by
// construction) and reaches the proxy through a door (OpenDoor): a unix
// socket the worker creates in a private directory (0700) of its own and
// bind-mounts into that one container (sandbox.DoorPath,
// /run/airlock/egress.sock). Inside, the controller relays
// 127.0.0.1:3128 to the door, and the container's environment points
// HTTP_PROXY/HTTPS_PROXY (both cases) and PIP_PROXY there. The proxy knows
// the caller by the door a connection came through (Door.Register for the
// duration of a call; the Handle's Close returns the call's Record), never
// by an address; a door that runs no call is refused.
//
// This deviates on purpose from issue 29's "internal Docker network"
// wording: on an internal network every host service listening on the
// gateway address, and Docker's embedded DNS resolver, are reachable from
// user code; with no network at all nothing is, and a door cannot be
// reached from another container. Register (by source address, on a
// listener passed to Serve) remains for tests and a deployment that
// cannot mount sockets.
//
// Each call has caps on connections, bytes and time (Caps); a connection
// is cut when its call ends.
//
// CONNECT: the target's host and port must be in the policy and resolve
// to an allowed address; the proxy answers 200, reads the TLS ClientHello
// (with crypto/tls, without terminating TLS) and requires its server name
// to be the CONNECT host itself: another name, even an allowed one, is
// domain fronting and refused; a tunnel to a host name without a server
// name is refused (the server's default site may be any other host); a
// tunnel to a listed IP address must carry none; an encrypted ClientHello
// (ECH) is refused because it hides the real name; a tunnel that does not
// start with a ClientHello is refused, so tunnels carry TLS only. Only
// then does the proxy connect upstream and relay.
//
// Plain HTTP: the URL must be http:// with an allowed host and port, the
// Host header (if any) must name the same host and port, and the method
// must be allowed. The request goes upstream on a new connection, in
// origin form, with Host set to the name that was checked and hop-by-hop
// headers (Upgrade included) removed.
//
// Methods cannot be seen inside a TLS tunnel. So a policy with
// egress_methods refuses CONNECT unless the list itself names CONNECT:
// the operator then accepts that the methods bind plain HTTP (and
// fetch_url) only. Without egress_methods every method and tunnel is
// allowed.
//
// Package names: the operator (Config.Index) and a policy
// (Policy.WithPackages, a key's pip_packages=) can name the Python
// packages calls may download; plain-HTTP requests for another package's
// PEP 503 page or files are refused as "package:NAME" before anything goes
// upstream, and a tunnel to the index host is refused while names are
// checked (packages.go). Inside TLS the proxy sees no path, so the names
// bind a plain-http index only.
//
// Every attempt, allowed or refused, is recorded as an Attempt {host,
// port, allowed, reason, bytes} in the call's Record (the shape of a
// result's network field), passed to the audit hook as an Event, and
// counted in Prometheus series on the registerer given (no globals).
// There is no UDP: the proxy is TCP only and the sandbox has no network
// to send a datagram on.
//
// # Fetch
//
// Fetcher runs fetch_url in Airlock itself, not in a sandbox, through the
// same policy and Guard: each redirect is a new hop checked from scratch,
// the body is capped (max_bytes, never above the server's), the time is
// capped, the media type must be text-like, the text is decoded to UTF-8
// and HTML is reduced to readable text with golang.org/x/net/html.
// FetchResult.Render is the tool message the dispatcher truncates.
package egress
