"""How `warmroute serve` frames its responses for what each client asked (RFC 9110, 9112), over
raw sockets, against one emulated replica: a HEAD request's response has no body, an HTTP/1.0
client gets a stream without the chunked coding it does not know, an absolute-form target is
served as its path, a request body in a transfer coding the gateway cannot decode is refused
with 501 rather than passed on still encoded, and an HTTP/1.1 request without exactly one Host
header is a 400."""
import gzip
import json
import socket
import time
import unittest

from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess, parse_response

MODEL = "tiny"
ENGINE = None


def setUpModule():
    global ENGINE
    ENGINE = EmulatorProcess(["--profile", "tiny", "--no-jitter"])
    ENGINE.__enter__()


def tearDownModule():
    if ENGINE is not None:
        ENGINE.__exit__(None, None, None)


def config():
    replica = ENGINE.replicas[0]
    return {"listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
            "backends": [{"name": "r0", "url": f"http://{replica.host}:{replica.port}",
                          "models": [MODEL]}],
            "observability": {"access_log": "off"}}


def read_until_closed(sock, timeout=10.0):
    """Every byte until the peer closes; raises if it has not closed within `timeout`."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    data = b""
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"the connection was not closed within {timeout} s: {data[:300]!r}")


def read_head(sock, data=b""):
    """(head bytes, what followed them) once a response head has arrived."""
    sock.settimeout(10)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"closed before a response head: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


class HttpFramingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = GatewayProcess(config())
        cls.gw.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)

    def connect(self):
        return socket.create_connection((self.gw.host, self.gw.port), timeout=10)

    def exchange(self, raw):
        """(status, headers, body) of the response to `raw` (which asks the gateway to close)."""
        with self.connect() as sock:
            sock.sendall(raw)
            return parse_response(read_until_closed(sock))

    def test_head_gets_the_head_only_and_the_connection_stays_usable(self):
        with self.connect() as sock:
            sock.sendall(b"HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            head, rest = read_head(sock)
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
            length = int(dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
                         [b"Content-Length"])
            self.assertGreater(length, 0, "the length GET's body would have")
            # What follows the HEAD response's head is the GET's response, not a body.
            head2, rest2 = read_head(sock, rest)
            self.assertTrue(head2.startswith(b"HTTP/1.1 200"), (head2, rest[:80]))

    def test_an_http10_client_gets_a_stream_unchunked_that_the_close_ends(self):
        body = json.dumps({"model": MODEL, "max_tokens": 5, "stream": True,
                           "messages": [{"role": "user", "content": "count to five"}]}).encode()
        with self.connect() as sock:
            # Connection: keep-alive from an HTTP/1.0 client: the stream still ends with a close.
            sock.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\n"
                         b"Connection: keep-alive\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            raw = read_until_closed(sock)
        head, _, payload = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        self.assertNotIn(b"transfer-encoding", head.lower())
        self.assertNotIn(b"content-length", head.lower())
        self.assertIn(b"Connection: close", head)
        self.assertTrue(payload.startswith(b"data: {"), payload[:80])
        self.assertTrue(payload.endswith(b"data: [DONE]\n\n"), payload[-80:])

    def test_absolute_form_target_is_served_as_its_path(self):
        status, _, body = self.exchange(b"GET http://gateway.example/v1/models HTTP/1.1\r\n"
                                        b"Host: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["data"][0]["id"], MODEL)

    def test_a_compressed_body_is_415_unsupported_media_type(self):
        # Not a 400 saying the body is not valid UTF-8: the client learns what to change.
        body = gzip.compress(json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 1}).encode())
        status, _, reply = self.exchange(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                         b"Content-Encoding: gzip\r\nConnection: close\r\n"
                                         b"Content-Length: " + str(len(body)).encode() +
                                         b"\r\n\r\n" + body)
        self.assertEqual(status, 415, reply)
        error = json.loads(reply)["error"]
        self.assertEqual(error["code"], 415)
        self.assertIn("Content-Encoding 'gzip'", error["message"])

    def test_a_transfer_coding_besides_chunked_is_not_implemented(self):
        status, _, body = self.exchange(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                        b"Transfer-Encoding: gzip, chunked\r\n\r\n"
                                        b"5\r\nxxxxx\r\n0\r\n\r\n")
        self.assertEqual(status, 501, body)
        error = json.loads(body)["error"]
        self.assertIn("chunked", error["message"])

    def test_an_http11_request_needs_exactly_one_host_header(self):
        for raw in (b"GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n",
                    b"GET /v1/models HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n"):
            status, _, body = self.exchange(raw)
            self.assertEqual(status, 400, body)
            error = json.loads(body)["error"]
            self.assertEqual(error["type"], "BadRequestError")
            self.assertIn("Host header", error["message"])
        # HTTP/1.0 may leave it out.
        status, _, body = self.exchange(b"GET /v1/models HTTP/1.0\r\n\r\n")
        self.assertEqual(status, 200, body)


if __name__ == "__main__":
    unittest.main()
