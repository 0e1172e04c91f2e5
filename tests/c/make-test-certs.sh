#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Generates throw-away TLS certificates for the TLS tests (a CA, server, client, expired and
# "other CA" certificates) with the openssl CLI, so that no private key is ever committed.
#
#   make-test-certs.sh DIR                 write the files into DIR (created if missing)
#   make-test-certs.sh [DIR] -- CMD ARGS   then run CMD with REDLOCK_TEST_CERTS=DIR, an argument
#                                          {} replaced by DIR; without DIR, a temporary directory
#                                          is used and removed afterwards. Exits with CMD's status.
#
# Files: ca.crt ca.key, server.crt server.key (SAN localhost, 127.0.0.1, ::1), client.crt
# client.key (clientAuth), expired.crt expired.key (same SAN, validity in 2020), other-ca.crt
# (a CA that signed none of these), cadir/ (ca.crt under its hash name, for a CA directory).
# Elliptic-curve keys: generating them takes milliseconds.
set -eu

dir=
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  dir=$1
  shift
fi
run=0
if [ $# -gt 0 ]; then
  [ "$1" = "--" ] || { echo "usage: $0 [DIR] [-- CMD ARGS...]" >&2; exit 2; }
  shift
  [ $# -gt 0 ] || { echo "usage: $0 [DIR] [-- CMD ARGS...]" >&2; exit 2; }
  run=1
fi
temp=0
if [ -z "$dir" ]; then
  [ $run -eq 1 ] || { echo "usage: $0 DIR, or $0 -- CMD ARGS..." >&2; exit 2; }
  dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-certs.XXXXXX")
  temp=1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
command -v openssl >/dev/null 2>&1 || { echo "$0: the openssl command is needed" >&2; exit 1; }

umask 077
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # NAME SUBJECT
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 30 -subj "$2" -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
ca ca "/CN=redlock test CA"
ca other-ca "/CN=redlock other test CA"
rm -f other-ca.key

cat > ext.cnf <<'EOF'
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
EOF
leaf() { # NAME SUBJECT EXTENSIONS
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 30 \
    -extfile ext.cnf -extensions "$3" -out "$1.crt" 2>/dev/null
}
leaf server "/CN=localhost" server
leaf client "/CN=redlock-test-client" client

# An expired server certificate: `openssl x509` cannot date a certificate in the past, `openssl ca` can.
mkdir -p ca-db
: > ca-db/index.txt
echo 1000 > ca-db/serial
cat > ca.cnf <<'EOF'
[ca]
default_ca = test_ca
[test_ca]
dir = ca-db
database = $dir/index.txt
new_certs_dir = $dir
serial = $dir/serial
default_md = sha256
policy = any
[any]
commonName = supplied
EOF
key expired.key
openssl req -new -key expired.key -subj "/CN=localhost" -out expired.csr
openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key -in expired.csr -out expired.crt \
  -startdate 20200101000000Z -enddate 20200201000000Z -extfile ext.cnf -extensions server 2>/dev/null
rm -rf ca-db ca.cnf ext.cnf ./*.csr ca.srl
mkdir -p cadir
cp ca.crt "cadir/$(openssl x509 -hash -noout -in ca.crt).0"
chmod 644 ./*.crt  # keys stay private (umask 077)

if [ $run -eq 0 ]; then
  exit 0
fi
export REDLOCK_TEST_CERTS="$dir"
n=$#
while [ "$n" -gt 0 ]; do
  a=$1
  shift
  [ "$a" = "{}" ] && a=$dir
  set -- "$@" "$a"
  n=$((n - 1))
done
status=0
"$@" || status=$?
if [ $temp -eq 1 ]; then
  rm -rf "$dir"
fi
exit $status
