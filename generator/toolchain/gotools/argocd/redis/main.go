// redis serves the Redis protocol in memory on the given address, for the Argo CD application
// controller and repo-server that simulate runs (their manifest and cluster caches). It is
// miniredis (github.com/alicebob/miniredis/v2, at the version argo-cd v3.2.6 requires), which
// Argo CD itself runs in its core mode (cmd/argocd/commands/headless/headless.go): no Redis
// server to install, and nothing kept between runs.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(*addr); err != nil {
		log.Fatalf("redis: %v", err)
	}
	log.Printf("redis: listening on %s", server.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.Close()
}
