// Command apiserver runs a real kube-apiserver (Kubernetes' own code,
// k8s.io/kubernetes) over an embedded etcd, on loopback, so that CI can
// give deploy/k8s to kubectl apply --dry-run=client and --dry-run=server:
// no kubelet, no scheduler, no nodes. The admin user is a bearer token
// (--token) in system:masters; the serving certificate is self-signed.
//
//	go build -o /tmp/apiserver ./apiserver && /tmp/apiserver --dir /tmp/kube --port 16443
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	dir := flag.String("dir", "", "state folder (etcd data, certificates, keys)")
	port := flag.String("port", "6443", "secure port on 127.0.0.1")
	token := flag.String("token", "ckbench-ci", "bearer token of the admin user")
	flag.Parse()
	if *dir == "" {
		log.Fatal("--dir is required")
	}
	os.MkdirAll(*dir, 0o700)
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(*dir, "etcd")
	cfg.LogLevel = "error"
	// etcd on loopback, off its usual ports (2379, 2380): a machine's own
	// etcd keeps them.
	c, _ := url.Parse("http://127.0.0.1:23790")
	p, _ := url.Parse("http://127.0.0.1:23800")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*c}, []url.URL{*c}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*p}, []url.URL{*p}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	keyFile := filepath.Join(*dir, "sa.key")
	pubFile := filepath.Join(*dir, "sa.pub")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
	tokens := filepath.Join(*dir, "tokens.csv")
	os.WriteFile(tokens, []byte(*token+",admin,admin,system:masters\n"), 0o600)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs([]string{
		"--etcd-servers=" + c.String(),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + *port,
		"--cert-dir=" + filepath.Join(*dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + pubFile, "--service-account-signing-key-file=" + keyFile,
		"--token-auth-file=" + tokens, "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
	})
	if err := cmd.ExecuteContext(ctx); err != nil {
		log.Fatal(err)
	}
}
