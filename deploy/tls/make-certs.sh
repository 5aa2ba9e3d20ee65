#!/bin/sh
# Throwaway PKI for trying TLS locally (not for production): a CA, a server certificate for
# localhost/127.0.0.1 (the gateway's listener and the engines), and a client certificate (the
# gateway's towards the engines, and curl's towards the gateway when client_ca_file is set).
#
#   deploy/tls/make-certs.sh [DIR]            # default DIR: /tmp/warmroute-tls
#   warmroute engine --replicas 4 --port 8001 --profile tiny \
#     --tls-cert /tmp/warmroute-tls/server.pem --tls-key /tmp/warmroute-tls/server.key \
#     --tls-client-ca /tmp/warmroute-tls/ca.pem &
#   warmroute serve --config deploy/tls/warmroute-tls.yaml
#   curl --noproxy '*' --cacert /tmp/warmroute-tls/ca.pem https://127.0.0.1:8443/v1/models
set -eu
dir=${1:-/tmp/warmroute-tls}
mkdir -p "$dir"
cd "$dir"
ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.pem -days 30 -subj "/CN=warmroute local CA" 2>/dev/null
leaf() {  # name, extensions
  printf '%s\n' "$2" > "$1.ext"
  openssl req $ec -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" \
    -days 30 -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
leaf server "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client "extendedKeyUsage=clientAuth"
echo "certificates in $dir: ca.pem, server.pem/.key, client.pem/.key"
