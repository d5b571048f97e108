// Package pki makes the certificates the end-to-end control plane needs, in memory, so that
// the suite depends on no openssl and leaves no long-lived keys behind: a CA per trust
// domain (the API server's, the function's), serving certificates for 127.0.0.1, client
// certificates, and the service-account signing key.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// validity covers any suite run with a wide margin; certificates are made anew every run.
const validity = 24 * time.Hour

// A CA issues certificates.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA's certificate, for trust bundles (ca.crt, --client-ca-file).
	CertPEM []byte
}

// NewCA returns a self-signed CA named commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate a CA key")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot sign the CA certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the CA certificate")
	}
	return &CA{cert: cert, key: key, CertPEM: pemBlock("CERTIFICATE", der)}, nil
}

// KeyPEM returns the CA's private key, for a signer such as kube-controller-manager's
// certificate controller.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	return pemBlock("PRIVATE KEY", der), errors.Wrap(err, "cannot encode the CA key")
}

// A Request describes a certificate to issue.
type Request struct {
	CommonName   string
	Organization []string
	// IPs and DNSNames make a serving certificate; without them the certificate is a client
	// certificate only.
	IPs      []net.IP
	DNSNames []string
}

// A KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// Issue signs a certificate for r, usable for client authentication and, when r names IPs
// or DNS names, for serving.
func (ca *CA) Issue(r Request) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, errors.Wrapf(err, "cannot generate a key for %s", r.CommonName)
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(r.IPs)+len(r.DNSNames) > 0 {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organization},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  r.IPs,
		DNSNames:     r.DNSNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return KeyPair{}, errors.Wrapf(err, "cannot sign a certificate for %s", r.CommonName)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, errors.Wrapf(err, "cannot encode the key of %s", r.CommonName)
	}
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

// ServiceAccountKey returns an RSA key pair for signing service-account tokens, as PEM
// private and public keys: the forms kube-apiserver and kube-controller-manager read.
func ServiceAccountKey() (private, public []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot generate the service-account key")
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot encode the service-account public key")
	}
	return pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), pemBlock("PUBLIC KEY", pub), nil
}

// WriteFiles writes each name → content pair into dir (created if need be), readable by the
// owner only: some of them are private keys.
func WriteFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errors.Wrapf(err, "cannot create %s", dir)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return errors.Wrapf(err, "cannot write %s", name)
		}
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
