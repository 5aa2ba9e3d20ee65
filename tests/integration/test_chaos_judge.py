"""The chaos soak's judges can fail (bench/chaos/traffic.py, verdict.py): a response that breaks an
invariant — a silent stream cut, an error that is no OpenAI error, a 5xx with a healthy
alternative, a stream error with no fault, an isolation leak, a growing RSS — is reported as a
violation. Real responses come from a small asyncio server on loopback; no gateway runs here.
"""
import asyncio
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "chaos"))

import verdict  # noqa: E402
from traffic import Outcome, Record, send_request  # noqa: E402

STREAM_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n")


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'


async def answer_with(raw, stream=True, hold=0.0):
    """The Outcome of one request to a server that answers `raw` and closes (after `hold` s)."""
    async def serve(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(raw)
        await writer.drain()
        await asyncio.sleep(hold)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await send_request("127.0.0.1", port, {"stream": stream}, "k", stream=stream,
                                  behaviour="normal", head_timeout=1, idle_timeout=0.5)
    finally:
        server.close()


def outcome_of(raw, **kw):
    return asyncio.run(answer_with(raw, **kw))


class TrafficJudgeTest(unittest.TestCase):
    def test_a_stream_that_ends_with_done_is_ok(self):
        out = outcome_of(STREAM_HEAD + chunk(EVENT) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        self.assertEqual(out.kind, "ok", out.detail)

    def test_a_stream_cut_without_an_error_event_is_unclean(self):
        for tail in (b"", b"0\r\n\r\n"):  # closed mid-way, or "ended" by its last chunk
            out = outcome_of(STREAM_HEAD + chunk(EVENT) + tail)
            self.assertEqual(out.kind, "unclean")
            self.assertIn("silent cut", out.detail)

    def test_a_stream_ended_by_an_error_event_is_a_stream_error(self):
        err = b'data: {"error":{"message":"backend r1 failed","type":"BadGateway"}}\n\n'
        out = outcome_of(STREAM_HEAD + chunk(EVENT) + chunk(err))
        self.assertEqual(out.kind, "stream_error")

    def test_an_error_that_is_no_openai_error_is_unclean(self):
        out = outcome_of(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 4\r\n\r\noops", stream=False)
        self.assertEqual(out.kind, "unclean")
        good = (b'{"error":{"message":"no backend","type":"ServiceUnavailableError"}}')
        out = outcome_of(b"HTTP/1.1 503 X\r\nContent-Length: %d\r\n\r\n" % len(good) + good,
                         stream=False)
        self.assertEqual((out.kind, out.status), ("error", 503))

    def test_silence_past_the_deadline_is_a_hang(self):
        out = outcome_of(STREAM_HEAD + chunk(EVENT), hold=2.0)
        self.assertEqual(out.kind, "hang")


def record(kind, status=0, tenant="alpha", start=10.0, end=11.0, stream=False):
    rec = Record(start, end, tenant, 0, stream, "normal")
    rec.outcome = Outcome(kind, status=status)
    return rec


def soak_with(records, windows=(), samples=()):
    args = types.SimpleNamespace(duration=300, replicas=8, clients=2, seed=1)
    fleet = types.SimpleNamespace(actions=[], garbage=types.SimpleNamespace(posts=0))
    if not samples:
        samples = [(t, g, 1000, 40) for t in range(50, 300, 2) for g in (0, 1)]
    return types.SimpleNamespace(records=list(records), windows=list(windows),
                                 samples=list(samples), exits=[], t0=0.0, args=args,
                                 fleet=fleet, retries={}, index_samples=[])


def probe(tenant, cached, start):
    rec = record("ok", 200, tenant=tenant, start=start, end=start + 0.1)
    rec.behaviour = "probe"
    rec.outcome.cached_tokens = cached
    rec.probe = ("p1", tenant)
    return rec


VALID_PROBE = [probe("alpha", 0, 1), probe("alpha", 64, 2), probe("beta", 0, 3)]


def whys(soak):
    return [v["why"] for v in verdict.judge(soak, [{}, {}], ["", ""], [0, 0])["violations"]]


class VerdictTest(unittest.TestCase):
    def test_a_clean_run_has_no_violation(self):
        self.assertEqual(whys(soak_with([record("ok", 200)] + VALID_PROBE)), [])

    def test_a_5xx_with_a_healthy_alternative_is_a_violation(self):
        got = whys(soak_with([record("error", 502)] + VALID_PROBE,
                             windows=[("kill", 10.5, 20.0)]))
        self.assertEqual(len(got), 1)
        self.assertIn("healthy alternative", got[0])

    def test_a_5xx_is_allowed_when_every_try_could_fail(self):
        windows = [("kill", 9, 20), ("stop", 9, 20), ("garbage", 9, 20)]
        self.assertEqual(whys(soak_with([record("error", 502)] + VALID_PROBE, windows)), [])

    def test_a_504_needs_a_hanging_backend(self):
        self.assertEqual(len(whys(soak_with([record("error", 504)] + VALID_PROBE))), 1)
        self.assertEqual(whys(soak_with([record("error", 504)] + VALID_PROBE,
                                        [("stop", 5, 8)])), [])  # within its linger

    def test_a_stream_error_needs_a_fault_that_cuts_streams(self):
        rec = record("stream_error", 200, stream=True)
        self.assertEqual(len(whys(soak_with([rec] + VALID_PROBE, [("hup", 10, 12)]))), 1)
        self.assertEqual(whys(soak_with([rec] + VALID_PROBE, [("kill", 10, 12)])), [])

    def test_429_only_for_the_limited_tenant(self):
        self.assertEqual(whys(soak_with([record("error", 429, tenant="metered")] + VALID_PROBE)),
                         [])
        self.assertEqual(len(whys(soak_with([record("error", 429)] + VALID_PROBE))), 1)

    def test_isolation_leak_and_vacuous_probes_are_violations(self):
        leak = [probe("alpha", 0, 1), probe("alpha", 64, 2), probe("beta", 48, 3)]
        self.assertTrue(any("isolation: beta saw 48" in w for w in whys(soak_with(leak))))
        never_cached = [probe("alpha", 0, 1), probe("alpha", 0, 2), probe("beta", 0, 3)]
        self.assertTrue(any("no valid probe" in w for w in whys(soak_with(never_cached))))

    def test_growing_rss_is_a_violation(self):
        samples = [(t, g, 1000 + 10 * t, 40) for t in range(50, 300, 2) for g in (0, 1)]
        got = whys(soak_with(VALID_PROBE, samples=samples))
        self.assertEqual(sorted(w.split(" not flat")[0] for w in got),
                         ["gateway A RssAnon kB", "gateway B RssAnon kB"])
        short = soak_with(VALID_PROBE, samples=samples)
        short.args.duration = 60  # too short for the bounded structures to fill: reported only
        self.assertEqual(whys(short), [])

    def test_fds_beyond_the_pool_slack_are_a_violation(self):
        samples = [(t, g, 1000, 40 + t // 4) for t in range(50, 300, 2) for g in (0, 1)]
        got = whys(soak_with(VALID_PROBE, samples=samples))
        self.assertEqual(sorted(w.split(" not flat")[0] for w in got),
                         ["gateway A open fds", "gateway B open fds"])

    def test_a_sanitizer_report_or_a_bad_exit_is_a_violation(self):
        soak = soak_with(VALID_PROBE)
        report = verdict.judge(soak, [{}, {}], ["==1==ERROR: AddressSanitizer: heap-use", ""],
                               [0, 23])
        got = [v["why"] for v in report["violations"]]
        self.assertEqual(len(got), 2, got)


if __name__ == "__main__":
    unittest.main()
