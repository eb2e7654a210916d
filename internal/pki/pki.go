// Package pki writes the certificates and keys a single-node control plane needs: a CA, a
// serving certificate for loopback, a service-account signing key pair and client
// certificates. It backs `make run` and the integration tests; it is not for production PKI.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// validity of every certificate written here: long enough for a local cluster kept for years.
const validity = 10 * 365 * 24 * time.Hour

// CA is a certificate authority that signs the other certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertFile and KeyFile are where the CA was written.
	CertFile, KeyFile string
}

// Pair names a certificate file and its key file.
type Pair struct {
	CertFile, KeyFile string
}

// LoadOrCreateCA reads the CA from dir/name.{crt,key}, or creates and writes one there.
func LoadOrCreateCA(dir, name string) (*CA, error) {
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if exists(certFile) && exists(keyFile) {
		certs, err := cert.CertsFromFile(certFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA certificate %s: %w", certFile, err)
		}
		key, err := keyutil.PrivateKeyFromFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA key %s: %w", keyFile, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("CA key %s cannot sign", keyFile)
		}
		return &CA{Cert: certs[0], Key: signer, CertFile: certFile, KeyFile: keyFile}, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	caCert, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", name, err)
	}
	if err := writePair(certFile, keyFile, caCert, key); err != nil {
		return nil, err
	}
	return &CA{Cert: caCert, Key: key, CertFile: certFile, KeyFile: keyFile}, nil
}

// ServingCert writes, unless it exists, dir/name.{crt,key}: a server certificate for the
// given IPs and DNS names, signed by the CA.
func (ca *CA) ServingCert(dir, name string, ips []net.IP, dnsNames []string) (Pair, error) {
	return ca.leaf(dir, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		IPAddresses: ips,
		DNSNames:    dnsNames,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// ClientCert writes, unless it exists, dir/name.{crt,key}: a client certificate for user
// with the given groups (Kubernetes reads groups from O=).
func (ca *CA) ClientCert(dir, name, user string, groups ...string) (Pair, error) {
	return ca.leaf(dir, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// PeerCert writes, unless it exists, a certificate good for both serving and client auth,
// as etcd's peer and server certificates are.
func (ca *CA) PeerCert(dir, name string, ips []net.IP, dnsNames []string) (Pair, error) {
	return ca.leaf(dir, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		IPAddresses: ips,
		DNSNames:    dnsNames,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

func (ca *CA) leaf(dir, name string, template *x509.Certificate) (Pair, error) {
	pair := Pair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	if exists(pair.CertFile) && exists(pair.KeyFile) {
		return pair, nil
	}
	key, err := newKey()
	if err != nil {
		return Pair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Pair{}, err
	}
	template.SerialNumber = serial.Add(serial, big.NewInt(1))
	template.NotBefore = ca.Cert.NotBefore
	template.NotAfter = time.Now().Add(validity)
	der, err := x509.CreateCertificate(rand.Reader, template, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Pair{}, fmt.Errorf("signing certificate %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, err
	}
	return pair, writePair(pair.CertFile, pair.KeyFile, leaf, key)
}

// ServiceAccountKeys writes, unless they exist, dir/name.key (private, for the signer) and
// dir/name.pub (public, for verifiers).
func ServiceAccountKeys(dir, name string) (privateFile, publicFile string, err error) {
	privateFile, publicFile = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if exists(privateFile) && exists(publicFile) {
		return privateFile, publicFile, nil
	}
	key, err := newKey()
	if err != nil {
		return "", "", err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", "", err
	}
	pubPEM, err := publicKeyPEM(key.Public())
	if err != nil {
		return "", "", err
	}
	if err := keyutil.WriteKey(privateFile, keyPEM); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", privateFile, err)
	}
	if err := os.WriteFile(publicFile, pubPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", publicFile, err)
	}
	return privateFile, publicFile, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// writePair writes a certificate and its key; keys are 0600 (keyutil.WriteKey).
func writePair(certFile, keyFile string, c *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return fmt.Errorf("writing %s: %w", keyFile, err)
	}
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return err
	}
	if err := cert.WriteCert(certFile, certPEM); err != nil {
		return fmt.Errorf("writing %s: %w", certFile, err)
	}
	return nil
}

func publicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// LoopbackServer writes into dir, unless they exist, a CA of its own (name-ca) and a serving
// certificate for 127.0.0.1 (name) that it signs, and returns the certificate, loaded, and
// the CA in PEM: what an HTTPS server on loopback (a test's webhook) serves with, and what
// its clients (a webhook configuration's caBundle) trust.
func LoopbackServer(dir, name string) (tls.Certificate, []byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := LoadOrCreateCA(dir, name+"-ca")
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pair, err := ca.ServingCert(dir, name, []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("loading %s's serving certificate: %w", name, err)
	}
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return cert, caPEM, nil
}
