"""The soak's invariants, judged on every recorded request against the fault windows, and its
report (a dict, printed and written as JSON) and RSS plot (an SVG written here, no plotting
library needed).

Invariants (each broken one is a violation; any violation fails the run):
  ends       no request hangs (the client's deadline, run.client_deadlines) and none ends
             uncleanly (traffic.py: an error that is no OpenAI error, a connection closed
             without a response, a silent stream cut)
  retried    an error before the first byte is allowed only as the gateway's rules
             (docs/gateway.md, "Failure behaviour") say:
               429 for the rate-limited tenant (metered); no other tenant has a limit
               504 (a first-byte or stalled-body timeout, not retried) while a backend hangs
                 (fault "stop")
               other 5xx only when at least retries + 1 backends were failing during the
                 request (a request tries at most retries + 1 backends; the schedule's faults
                 come one at a time, so this never holds unless a fault hits every backend)
             and nothing else (another 4xx is a gateway bug: the soak sends valid requests)
  stream     a stream that ends with an error event is allowed only while a backend fault that
             can cut a stream ran (kill, stop, garbage); a removal by reload or the admin API
             lets in-flight requests finish
  isolation  beta, sending exactly the prompt alpha sent twice, reports cached_tokens 0; and at
             least one probe is valid (alpha's second request was served from its cache)
  flat       each gateway's anonymous RSS (RssAnon) and open fds: the median of the last fifth
             of the samples is within 10% of the median of the first fifth after the warm-up (fds: or higher by
             at most threads x (clients + 2): after a burst of concurrency — requests that
             piled up behind a hung backend — each request in flight may leave one more idle
             keep-alive connection in its thread's upstream pool, which is bounded, not a leak;
             each gateway runs 2 threads, each with its own pools). RssAnon is judged only in
             runs of MIN_MEMORY_CHECK_S or more, and reported in shorter ones
  alive      no gateway exited during the run, each exits 0 when stopped (SIGTERM), and no
             sanitizer report on their stderr
A fault's window is extended by LINGER_S after its end: a restarted engine is probed again, an
ejected one serves again after its back-off.
"""
import re
import statistics

import fleet as fleet_mod

LINGER_S = 5.0
# Memory is judged only in runs at least this long: the gateway's bounded structures (the prefix
# index above all) fill for minutes, and in 60 s RssAnon rises 15% while they do. Shorter runs
# report it.
MIN_MEMORY_CHECK_S = 300
STREAM_CUTTERS = {"kill", "stop", "garbage"}
SANITIZER = re.compile(r"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
                       r"WARNING: ThreadSanitizer|SUMMARY: UndefinedBehaviorSanitizer)")


def _faults_during(rec, windows):
    return sorted({kind for kind, begin, end in windows
                   if rec.start <= end + LINGER_S and rec.end >= begin})


def _violation(rec, faults):
    """Why `rec` breaks an invariant, or None."""
    out = rec.outcome
    if out.kind in ("ok", "disconnected"):
        return None
    if out.kind in ("hang", "unclean"):
        return f"{out.kind}: {out.detail}"
    if out.kind == "stream_error":
        if STREAM_CUTTERS & set(faults):
            return None
        return f"stream cut with no backend fault: {out.detail}"
    # A clean error before the first byte.
    status = out.status
    if status == 429:
        return None if rec.tenant == "metered" else f"429 for unlimited tenant {rec.tenant}"
    if status == 504:
        return None if "stop" in faults else f"504 with no hanging backend: {out.detail}"
    if status >= 500:
        failing = {fleet_mod.BACKEND_FAULTS[k] for k in faults if k in fleet_mod.BACKEND_FAULTS}
        if len(failing) >= fleet_mod.RETRIES + 1:
            return None
        return (f"{status} reached the client while {len(failing)} backend(s) failed "
                f"(a healthy alternative existed): {out.detail}")
    return f"{status} for a valid request: {out.detail}"


def _flat(values, label, fd_slack, judged=True):
    if len(values) < 10:
        return None, f"{label}: only {len(values)} samples after warm-up"
    k = max(2, len(values) // 5)
    first, last = statistics.median(values[:k]), statistics.median(values[-k:])
    ok = abs(last - first) <= 0.10 * first or (fd_slack and 0 <= last - first <= fd_slack)
    return (first, last), None if ok or not judged else f"{label} not flat: {first:g} -> {last:g}"


def _error_key(rec):
    out = rec.outcome
    if out.kind == "stream_error":
        msg = re.sub(r"\b(r|f)\d+\b", "rN", out.detail)
        msg = re.sub(r"\d+", "N", msg)[:70]
        return f"stream error event: {msg}"
    if out.kind == "error":
        msg = re.sub(r"\b(r|f)\d+\b", "rN", out.detail)
        msg = re.sub(r"\d+", "N", msg)[:70]
        return f"{out.status} {out.error_type}: {msg}"
    return out.kind


def judge(soak, sockets, stderr_texts, exit_codes):
    records, windows = soak.records, soak.windows
    violations = []
    by_outcome, errors = {}, {}
    worst = {}   # fault kind (or "none") -> worst latency, all requests and ok ones
    for rec in records:
        faults = _faults_during(rec, windows)
        why = _violation(rec, faults)
        if why:
            violations.append({"t": round(rec.start - soak.t0, 2), "tenant": rec.tenant,
                               "gateway": "AB"[rec.gateway], "stream": rec.stream,
                               "behaviour": rec.behaviour, "backend": rec.outcome.backend,
                               "faults": faults, "why": why})
        by_outcome[rec.outcome.kind] = by_outcome.get(rec.outcome.kind, 0) + 1
        if rec.outcome.kind not in ("ok", "disconnected"):
            key = _error_key(rec)
            errors[key] = errors.get(key, 0) + 1
        latency = rec.end - rec.start
        for kind in faults or ["none"]:
            w = worst.setdefault(kind, {"requests": 0, "worst_s": 0.0, "worst_ok_s": 0.0})
            w["requests"] += 1
            if latency > w["worst_s"]:
                w["worst_s"] = latency
                o = rec.outcome
                w["worst"] = (f"{o.kind} {o.status} {'stream' if rec.stream else 'json'} "
                              f"{rec.behaviour} via {o.backend or '-'}, first byte "
                              f"{o.first_byte_s:.2f} s{': ' + o.detail[:80] if o.detail else ''}")
            if rec.outcome.kind == "ok" and rec.behaviour != "slow_send":
                w["worst_ok_s"] = max(w["worst_ok_s"], latency)

    # Isolation probes: (alpha, alpha, beta) on one prompt, in that order.
    probes = {}
    for rec in records:
        if rec.behaviour == "probe":
            probes.setdefault(rec.probe[0], []).append(rec)
    valid = 0
    for key, recs in probes.items():
        if len(recs) != 3:
            continue
        second, beta = recs[1], recs[2]
        if beta.outcome.kind == "ok" and beta.outcome.cached_tokens > 0:
            violations.append({"t": round(beta.start - soak.t0, 2), "why":
                               f"isolation: beta saw {beta.outcome.cached_tokens} cached tokens "
                               f"of alpha's prompt {key}"})
        if second.outcome.kind == "ok" and second.outcome.cached_tokens > 0 \
                and beta.outcome.kind == "ok" and beta.outcome.cached_tokens >= 0:
            valid += 1
    if valid == 0:
        violations.append({"why": "isolation: no valid probe (alpha's repeat never hit its "
                                  "cache), so isolation was not shown"})

    # Memory and fds after the warm-up.
    warm = soak.t0 + max(8.0, 0.15 * soak.args.duration)
    flat = {}
    for i, name in enumerate("AB"):
        pts = [(t, rss, fds) for t, g, rss, fds in soak.samples if g == i and t >= warm]
        memory_judged = soak.args.duration >= MIN_MEMORY_CHECK_S
        for label, values, slack, judged in (
                (f"gateway {name} RssAnon kB", [p[1] for p in pts], 0, memory_judged),
                (f"gateway {name} open fds", [p[2] for p in pts],
                 fleet_mod.THREADS * (soak.args.clients + 2), True)):
            firstlast, why = _flat(values, label, slack, judged)
            flat[label] = firstlast
            if why:
                violations.append({"why": why})
    for t, g, code in soak.exits:
        violations.append({"t": round(t - soak.t0, 2), "why": f"gateway {'AB'[g]} exited "
                                                              f"with {code}"})
    for name, code in zip("AB", exit_codes):
        # SIGTERM drains and exits 0; a second SIGTERM after 2 s (GatewayProcess) may end it
        # by the signal. Anything else (a sanitizer's exit code, a crash) is a violation.
        if code not in (0, -15):
            violations.append({"why": f"gateway {name} exited with {code} when stopped"})
    for name, text in zip("AB", stderr_texts):
        m = SANITIZER.search(text)
        if m:
            start = max(0, m.start() - 200)
            violations.append({"why": f"gateway {name}: sanitizer report: "
                                      f"{text[start:m.start() + 800]}"})

    retries = sum(soak.retries.values())
    faults = {}
    for kind, _, _ in windows:
        faults[kind] = faults.get(kind, 0) + 1
    return {
        "duration_s": soak.args.duration,
        "replicas": soak.args.replicas,
        "clients": soak.args.clients,
        "seed": soak.args.seed,
        "requests": len(records),
        "outcomes": by_outcome,
        "errors_by_kind": dict(sorted(errors.items(), key=lambda kv: -kv[1])),
        "retries": int(retries),
        "faults_injected": faults,
        "fault_actions": [(round(t - soak.t0, 2), text) for t, text in soak.fleet.actions],
        "latency_by_fault": {k: {kk: round(vv, 3) if isinstance(vv, float) else vv
                                 for kk, vv in v.items()} for k, v in sorted(worst.items())},
        "isolation_probes": {"sent": len(probes), "valid": valid},
        "garbage_posts": soak.fleet.garbage.posts,
        "flat": flat,
        "prefix_index": [(round(t - soak.t0, 1), "AB"[g], entries, size)
                         for t, g, entries, size in soak.index_samples],
        "rss_kb": [(round(t - soak.t0, 1), "AB"[g], rss, fds) for t, g, rss, fds in soak.samples],
        "idle_sockets": {name: s for name, s in zip("AB", sockets)},
        "violations": violations,
    }


def print_report(r):
    print(f"\n== chaos soak: {r['duration_s']:.0f} s, {r['replicas']} replicas, "
          f"{r['clients']} clients, seed {r['seed']}")
    print(f"requests: {r['requests']}  outcomes: {r['outcomes']}  gateway retries: "
          f"{r['retries']}")
    print(f"faults injected: {r['faults_injected']}")
    print("errors by kind:")
    for k, v in r["errors_by_kind"].items():
        print(f"  {v:6d}  {k}")
    print("worst latency (s) of the requests each fault overlapped (all / ok, not slow_send):")
    for k, v in r["latency_by_fault"].items():
        print(f"  {k:8s} {v['requests']:6d} requests  {v['worst_s']:7.2f}  {v['worst_ok_s']:7.2f}"
              f"  ({v.get('worst', '')})")
    print(f"isolation probes: {r['isolation_probes']}; POSTs the garbage backend answered: "
          f"{r['garbage_posts']}")
    for k, v in r["flat"].items():
        print(f"  {k}: first fifth {v[0] if v else '-'}, last fifth {v[1] if v else '-'}")
    for k, v in r["idle_sockets"].items():
        print(f"  gateway {k} sockets 2 s after the traffic stopped: {v}")
    if r["violations"]:
        print(f"VIOLATIONS ({len(r['violations'])}):")
        for v in r["violations"][:40]:
            print(f"  {v}")
    else:
        print("all invariants held")


def rss_svg(soak):
    """Anonymous RSS of both gateways over time, fault windows shaded, as a standalone SVG."""
    w, h, left, right, top, bottom = 760, 320, 60, 20, 20, 40
    pts = [(t - soak.t0, g, rss / 1024) for t, g, rss, _ in soak.samples]
    if not pts:
        return '<svg xmlns="http://www.w3.org/2000/svg"/>'
    tmax = max(soak.args.duration, max(p[0] for p in pts))
    ymax = max(p[2] for p in pts) * 1.15
    x = lambda t: left + (w - left - right) * max(0.0, t) / tmax  # noqa: E731
    y = lambda v: top + (h - top - bottom) * (1 - v / ymax)  # noqa: E731
    colors = {"kill": "#f4a6a6", "stop": "#f7d08a", "slow": "#c9e4a6", "garbage": "#d6b4f0",
              "redis": "#a6d4f4", "hup": "#e0e0e0", "admin": "#f0c4e0"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for kind, begin, end in soak.windows:
        out.append(f'<rect x="{x(begin - soak.t0):.1f}" y="{top}" '
                   f'width="{max(1.0, x(end - soak.t0) - x(begin - soak.t0)):.1f}" '
                   f'height="{h - top - bottom}" fill="{colors.get(kind, "#eee")}" '
                   f'opacity="0.6"><title>{kind}</title></rect>')
    out.append(f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" '
               f'stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" '
               f'stroke="black"/>')
    for i in range(6):
        v = ymax * i / 5
        out.append(f'<text x="{left - 5}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
        t = tmax * i / 5
        out.append(f'<text x="{x(t):.1f}" y="{h - bottom + 15}" text-anchor="middle">'
                   f'{t:.0f}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 5}" text-anchor="middle">'
               f'seconds since start (shaded: fault windows)</text>')
    out.append(f'<text x="12" y="{(top + h - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 12 {(top + h - bottom) / 2})">RssAnon (MiB)</text>')
    for g, color in ((0, "#1f5fbf"), (1, "#d0461f")):
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, gg, v in pts if gg == g)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{line}"/>')
        out.append(f'<text x="{w - right - 80}" y="{top + 15 + 14 * g}" fill="{color}">'
                   f'gateway {"AB"[g]}</text>')
    legend_x = left + 10
    for kind, color in colors.items():
        out.append(f'<rect x="{legend_x}" y="{top + 4}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{legend_x + 13}" y="{top + 13}">{kind}</text>')
        legend_x += 62
    out.append("</svg>")
    return "\n".join(out) + "\n"
