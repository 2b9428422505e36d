package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	etcdmeta "cairn/meta/etcd"
)

// tlsFlags are the S3 listener's TLS flags: --tls-cert and --tls-key (a
// certificate and key in PEM files), and for cairn server --tls (a
// development CA and certificate made under DIR/tls).
type tlsFlags struct {
	cert, key *string
	dev       *bool // nil: the command has no --tls
}

func addTLSFlags(fs *flag.FlagSet, dev bool) *tlsFlags {
	f := &tlsFlags{
		cert: fs.String("tls-cert", "", "serve S3 over HTTPS only, with this certificate (PEM; the chain, leaf first); needs --tls-key"),
		key:  fs.String("tls-key", "", "the private key (PEM) of --tls-cert"),
	}
	if dev {
		f.dev = fs.Bool("tls", false, "serve S3 over HTTPS only with a development certificate: a self-signed CA and a certificate for the S3 host, made under DIR/tls on first start and reused (trust DIR/tls/ca.pem)")
	}
	return f
}

// config returns the S3 listener's TLS configuration, or nil to serve plain
// HTTP. dir is where --tls keeps its CA and certificate, host the S3
// listen host the certificate names.
func (f *tlsFlags) config(dir, host string) (*tls.Config, error) {
	dev := f.dev != nil && *f.dev
	switch {
	case (*f.cert == "") != (*f.key == ""):
		return nil, fmt.Errorf("%w: give both --tls-cert and --tls-key, or neither", ErrUsage)
	case dev && *f.cert != "":
		return nil, fmt.Errorf("%w: --tls makes its own certificate: give it or --tls-cert/--tls-key, not both", ErrUsage)
	case dev:
		cert, key, err := devCert(dir, "s3", time.Now(), host)
		if err != nil {
			return nil, fmt.Errorf("--tls: %w", err)
		}
		*f.cert, *f.key = cert, key
	case *f.cert == "":
		return nil, nil
	}
	kp, err := tls.LoadX509KeyPair(*f.cert, *f.key)
	if err != nil {
		return nil, fmt.Errorf("%w: --tls-cert %s / --tls-key %s: %w", ErrUsage, *f.cert, *f.key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}, nil
}

// The files of a development CA under DIR/tls; its certificates are
// NAME.pem and NAME-key.pem (s3, node).
const (
	devCAFile    = "ca.pem"
	devCAKeyFile = "ca-key.pem"
)

// devValidity is how long the development CA and certificates are valid.
const devValidity = 10 * 365 * 24 * time.Hour

// devCert makes (or reuses) a self-signed CA in dir and a certificate
// NAME.pem it signs, for servers and clients alike, for hosts (names or
// IPs; 127.0.0.1, ::1 and localhost are always included). It returns the
// certificate and key files. A certificate that exists is reused as long
// as it names every host; otherwise a new one is signed by the same CA,
// so that clients keep trusting it.
func devCert(dir, name string, now time.Time, hosts ...string) (certFile, keyFile string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	ca, caKey, err := loadOrMakeCA(dir, "cairn development CA", now)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if c, err := readCert(certFile); err == nil && certNamesAll(c, hosts) && c.CheckSignatureFrom(ca) == nil && now.Before(c.NotAfter) && !etcdUserCN(c.Subject.CommonName) {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
			return certFile, keyFile, nil
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if err := issueCert(certFile, keyFile, ca, caKey, name, hosts, now); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// issueCert writes a certificate signed by ca, for servers and clients
// alike, valid for hosts and loopback, with the CommonName certCN(name,
// hosts[0]), and its key (mode 0600).
func issueCert(certFile, keyFile string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, hosts []string, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	first := ""
	if len(hosts) > 0 {
		first = hosts[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: certCN(name, first), Organization: []string{"cairn"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(devValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			// An unspecified address (0.0.0.0, ::) names no host: clients
			// that reach it by another address need --tls-cert.
			if !ip.IsUnspecified() && !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if host != "" && !slices.Contains(tmpl.DNSNames, host) {
			tmpl.DNSNames = append(tmpl.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(keyFile, key); err != nil {
		return err
	}
	return os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// certNamesAll reports whether c is valid for every host.
func certNamesAll(c *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if !certNames(c, h) {
			return false
		}
	}
	return true
}

// certCN is the CommonName of a certificate cairn makes: "cairn NAME
// HOST". It is never an etcd user's name: etcd takes the CommonName of a
// request's client certificate as its user when the request has no token
// (docs/design/meta.md, "Transport security and authentication").
func certCN(name, host string) string { return strings.TrimSpace("cairn " + name + " " + host) }

// etcdUserCN reports whether cn is the name of an etcd user of cairn: a
// certificate with it would authenticate to etcd without a password.
func etcdUserCN(cn string) bool { return cn == etcdmeta.User || cn == etcdmeta.RootUser }

// certNames reports whether c is valid for host (an unspecified address,
// 0.0.0.0 or ::, is checked as the loopback the certificate always names).
func certNames(c *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return c.VerifyHostname(host) == nil
}

// loadOrMakeCA reads the CA of dir (ca.pem, ca-key.pem) or makes one
// with CommonName cn.
func loadOrMakeCA(dir, cn string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	caFile, caKeyFile := filepath.Join(dir, devCAFile), filepath.Join(dir, devCAKeyFile)
	kp, err := tls.LoadX509KeyPair(caFile, caKeyFile)
	if err == nil {
		ca, err := x509.ParseCertificate(kp.Certificate[0])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", caFile, err)
		}
		key, ok := kp.PrivateKey.(*ecdsa.PrivateKey)
		if !ok || !ca.IsCA {
			return nil, nil, fmt.Errorf("%s is not a cairn development CA: delete %s to make a new one", caFile, dir)
		}
		return ca, key, nil
	}
	if _, serr := os.Stat(caFile); !errors.Is(serr, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s or %s: %w (delete %s to make a new CA)", caFile, caKeyFile, err, dir)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"cairn"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(devValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(caKeyFile, key); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

// writePEM writes key as a PKCS #8 PEM file of mode 0600.
func writePEM(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// plainWarning is the start message's note for a plain-HTTP S3 listener
// at addr: empty on loopback, else a warning that traffic is unencrypted.
func plainWarning(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return ""
	}
	return fmt.Sprintf("  warning: S3 on %s is plain HTTP: its traffic (data, and SSE-C keys with --allow-insecure-ssec) is unencrypted; turn TLS on with --tls-cert/--tls-key\n", addr)
}

// s3URL is the URL of an S3 listener at addr: https with TLS.
func s3URL(addr string, c *tls.Config) string {
	if c != nil {
		return "https://" + addr
	}
	return "http://" + addr
}

// nodeTLS is the mutual TLS of the node protocol under cairn server --tls:
// the node's certificate, signed by the development CA, serves the node
// and is the cluster's client certificate; nodes take only clients with a
// certificate of that CA (docs/design/node-protocol.md, "Transport
// security").
type nodeTLS struct {
	server, client *tls.Config
	files          NodeTLSFiles // for client.conf
}

// devNodeTLS makes (or reuses) the node certificate for host under dir.
func devNodeTLS(dir, host string) (*nodeTLS, error) {
	cert, key, err := devCert(dir, "node", time.Now(), host)
	if err != nil {
		return nil, fmt.Errorf("--tls: %w", err)
	}
	files := NodeTLSFiles{CA: filepath.Join(dir, devCAFile), Cert: cert, Key: key}
	for _, f := range []*string{&files.CA, &files.Cert, &files.Key} {
		if *f, err = filepath.Abs(*f); err != nil {
			return nil, err
		}
	}
	return files.nodeTLS()
}

// devMetaTLS makes (or reuses) the embedded etcd member's certificate
// under dir for the hosts of its client and peer addresses: it serves
// both and is its client certificate towards peers.
func devMetaTLS(dir, clientAddr, peerAddr string) (*etcdmeta.TLSFiles, error) {
	var hosts []string
	for _, a := range []string{clientAddr, peerAddr} {
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%w: --tls: metadata address %q: want HOST:PORT", ErrUsage, a)
		}
		hosts = append(hosts, h)
	}
	cert, key, err := devCert(dir, "meta", time.Now(), hosts...)
	if err != nil {
		return nil, fmt.Errorf("--tls: %w", err)
	}
	return &etcdmeta.TLSFiles{CA: filepath.Join(dir, devCAFile), Cert: cert, Key: key}, nil
}

// nodeTLS is the mutual TLS of a node that serves and presents Cert and
// takes only clients with a certificate of CA.
func (f NodeTLSFiles) nodeTLS() (*nodeTLS, error) {
	client, err := f.clientConfig("node_tls")
	if err != nil {
		return nil, err
	}
	return &nodeTLS{
		server: &tls.Config{Certificates: client.Certificates, ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs: client.RootCAs, MinVersion: tls.VersionTLS12},
		client: client,
		files:  f,
	}, nil
}

// clientConfig is the TLS configuration of a node-protocol or metadata
// client: it trusts CA and presents Cert. what names the files in errors
// (node_tls, meta_tls).
func (f NodeTLSFiles) clientConfig(what string) (*tls.Config, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("%s needs ca, cert and key", what)
	}
	ca, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", what, f.CA)
	}
	kp, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("%s: %s / %s: %w", what, f.Cert, f.Key, err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}, nil
}
