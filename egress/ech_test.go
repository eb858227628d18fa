package egress

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"net/netip"
	"testing"
)

// echConfigList builds an ECHConfigList (draft-ietf-tls-esni) for an
// X25519 key, HKDF-SHA256 and AES-128-GCM, with publicName as the name a
// client puts in its outer ClientHello.
func echConfigList(t *testing.T, publicName string) []byte {
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	be := binary.BigEndian
	var c []byte
	c = append(c, 1)                           // config_id
	c = be.AppendUint16(c, 0x0020)             // kem: DHKEM(X25519, HKDF-SHA256)
	c = be.AppendUint16(c, 32)                 // public key
	c = append(c, key.PublicKey().Bytes()...)  //
	c = be.AppendUint16(c, 4)                  // cipher suites
	c = be.AppendUint16(c, 0x0001)             // HKDF-SHA256
	c = be.AppendUint16(c, 0x0001)             // AES-128-GCM
	c = append(c, 0)                           // maximum_name_length
	c = append(c, byte(len(publicName)))       // public_name
	c = append(c, publicName...)               //
	c = be.AppendUint16(c, 0)                  // extensions
	cfg := be.AppendUint16(nil, 0xfe0d)        // version
	cfg = be.AppendUint16(cfg, uint16(len(c))) //
	cfg = append(cfg, c...)                    //
	return append(be.AppendUint16(nil, uint16(len(cfg))), cfg...)
}

// TestProxyRefusesEncryptedClientHello: with ECH the outer server name
// can be the allowed one while the encrypted inner one names any host on
// the same server, so a tunnel whose hello carries ECH is refused.
func TestProxyRefusesEncryptedClientHello(t *testing.T) {
	r := newRig(t, nil)
	h, err := r.tp.Register(netip.MustParseAddr("127.0.0.1"), CallInfo{Owner: "o", CallID: "c", Policy: mustParse(t, r.policy())})
	if err != nil {
		t.Fatal(err)
	}
	c, resp := rawConnect(t, r.tp.addr, hostPort("allowed.test", r.tls.port()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{
		ServerName:                     "other.test",
		RootCAs:                        r.pool,
		MinVersion:                     tls.VersionTLS13,
		EncryptedClientHelloConfigList: echConfigList(t, "allowed.test"),
	})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a handshake with an encrypted ClientHello went through")
	}
	r.tp.evs.wait(t, 1)
	a := only(t, h.Close())
	if a.Allowed || a.Reason != ReasonECH || r.tls.conns() != 0 {
		t.Errorf("attempt %+v, server connections %d; want refused ech and none", a, r.tls.conns())
	}
	if ev := r.tp.evs.all(); ev[0].SNI != "allowed.test" {
		t.Errorf("outer server name %q, want allowed.test", ev[0].SNI)
	}
}

// mustParse parses a canonical policy.
func mustParse(t *testing.T, s string) Policy {
	p, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
