// The test API server's etcd: the etcd server exactly as go.etcd.io/etcd/server/v3 builds it, from the Go
// module proxy. tests/testcluster.py builds it once per machine and starts it on loopback ports.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
