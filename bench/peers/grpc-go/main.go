// The grpc-go peer of volley-bench's `grpc` scenario: grpc_bench's
// complex_proto Greeter as its go_grpc entry serves it (the reply echoes
// the request), on 127.0.0.1:PORT. It prints "ready" once listening and
// stops when its stdin closes, as the bench's other servers do.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"google.golang.org/grpc"

	pb "volley-bench/greeter/helloworld"
)

type greeter struct {
	pb.UnimplementedGreeterServer
}

func (greeter) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Response: in.Request}, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: greeter-go PORT")
		os.Exit(2)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot listen:", err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	pb.RegisterGreeterServer(server, greeter{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		server.Stop()
	}()
	fmt.Println("ready")
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
