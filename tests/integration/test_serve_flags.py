"""`warmroute serve`'s flags are held to the config file's rules: a value the file would refuse is
refused on the command line too, exit 2 with the flag named, before anything listens. (Accepted,
each would start a gateway that misbehaves: 5000 threads run out of descriptors and abort, an
empty --host listens on every interface, an unknown --log-level turns logging off, and --backend
leaves a tenant's pool without backends.)"""
import os
import unittest

from gateway_process import run_serve

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BACKEND = ["--backend", "http://127.0.0.1:9"]


class ServeFlagsTest(unittest.TestCase):
    def test_values_the_config_refuses_are_refused_as_flags(self):
        cases = [
            (["--threads", "5000"], "--threads"),
            (["--threads", "-1"], "--threads"),
            (["--host", ""], "--host"),
            (["--access-log", ""], "--access-log"),
            (["--log-level", "foo"], "--log-level"),
            (["--port", "70000"], "--port"),
        ]
        for args, flag in cases:
            with self.subTest(args=args):
                code, out, err = run_serve(None, ["--port", "0", *BACKEND, *args])
                self.assertEqual(code, 2, out + err)
                self.assertIn(flag, err)
                self.assertNotIn("listening", out)

    def test_backend_flags_must_leave_every_tenant_pool_a_backend(self):
        config = os.path.join(ROOT, "deploy", "tenancy", "multi-tenant.yaml")
        code, out, err = run_serve(None, ["--config", config, "--port", "0", *BACKEND])
        self.assertEqual(code, 2, out + err)
        self.assertIn("--backend", err)
        self.assertIn("no backend is in pool", err)

    def test_a_config_of_two_yaml_documents_is_refused(self):
        # The second document's keys were silently ignored.
        code, out, err = run_serve("listen: {port: 0}\n---\nbackends: [{url: 'http://x:1'}]\n")
        self.assertEqual(code, 2, out + err)
        self.assertIn("second YAML document", err)


if __name__ == "__main__":
    unittest.main()
