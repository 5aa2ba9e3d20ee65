"""Transport security end to end: `warmroute serve` terminating TLS (listen.tls), optionally
requiring client certificates, and speaking mTLS to `warmroute engine` replicas that serve TLS
(--tls-cert/--tls-key/--tls-client-ca).

A throwaway CA, server and client certificates are made at test time with the `openssl` CLI.
Covers: HTTPS chat completions (plain and streaming) through gateway --mTLS--> emulator,
including a request and a response larger than one TLS record, and a client that closes with
close_notify mid-request (the engine's request is aborted);
what is refused without harm to other connections (a plaintext client on the TLS port, a
handshake that never comes, a client without a certificate); a backend whose certificate the
gateway cannot verify (503 with an OpenAI error body); config errors naming the key (exit 2).
"""
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import warnings

from emulator_process import EmulatorProcess, binary
from gateway_process import GatewayProcess, run_serve

MODEL = "tiny"
TOKEN = "tls-test-token"
PKI = None      # temp dir with the certificates
ENGINE = None   # one `--profile tiny` replica serving TLS, requiring client certificates


def pki(name):
    return os.path.join(PKI.name, name)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, cwd=PKI.name, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
            "-subj", f"/CN=warmroute test {name}")


def make_leaf(name, ca, extensions):
    with open(pki(f"{name}.ext"), "w") as f:
        f.write(extensions)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")


def setUpModule():
    global PKI, ENGINE
    if shutil.which("openssl") is None:
        raise unittest.SkipTest("the openssl CLI is needed to make test certificates")
    PKI = tempfile.TemporaryDirectory(prefix="wr-tls-")
    make_ca("ca")
    make_ca("other_ca")
    make_leaf("server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                              "extendedKeyUsage=serverAuth\n")
    make_leaf("client", "ca", "extendedKeyUsage=clientAuth\n")
    with open(pki("garbage.pem"), "w") as f:
        f.write("this is not PEM\n")
    ENGINE = EmulatorProcess(["--profile", "tiny", "--no-jitter",
                              "--tls-cert", pki("server.pem"), "--tls-key", pki("server.key"),
                              "--tls-client-ca", pki("ca.pem")])
    ENGINE.__enter__()


def tearDownModule():
    if ENGINE is not None:
        ENGINE.__exit__(None, None, None)
    if PKI is not None:
        PKI.cleanup()


def engine_backend(engine=None, **tls):
    r = (engine or ENGINE).replicas[0]
    tls_config = {"ca_file": pki("ca.pem"), "cert_file": pki("client.pem"),
                  "key_file": pki("client.key")}
    tls_config.update(tls)
    return {"name": "r0", "url": f"https://{r.host}:{r.port}", "tls": tls_config}


def gateway_config(listen_tls=None, backend=None, **listen):
    config = {
        "listen": dict({"host": "127.0.0.1", "port": 0, "threads": 2}, **listen),
        "backends": [backend or engine_backend()],
        "health": {"probe_interval_ms": 100, "probe_timeout_ms": 1000},
        "scrape": {"interval_ms": 100},
        "retries": 0,
        "admin": {"token": TOKEN},
        "observability": {"access_log": "off"},
    }
    if listen_tls is not None:
        config["listen"]["tls"] = listen_tls
    return config


def server_tls(**extra):
    return dict({"cert_file": pki("server.pem"), "key_file": pki("server.key")}, **extra)


def client_context(with_cert=False):
    ctx = ssl.create_default_context(cafile=pki("ca.pem"))
    if with_cert:
        ctx.load_cert_chain(pki("client.pem"), pki("client.key"))
    return ctx


def chat_body(content, stream=False):
    body = {"model": MODEL, "messages": [{"role": "user", "content": content}], "max_tokens": 4}
    if stream:
        body["stream"] = True
    return body


def https_post(gw, body, ctx=None, timeout=10):
    """(status, headers, body bytes) of one POST /v1/chat/completions over HTTPS."""
    conn = http.client.HTTPSConnection(gw.host, gw.port, timeout=timeout,
                                       context=ctx or client_context())
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def wait_ready(test, gw, ctx=None):
    """Waits until a chat completion goes through (the first probe marked the backend up)."""
    last = []

    def ok():
        last[:] = [https_post(gw, chat_body("warm up"), ctx)]
        return last[0][0] == 200

    test.assertTrue(wait_until(ok), f"{last}\n{gw.log()}")


def engine_running():
    """The engine's vllm:num_requests_running, scraped over mTLS."""
    r = ENGINE.replicas[0]
    conn = http.client.HTTPSConnection(r.host, r.port, timeout=10,
                                       context=client_context(with_cert=True))
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:num_requests_running"))


def read_until_closed(sock, timeout):
    """Bytes the server sent before it closed the connection; None if it was still open after
    `timeout` seconds."""
    data = b""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        return data
    except socket.timeout:
        return None
    return None


class GatewayTlsTest(unittest.TestCase):
    """One gateway: TLS listener without client certificates, mTLS to the emulator."""

    @classmethod
    def setUpClass(cls):
        cls.gw = GatewayProcess(gateway_config(server_tls(), header_timeout_ms=800),
                                extra_args=["--log-level", "debug"])
        cls.gw.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)

    def setUp(self):
        wait_ready(self, self.gw)

    def test_chat_completion_over_https_and_mtls_to_the_engine(self):
        status, headers, body = https_post(self.gw, chat_body("hello over TLS"))
        self.assertEqual(status, 200, body)
        doc = json.loads(body)
        self.assertEqual(doc["object"], "chat.completion")
        self.assertTrue(doc["choices"][0]["message"]["content"])
        self.assertEqual(headers.get("x-warmroute-backend"), "r0")

    def test_streaming_chat_completion_over_https(self):
        status, headers, body = https_post(self.gw, chat_body("stream over TLS", stream=True))
        self.assertEqual(status, 200, body)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        events = [line[len("data: "):] for line in body.decode().split("\n")
                  if line.startswith("data: ")]
        self.assertEqual(events[-1], "[DONE]", body)
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertTrue(any(c["choices"] and c["choices"][0]["delta"].get("content")
                            for c in chunks), body)

    def test_probes_scrapes_and_model_discovery_go_over_mtls(self):
        def backend():
            conn = http.client.HTTPSConnection(self.gw.host, self.gw.port, timeout=10,
                                               context=client_context())
            try:
                conn.request("GET", "/admin/backends",
                             headers={"Authorization": f"Bearer {TOKEN}"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                return json.loads(resp.read())["backends"][0]
            finally:
                conn.close()

        self.assertTrue(wait_until(lambda: backend()["metrics"] is not None and
                                   backend()["discovered_models"] == [MODEL]), backend())
        b = backend()
        self.assertEqual(b["url"], f"https://{ENGINE.replicas[0].host}:{ENGINE.replicas[0].port}")
        self.assertEqual(b["state"], "up")
        self.assertGreater(b["kv_capacity_tokens"], 0)  # from the scraped vllm:cache_config_info
        self.assertIn("health probe ok", self.gw.log())

    def test_bodies_larger_than_a_tls_record_go_through_whole(self):
        """A 24 KB request and a 27 KB response: over 16 KB, so the gateway's request to the
        engine (mTLS), the engine's response and the gateway's response each span several TLS
        records. (Such writes once sent the head alone: Boost's flat_stream, net/tls/tls_write.h.)
        An engine of its own, 50x faster than real time, generates the 6,000 tokens quickly."""
        with EmulatorProcess(["--profile", "tiny", "--no-jitter", "--time-scale", "0.02",
                              "--tls-cert", pki("server.pem"), "--tls-key", pki("server.key"),
                              "--tls-client-ca", pki("ca.pem")]) as engine, \
                GatewayProcess(gateway_config(server_tls(), backend=engine_backend(engine))) as gw:
            wait_ready(self, gw)
            body = chat_body("lorem ipsum " * 2000)
            body.update(max_tokens=6000, ignore_eos=True)
            self.assertGreater(len(json.dumps(body)), 16384)
            status, _, raw = https_post(gw, body, timeout=30)
            self.assertEqual(status, 200, raw[:300])
            self.assertGreater(len(raw), 16384)
            usage = json.loads(raw)["usage"]
            self.assertEqual(usage["completion_tokens"], 6000)
            self.assertGreater(usage["prompt_tokens"], 4000)

    def test_client_closing_with_close_notify_aborts_the_engines_request(self):
        """TLS 1.3 encrypts alerts, so a client's close_notify looks like application data to
        the gateway's watch (net/http1/http_server.cc, Watch); the FIN right behind it must still
        cancel the request, as OpenSSL and Go clients close that way."""
        ctx = client_context()
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        sock = ctx.wrap_socket(socket.create_connection((self.gw.host, self.gw.port), timeout=10),
                               server_hostname=self.gw.host)
        data = json.dumps(dict(chat_body("Long."), max_tokens=20000)).encode()
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.assertTrue(wait_until(lambda: engine_running() == 1), "the engine to start it")
        time.sleep(0.05)
        closed = time.monotonic()
        sock.settimeout(0.01)
        try:
            sock.unwrap()  # sends close_notify; the gateway sends none back mid-request
        except (ssl.SSLError, OSError):
            pass
        sock.close()
        while engine_running() != 0 and time.monotonic() - closed < 2:
            time.sleep(0.005)
        delay = time.monotonic() - closed
        self.assertLess(delay, 0.1, f"the engine still ran it {delay * 1e3:.0f} ms later")

    def test_keep_alive_connection_serves_several_requests(self):
        conn = http.client.HTTPSConnection(self.gw.host, self.gw.port, timeout=10,
                                           context=client_context())
        try:
            for i in range(3):
                conn.request("POST", "/v1/chat/completions",
                             body=json.dumps(chat_body(f"turn {i}")).encode(),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                resp.read()
        finally:
            conn.close()

    def test_plaintext_client_on_the_tls_port_is_refused(self):
        with socket.create_connection((self.gw.host, self.gw.port), timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = read_until_closed(s, 5)
        self.assertIsNotNone(data, "the gateway kept a plaintext connection open")
        self.assertNotIn(b"HTTP/1.1 200", data)
        self.assertTrue(self.gw.alive())
        self.assertEqual(https_post(self.gw, chat_body("after plaintext"))[0], 200)
        self.assertTrue(wait_until(lambda: "TLS handshake with 127.0.0.1" in self.gw.log()),
                        self.gw.log())

    def test_silent_client_is_cut_after_the_header_timeout(self):
        start = time.monotonic()
        with socket.create_connection((self.gw.host, self.gw.port), timeout=5) as s:
            data = read_until_closed(s, 5)
        self.assertEqual(data, b"")
        self.assertLess(time.monotonic() - start, 4)
        self.assertTrue(wait_until(lambda: "timed out after 800 ms" in self.gw.log()),
                        self.gw.log())
        self.assertEqual(https_post(self.gw, chat_body("after silence"))[0], 200)

    def test_tls_1_1_client_is_refused(self):
        ctx = client_context()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # else OpenSSL 3 will not even offer TLS 1.1
        with self.assertRaises(ssl.SSLError):
            https_post(self.gw, chat_body("old TLS"), ctx)
        self.assertTrue(wait_until(lambda: "failed: unsupported protocol" in self.gw.log()),
                        self.gw.log())
        self.assertEqual(https_post(self.gw, chat_body("after TLS 1.1"))[0], 200)


class ClientCertificateTest(unittest.TestCase):
    """listen.tls.client_ca_file: only clients with a certificate from that CA are served."""

    def test_client_without_certificate_is_refused(self):
        config = gateway_config(server_tls(client_ca_file=pki("ca.pem")))
        with GatewayProcess(config, extra_args=["--log-level", "debug"]) as gw:
            wait_ready(self, gw, client_context(with_cert=True))
            with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
                https_post(gw, chat_body("no certificate"), client_context(with_cert=False))
            self.assertTrue(gw.alive())
            status, _, body = https_post(gw, chat_body("with certificate"),
                                         client_context(with_cert=True))
            self.assertEqual(status, 200, body)
            self.assertTrue(wait_until(lambda: "TLS handshake with" in gw.log()), gw.log())


class BackendTlsTest(unittest.TestCase):

    def test_backend_with_an_unverifiable_certificate_is_refused(self):
        config = gateway_config(backend=engine_backend(ca_file=pki("other_ca.pem")))
        with GatewayProcess(config) as gw:
            conn = http.client.HTTPConnection(gw.host, gw.port, timeout=10)
            try:
                conn.request("POST", "/v1/chat/completions",
                             body=json.dumps(chat_body("wrong CA")).encode(),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                status, body = resp.status, resp.read()
            finally:
                conn.close()
            self.assertIn(status, (502, 503), body)
            err = json.loads(body)["error"]
            self.assertTrue(err["message"])
            self.assertTrue(gw.alive())
            self.assertTrue(wait_until(lambda: "certificate verify failed" in gw.log()), gw.log())

    def test_engine_requires_a_client_certificate(self):
        r = ENGINE.replicas[0]
        ctx = client_context()
        ctx.check_hostname = False
        # TLS 1.3: the server checks the client's certificate after the client's handshake ended,
        # so the refusal shows on the first read.
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            conn = http.client.HTTPSConnection(r.host, r.port, timeout=10, context=ctx)
            try:
                conn.request("GET", "/v1/models")
                conn.getresponse().read()
            finally:
                conn.close()
        conn = http.client.HTTPSConnection(r.host, r.port, timeout=10,
                                           context=client_context(with_cert=True))
        try:
            conn.request("GET", "/v1/models")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertEqual(json.loads(resp.read())["data"][0]["id"], MODEL)
        finally:
            conn.close()


class TlsConfigErrorTest(unittest.TestCase):

    def assert_config_error(self, config, expected):
        code, out, err = run_serve(config)
        self.assertEqual(code, 2, err)
        self.assertIn(expected, err)

    def test_missing_certificate_file_names_the_key(self):
        self.assert_config_error(
            gateway_config({"cert_file": "/nonexistent/server.pem", "key_file": pki("server.key")}),
            "listen.tls.cert_file: cannot read '/nonexistent/server.pem': "
            "No such file or directory")

    def test_certificate_file_without_pem_names_the_key(self):
        self.assert_config_error(gateway_config(server_tls(cert_file=pki("garbage.pem"))),
                                 f"listen.tls.cert_file: '{pki('garbage.pem')}' holds no PEM "
                                 "certificate")

    def test_key_that_does_not_match_the_certificate_names_the_key(self):
        self.assert_config_error(gateway_config(server_tls(key_file=pki("client.key"))),
                                 f"listen.tls.key_file: the private key in '{pki('client.key')}' "
                                 "does not match the certificate")

    def test_missing_client_ca_file_names_the_key(self):
        self.assert_config_error(gateway_config(server_tls(client_ca_file="/nonexistent/ca.pem")),
                                 "listen.tls.client_ca_file: cannot read '/nonexistent/ca.pem'")

    def test_backend_tls_errors_name_the_key(self):
        self.assert_config_error(gateway_config(backend=engine_backend(ca_file="/nonexistent/ca")),
                                 "backends[0].tls.ca_file: cannot read '/nonexistent/ca'")
        backend = engine_backend()
        backend["url"] = backend["url"].replace("https://", "http://")
        self.assert_config_error(gateway_config(backend=backend),
                                 "backends[0].tls: needs an https:// url")

    def test_engine_flag_errors_name_the_flag(self):
        proc = subprocess.run([binary(), "engine", "--port", "0", "--profile", "tiny",
                               "--tls-cert", "/nonexistent/server.pem",
                               "--tls-key", pki("server.key")],
                              capture_output=True, text=True, timeout=20)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--tls-cert: cannot read '/nonexistent/server.pem'", proc.stderr)


if __name__ == "__main__":
    unittest.main()
