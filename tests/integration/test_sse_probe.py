"""bench/sse_timing.py --probe end to end: the compiled SSE backend and client (bench/sse_probe.cc)
directly and through `warmroute serve`, on a tiny sweep. Checks that every event arrives with its
send stamp read, on both paths, and that the tables are printed; not how fast (that is the
benchmark's job, docs/performance.md).

Standard library only.
"""
import os
import re
import subprocess
import sys
import unittest

from emulator_process import binary

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "sse_timing.py")


class SseProbeTest(unittest.TestCase):
    def test_sweep_through_the_gateway_counts_every_event(self):
        probe = os.environ.get("SSE_PROBE")
        self.assertTrue(probe and os.access(probe, os.X_OK), f"SSE_PROBE not set: {probe!r}")
        out = subprocess.run(
            [sys.executable, SCRIPT, "--bin", binary(), "--probe", probe, "--streams", "1,3",
             "--events", "8", "--interval-ms", "5", "--rounds", "1"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        rows = re.findall(r"^\| (direct|gateway) \| (\d+) \|", out.stdout, re.M)
        # 1 stream and 3 streams of 8 events, each direct and through the gateway.
        self.assertEqual([(path, int(n)) for path, n in rows],
                         [("direct", 8), ("gateway", 8), ("direct", 24), ("gateway", 24)],
                         out.stdout)
        self.assertIn("| streams | direct jitter p99 ms |", out.stdout)

    def test_probe_refuses_bad_flags(self):
        probe = os.environ.get("SSE_PROBE")
        out = subprocess.run([probe, "measure", "--port", "0"], capture_output=True, text=True,
                             timeout=10)
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage: sse_probe", out.stderr)


if __name__ == "__main__":
    unittest.main()
