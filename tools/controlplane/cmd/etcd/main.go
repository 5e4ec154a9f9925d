// Command etcd is the upstream etcd server, built from go.etcd.io/etcd/server/v3, used as the
// storage of the kube-apiserver that capi-ts starts for its tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
