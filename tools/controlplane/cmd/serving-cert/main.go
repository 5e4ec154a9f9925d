// Command serving-cert writes a throwaway CA (ca.crt) and a serving certificate signed by it
// (tls.crt, tls.key) for one host into a folder: the pair CAPI's manager serves its webhooks with,
// which on a real management cluster cert-manager issues. capi-ts's test bed runs it before it starts
// the manager and registers ca.crt as the caBundle of the webhook configurations.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("dir", "", "folder to write ca.crt, tls.crt and tls.key into (created if missing)")
	host := flag.String("host", "127.0.0.1", "IP address or DNS name the serving certificate is for")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "serving-cert: --dir is required (the folder to write ca.crt, tls.crt and tls.key into)")
		os.Exit(2)
	}
	if err := writeSelfSignedServingCert(*dir, *host); err != nil {
		fmt.Fprintf(os.Stderr, "serving-cert: %v\n", err)
		os.Exit(1)
	}
}
