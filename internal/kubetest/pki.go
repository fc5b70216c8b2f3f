package kubetest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pkiPEM is what the client side needs of the test PKI, PEM-encoded.
type pkiPEM struct {
	ca, clientCert, clientKey []byte
}

// writePKI creates a throwaway CA that signs the API server's serving
// certificate and a client certificate in group system:masters, plus the
// service-account token signing key, and writes the server's files to dir:
// ca.crt, serving.crt, serving.key, sa.key, sa.pub.
//
// Client certificates rather than a token file because they need no extra
// flag and kubeconfig carries them inline. Everything is ECDSA P-256, which
// is fast to generate, so each test gets its own PKI.
func writePKI(dir string) (pkiPEM, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return pkiPEM{}, err
	}
	now := time.Now()
	caKey, err := newKey()
	if err != nil {
		return pkiPEM{}, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTmpl, caTmpl, caKey, caKey)
	if err != nil {
		return pkiPEM{}, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return pkiPEM{}, err
	}

	leaf := func(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		key, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		tmpl.NotBefore, tmpl.NotAfter = caTmpl.NotBefore, caTmpl.NotAfter
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := sign(tmpl, ca, key, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate %q: %w", tmpl.Subject.CommonName, err)
		}
		keyPEM, err = privatePEM(key)
		return pemBlock("CERTIFICATE", der), keyPEM, err
	}
	servingCert, servingKey, err := leaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	})
	if err != nil {
		return pkiPEM{}, err
	}
	clientCert, clientKey, err := leaf(&x509.Certificate{
		// The API server maps CN to the user name and O to its groups.
		Subject:     pkix.Name{CommonName: "kubetest-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return pkiPEM{}, err
	}

	saKey, err := newKey()
	if err != nil {
		return pkiPEM{}, err
	}
	saPriv, err := privatePEM(saKey)
	if err != nil {
		return pkiPEM{}, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return pkiPEM{}, err
	}

	caPEM := pemBlock("CERTIFICATE", caDER)
	for name, data := range map[string][]byte{
		"ca.crt":      caPEM,
		"serving.crt": servingCert,
		"serving.key": servingKey,
		"sa.key":      saPriv,
		"sa.pub":      pemBlock("PUBLIC KEY", saPubDER),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return pkiPEM{}, err
		}
	}
	return pkiPEM{ca: caPEM, clientCert: clientCert, clientKey: clientKey}, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
}

func privatePEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
