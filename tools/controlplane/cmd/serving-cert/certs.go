package main

import (
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

// writeSelfSignedServingCert makes a throwaway CA and a serving certificate for host signed by it,
// and writes ca.crt, tls.crt and tls.key into dir. The test bed registers ca.crt as the caBundle of
// the webhook configurations, so the API server verifies the webhook server as it would in a real
// cluster (where cert-manager issues the pair). ca.crt is written last: its presence means the pair
// is complete.
func writeSelfSignedServingCert(dir, host string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "capi-ts-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		serving.IPAddresses = []net.IP{ip}
	} else {
		serving.DNSNames = []string{host}
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, file := range []struct {
		name, kind string
		der        []byte
		mode       os.FileMode
	}{
		{"tls.key", "EC PRIVATE KEY", keyDER, 0o600},
		{"tls.crt", "CERTIFICATE", servingDER, 0o644},
		{"ca.crt", "CERTIFICATE", caDER, 0o644},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: file.kind, Bytes: file.der})
		if err := os.WriteFile(filepath.Join(dir, file.name), data, file.mode); err != nil {
			return fmt.Errorf("writing %s: %w", file.name, err)
		}
	}
	return nil
}
