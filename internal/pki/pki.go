// Package pki issues the certificates of a Memcached whose clients authenticate with client
// certificates (spec.auth.mode ClientCertificate): the Memcached's own CA, the client
// certificate applications present, and the server certificate memcached serves when the claim
// names none. It needs no cert-manager: the function and the provider call it, and keep what
// it issues in the Memcached's auth Secret like a password.
//
// Certificates expire, so each is renewed once less than a third of its validity is left
// (Renew), keeping its key: a renewal changes no key and refuses no client. A renewed CA keeps
// its predecessor in the bundle memcached trusts until the predecessor expires, so that a client
// still holding a certificate the old CA signed is admitted until that certificate expires; and
// the server certificate the new CA signs is served with the new CA cross-signed by its
// predecessor, so that a client still verifying with the old bundle accepts it. Only a new
// rotation (New) changes keys and drops every earlier CA.
//
// Everything is a pure function of its inputs and the time: keys and serial numbers come from
// crypto/rand (which testing/cryptotest can fix for tests).
package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Validity periods. Client certificates live 90 days, as public CAs issue them, and are renewed
// after 60, leaving 30 days for every client to read its connection Secret again; memcached
// never loads them, so their renewal restarts nothing. memcached loads its server certificate
// at start only, so a renewed one rolls the replicas, emptying each one's cache: it lives a
// year and is renewed after eight months. The CA lives five years and is renewed after three
// years and four months; its predecessor stays trusted until it expires.
const (
	CAValidity     = 5 * 365 * 24 * time.Hour
	LeafValidity   = 90 * 24 * time.Hour
	ServerValidity = 365 * 24 * time.Hour
	// Backdate starts a certificate's validity a little before it is issued, so that a node
	// whose clock is slightly behind accepts it at once.
	Backdate = 5 * time.Minute
	// MaxCAs bounds the CA bundle: the current CA and the predecessors not yet expired.
	MaxCAs = 3
)

// Certificates are a Memcached's issued certificates and keys, PEM-encoded.
type Certificates struct {
	// CA is the bundle memcached admits clients of: the current CA first, then earlier ones
	// not yet expired. Clients verify the issued server certificate with it too.
	CA string
	// CAKey is the current CA's private key, which signs the leaves.
	CAKey string
	// Client and ClientKey are what applications (and the exporter) present.
	Client, ClientKey string
	// Server and ServerKey are what memcached serves when the claim names no TLS Secret:
	// Server is its certificate's chain, the current CA cross-signed by a predecessor after it
	// for a while after a CA's renewal.
	Server, ServerKey string
}

// New issues a new CA and new client and server certificates, with new keys, at now, for a
// Memcached whose clients reach it at hosts (the first is the connection Secret's host).
// subject names the Memcached in the certificates' subjects ("namespace/name").
func New(subject string, hosts []string, now time.Time) (Certificates, error) {
	return renew(Certificates{}, subject, hosts, now)
}

// Renew returns c with every certificate due for renewal at now renewed (see the package
// doc), and whether anything changed. Keys stay but a renewed CA's. c must be Valid.
func Renew(c Certificates, subject string, hosts []string, now time.Time) (Certificates, bool, error) {
	out, err := renew(c, subject, hosts, now)
	return out, out != c, err
}

// renew issues what c lacks or what is due at now: all of it for an empty c.
func renew(c Certificates, subject string, hosts []string, now time.Time) (Certificates, error) {
	bundle, _ := parseCertificates([]byte(c.CA))
	caKey, _ := parseKey(c.CAKey)
	var ca, cross *x509.Certificate
	if len(bundle) > 0 {
		ca = bundle[0]
	}
	if ca == nil || caKey == nil || due(ca, now) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return Certificates{}, errors.Wrap(err, "cannot generate the CA's key")
		}
		// Each CA's name is its own (its time of issue), so that a chain through a
		// predecessor of the same Memcached is never ambiguous.
		tmpl := caTemplate(subject+" client CA "+now.UTC().Format("2006-01-02T15:04"), now, now.Add(CAValidity))
		// One CA may follow it in a chain: its successor, cross-signed by it.
		tmpl.MaxPathLen, tmpl.MaxPathLenZero = 1, false
		newCA, err := sign(tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			return Certificates{}, err
		}
		if ca != nil && caKey != nil && now.Before(ca.NotAfter) {
			// The predecessor vouches for its successor until it expires: the new CA,
			// signed by the old one, follows the server certificate in its chain.
			xt := caTemplate(newCA.Subject.CommonName, now, ca.NotAfter)
			xt.SubjectKeyId = newCA.SubjectKeyId
			x, err := sign(xt, ca, &k.PublicKey, caKey)
			if err != nil {
				return Certificates{}, err
			}
			c.Server, cross = "", x // Reissued below by the new CA, with x after it.
		}
		kept := []*x509.Certificate{newCA}
		for _, old := range bundle {
			if now.Before(old.NotAfter) && len(kept) < MaxCAs {
				kept = append(kept, old)
			}
		}
		ca, caKey = newCA, k
		c.CA, c.CAKey = string(encodeCertificates(kept...)), encodeKey(k)
	}
	var err error
	if c.Client, c.ClientKey, err = leaf(c.Client, c.ClientKey, ca, caKey, subject+" client", nil, now, LeafValidity); err != nil {
		return Certificates{}, err
	}
	if c.Server, c.ServerKey, err = serverChain(c, cross, ca, caKey, hosts, now); err != nil {
		return Certificates{}, err
	}
	return c, nil
}

// serverChain is c's server certificate and key, renewed as leaf renews it, followed by the
// certificates that let a client verifying with an earlier bundle accept it: the current CA
// cross-signed by a predecessor (newly, cross; or as the chain held it before), while that one
// is valid.
func serverChain(c Certificates, cross, ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string, now time.Time) (string, string, error) {
	held, _ := parseCertificates([]byte(c.Server))
	var intermediates []*x509.Certificate
	if cross != nil {
		intermediates = append(intermediates, cross)
	}
	for i, x := range held {
		if i > 0 && now.Before(x.NotAfter) && x.IsCA && bytes.Equal(x.RawSubjectPublicKeyInfo, ca.RawSubjectPublicKeyInfo) {
			intermediates = append(intermediates, x)
		}
	}
	leafPEM := ""
	if len(held) > 0 {
		leafPEM = string(encodeCertificates(held[0]))
	}
	crt, key, err := leaf(leafPEM, c.ServerKey, ca, caKey, hosts[0], hosts, now, ServerValidity)
	if err != nil {
		return "", "", err
	}
	return crt + string(encodeCertificates(intermediates...)), key, nil
}

// caTemplate is a CA certificate for cn valid from now (backdated) until notAfter, which signs
// leaves only (path length 0).
func caTemplate(cn string, now, notAfter time.Time) *x509.Certificate {
	tmpl := template(cn, now, notAfter)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	return tmpl
}

// leaf returns the leaf certificate crt (with key) as it is while ca signed it and it is not
// due, else a certificate valid for validity for the same key (a new one when key is empty)
// signed by ca: for clients when hosts is empty, else for a server reached as hosts.
func leaf(crt, key string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, hosts []string, now time.Time, validity time.Duration) (string, string, error) {
	k, _ := parseKey(key)
	if k != nil {
		if certs, err := parseCertificates([]byte(crt)); err == nil && len(certs) == 1 &&
			!due(certs[0], now) && certs[0].CheckSignatureFrom(ca) == nil && samePublicKey(certs[0], k) {
			return crt, key, nil
		}
	} else {
		var err error
		if k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return "", "", errors.Wrap(err, "cannot generate a certificate's key")
		}
		key = encodeKey(k)
	}
	notAfter := now.Add(validity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := template(cn, now, notAfter)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = hosts
	}
	c, err := sign(tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	return string(encodeCertificates(c)), key, nil
}

// MaxPEM bounds each PEM value of Certificates that Valid parses: what pki issues takes a
// few KiB at most (MaxCAs CAs in the bundle, a server chain of three). A larger one was
// written by hand, perhaps to make the shared function and provider parse a megabyte on
// every call, and is replaced whole without being parsed.
const MaxPEM = 16 << 10

// Valid reports whether c holds what Renew can keep: a CA bundle whose first certificate is a
// CA with CAKey as its key, and client and server certificates with their keys, each
// certificate valid for a while (not after it expires) and no value larger than MaxPEM.
// Whatever is not (an auth Secret edited by hand) is replaced whole, as an unusable password
// is.
func Valid(c Certificates) bool {
	for _, v := range []string{c.CA, c.CAKey, c.Client, c.ClientKey, c.Server, c.ServerKey} {
		if len(v) > MaxPEM {
			return false
		}
	}
	bundle, err := parseCertificates([]byte(c.CA))
	if err != nil || len(bundle) == 0 || len(bundle) > MaxCAs || !bundle[0].IsCA || !bundle[0].NotBefore.Before(bundle[0].NotAfter) {
		return false
	}
	caKey, err := parseKey(c.CAKey)
	if err != nil || !samePublicKey(bundle[0], caKey) {
		return false
	}
	for i, p := range [][2]string{{c.Client, c.ClientKey}, {c.Server, c.ServerKey}} {
		certs, err := parseCertificates([]byte(p[0]))
		k, kerr := parseKey(p[1])
		if err != nil || kerr != nil || len(certs) == 0 || len(certs) > 1+i*(MaxCAs-1) || !samePublicKey(certs[0], k) ||
			!certs[0].NotBefore.Before(certs[0].NotAfter) {
			return false
		}
	}
	return true
}

// RenewAt is when the first of c's certificates is due for renewal: the function asks to be
// called again by then. Zero when c holds none.
func RenewAt(c Certificates) time.Time {
	var at time.Time
	for _, pem := range []string{c.CA, c.Client, c.Server} {
		certs, _ := parseCertificates([]byte(pem))
		if len(certs) == 0 {
			continue
		}
		if t := renewAt(certs[0]); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// renewAt is when c is due: once less than a third of its validity is left.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 3)
}

// due reports whether c is due for renewal at now.
func due(c *x509.Certificate, now time.Time) bool {
	return !now.Before(renewAt(c))
}

// template is a certificate for cn valid from now (backdated) until notAfter, with a random
// 128-bit serial number.
func template(cn string, now, notAfter time.Time) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-Backdate).UTC().Truncate(time.Second),
		NotAfter:     notAfter.UTC().Truncate(time.Second),
	}
}

// sign signs tmpl for pub with parent's key.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot sign the certificate of %q", tmpl.Subject.CommonName)
	}
	c, err := x509.ParseCertificate(der)
	return c, errors.Wrapf(err, "cannot parse the certificate of %q", tmpl.Subject.CommonName)
}

// samePublicKey reports whether c certifies k's public key.
func samePublicKey(c *x509.Certificate, k *ecdsa.PrivateKey) bool {
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	return ok && k != nil && pub.Equal(&k.PublicKey)
}

// parseCertificates parses every CERTIFICATE block of b.
func parseCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, errors.Errorf("unexpected PEM block %q", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, errors.Wrap(err, "cannot parse a certificate")
		}
		out = append(out, c)
	}
	if len(bytes.TrimSpace(b)) > 0 {
		return nil, errors.New("trailing data after the certificates")
	}
	return out, nil
}

// parseKey parses an EC PRIVATE KEY block; nil for an empty s.
func parseKey(s string) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// encodeCertificates is certs in PEM.
func encodeCertificates(certs ...*x509.Certificate) []byte {
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return b
}

// encodeKey is k in PEM (SEC 1), which OpenSSL, and so memcached, pymemcache and PHP, read.
func encodeKey(k *ecdsa.PrivateKey) string {
	der, _ := x509.MarshalECPrivateKey(k) // Fails only for curves crypto/ecdsa cannot generate.
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// Hosts are the names a Memcached's server certificate covers for the Service host (its
// fully qualified name, first) of name in namespace: the shorter forms resolve in the
// namespace and the cluster too.
func Hosts(host, name, namespace string) []string {
	return slices.Compact([]string{host, name + "." + namespace + ".svc", name + "." + namespace, name})
}
