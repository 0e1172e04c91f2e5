// SPDX-License-Identifier: BSD-3-Clause

// TLS (rediss://) end to end: the test makes a CA, server and client
// certificates, then runs itself again under the harness with TLS-only
// nodes that require client certificates, and checks verification there.

package redlock_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	redlock "github.com/redlock-project/redlock/bindings/go"
)

const envTLSDir = "REDLOCK_GO_TLS_DIR" // set in the inner run: where the PEM files are

func TestTLS(t *testing.T) {
	if dir := os.Getenv(envTLSDir); dir != "" {
		tlsInner(t, dir)
		return
	}
	script := filepath.Join("..", "..", "tests", "harness", "nodes.py")
	help, _ := exec.Command("python3", script, "exec", "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("--tls-dir")) {
		t.Skip("the harness has no --tls-dir")
	}
	dir := t.TempDir()
	writeTestPKI(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", script, "exec", "--count", "3", "--kind", "mixed",
		"--tls-dir", dir, "--tls-auth-clients", "yes", "--",
		self, "-test.run", "^TestTLS$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), envTLSDir+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestTLS")) {
		t.Fatalf("TLS run under the harness: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "tls_test.go") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

func tlsInner(t *testing.T, dir string) {
	if !strings.HasPrefix(nodeURLs[0], "rediss://") {
		t.Fatalf("inner TLS run on %v", nodeURLs)
	}
	ca := filepath.Join(dir, "ca.crt")
	cert := redlock.WithTLSClientCert(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	cycle := func(opts ...redlock.Option) error {
		c, err := redlock.NewClient(nodeURLs, testOpts(opts...)...)
		if err != nil {
			return err
		}
		defer c.Close()
		m := c.NewMutex(lockName(t))
		if err := m.TryLock(); err != nil {
			return err
		}
		if ok, err := m.Extend(); !ok {
			return err
		}
		return unlockErr(m)
	}
	if err := cycle(redlock.WithTLSCAFile(ca), cert); err != nil {
		t.Fatalf("CA file and client certificate: %v", err)
	}
	if _, err := exec.LookPath("openssl"); err == nil { // WithTLSCADir needs `openssl rehash` links
		cadir := t.TempDir()
		if err := os.Link(ca, filepath.Join(cadir, "ca.pem")); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("openssl", "rehash", cadir).CombinedOutput(); err != nil {
			t.Fatalf("openssl rehash: %v %s", err, out)
		}
		if err := cycle(redlock.WithTLSCADir(cadir), cert); err != nil {
			t.Fatalf("CA directory: %v", err)
		}
	}
	if err := cycle(redlock.WithTLSInsecureSkipVerify(), cert); err != nil {
		t.Fatalf("insecure skip verify: %v", err)
	}
	for _, bad := range []struct {
		name string
		opts []redlock.Option
	}{
		{"system CAs only", []redlock.Option{cert}},
		{"wrong server name", []redlock.Option{redlock.WithTLSCAFile(ca), redlock.WithTLSServerName("wrong.example"), cert}},
		{"no client certificate", []redlock.Option{redlock.WithTLSCAFile(ca)}},
	} {
		err := cycle(bad.opts...)
		if err == nil {
			t.Fatalf("%s: the lock went through", bad.name)
		}
		t.Logf("%s: %v", bad.name, err)
		if bad.name != "no client certificate" { // the server may only hang up: EIO
			mustIs(t, err, redlock.ErrTLS)
		}
	}
}

// writeTestPKI writes ca.crt, server.crt/.key (for 127.0.0.1 and
// localhost) and client.crt/.key into dir, the layout of the harness's
// --tls-dir.
func writeTestPKI(t *testing.T, dir string) {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redlock test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	write("ca.crt", "CERTIFICATE", caDER)
	leaf := func(base string, serial int64, usage x509.ExtKeyUsage) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: base},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(base+".crt", "CERTIFICATE", der)
		write(base+".key", "PRIVATE KEY", kder)
	}
	leaf("server", 2, x509.ExtKeyUsageServerAuth)
	leaf("client", 3, x509.ExtKeyUsageClientAuth)
}
