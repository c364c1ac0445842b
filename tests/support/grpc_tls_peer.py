#!/usr/bin/python3
"""A gRPC server over TLS and a client for it (python3-grpcio, generic handlers, raw bytes: no protoc).

Usage:
  grpc_tls_peer.py PORT_FILE CERT KEY         — binds 127.0.0.1:0 with TLS (CERT/KEY, PEM), writes
      the port to PORT_FILE once listening, serves until killed. Methods of /test.Echo/:
        Unary         the request back, prefixed with b"echo:"
        ServerStream  request "N" → N messages b"msg-0" ... b"msg-{N-1}"
  grpc_tls_peer.py --call HOST:PORT ROOTS     — one Unary call (b"hello through the proxy") and one
      ServerStream call (b"5"), trusting only the CA certificates in ROOTS (PEM). gRPC core takes a
      proxy from the environment (grpc_proxy, https_proxy, http_proxy; no_grpc_proxy/no_proxy
      exempt hosts). Prints "ok" and exits 0, or prints what went wrong and exits 1.
"""
import os
import sys
from concurrent import futures

import grpc

PREFIX = "/test.Echo"


def ident(b):
    return b


def serve(port_file, cert, key):
    def unary(request, context):
        return b"echo:" + request

    def server_stream(request, context):
        for i in range(int(request.decode() or "0")):
            yield b"msg-%d" % i

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, ident, ident),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, ident, ident),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    with open(cert, "rb") as c, open(key, "rb") as k:
        creds = grpc.ssl_server_credentials([(k.read(), c.read())])
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".tmp", port_file)
    server.wait_for_termination()


def call(target, roots):
    with open(roots, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    channel = grpc.secure_channel(target, creds, options=[("grpc.enable_retries", 0)])
    unary = channel.unary_unary(PREFIX + "/Unary", request_serializer=ident, response_deserializer=ident)
    stream = channel.unary_stream(PREFIX + "/ServerStream", request_serializer=ident,
                                  response_deserializer=ident)
    try:
        got = unary(b"hello through the proxy", timeout=20)
        if got != b"echo:hello through the proxy":
            print("unary: %r" % got)
            return 1
        got = list(stream(b"5", timeout=20))
        if got != [b"msg-%d" % i for i in range(5)]:
            print("server stream: %r" % got)
            return 1
    except grpc.RpcError as e:
        print("%s: %s" % (e.code(), e.details()))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--call":
        sys.exit(call(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) == 4:
        serve(*sys.argv[1:4])
    else:
        sys.exit("usage: grpc_tls_peer.py PORT_FILE CERT KEY | --call HOST:PORT ROOTS")
