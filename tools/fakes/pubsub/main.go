// Command pubsub serves an in-memory Pub/Sub on 127.0.0.1 for the tests: the pstest package of
// Google's Go Pub/Sub client (cloud.google.com/go/pubsub/v2/pstest), over gRPC as the real service.
//
//	pubsub [-port N]    prints its address (127.0.0.1:PORT, for PUBSUB_EMULATOR_HOST) on one line,
//	                    then serves until killed
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2/pstest"
)

func main() {
	port := flag.Int("port", 0, "the port to listen on (0: a free one)")
	flag.Parse()
	server := pstest.NewServerWithAddress(fmt.Sprintf("127.0.0.1:%d", *port))
	defer server.Close()
	fmt.Fprintln(os.Stdout, server.Addr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
