// Command etcd is etcd's own server main, built at the version that
// k8s.io/kubernetes pins, so the e2e control plane needs no other download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
