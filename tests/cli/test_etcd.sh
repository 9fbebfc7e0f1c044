#!/bin/sh
# test_etcd.sh — pfi's etcd client (src/runtime/etcd.c; issue 45 part b)
# against a real etcd (Debian's etcd-server 3.4) on loopback: a cluster of
# three members, then a member with TLS and client certificates, and one
# with a tiny space quota. tests/tools/etcd_check.c drives the client.
#   - keys, old revisions, prefixes, a compaction, transactions, leases, the
#     election and the guarded term raise of docs/controller.md ("Failover
#     on etcd"): etcd_check suite;
#   - rotation: the first endpoint's member killed, the call answered by the next;
#   - linearizable reads: a member cut off from its quorum (the others
#     stopped) answers no read, and answers again once one is back;
#   - authentication: a user with a role on one prefix reads and writes it,
#     is refused another, and a wrong password is refused;
#   - TLS with client certificates; NOSPACE named as such.
. "$SRC/tests/cli/lib.sh"
. "$SRC/tests/cli/etcd_lib.sh"
C=$TOOLS/etcd_check
command -v etcdctl >/dev/null || fail "etcdctl is needed: install the Debian package etcd-client (scripts/bootstrap.sh test)"

etcd_cluster 3
"$C" "$ETCD_EPS" /pfi/t/ suite >"$T/suite.out" 2>"$T/suite.err" || { cat "$T/suite.err" >&2; fail "etcd_check suite"; }
contains "$T/suite.out" "ok: "

# ---- rotation: m1 dies; a call naming it first is answered by another member
expect_status 0 "$C" "$ETCD_EPS" /pfi/t/ put rot 1
stop_daemon "$ETCD_PID_1" KILL
expect_status 0 "$C" "$ETCD_EPS" /pfi/t/ get rot
contains "$T/out" 1
grep -q "endpoint $ETCD_EP_2\|endpoint $ETCD_EP_3" "$T/err" || fail "answered by $(cat "$T/err")"; ok

# ---- linearizable: m3 alone (m2 stopped) has no quorum and answers no read
kill -STOP "$ETCD_PID_2"
EC_TIMEOUT_S=1 expect_status 4 "$C" "$ETCD_EP_3" /pfi/t/ get rot
kill -CONT "$ETCD_PID_2"
wait_for 30 "m3 answers once m2 is back" 'EC_TIMEOUT_S=1 "$C" "$ETCD_EP_3" /pfi/t/ get rot >/dev/null 2>&1'

# ---- authentication: user pfi may read and write /pfi/a/ only
E="etcdctl --endpoints=$ETCD_EP_2,$ETCD_EP_3"
for cmd in "user add root:rootpw" "role add pfi" \
  "role grant-permission pfi --prefix=true readwrite /pfi/a/" "user add pfi:pfipw" \
  "user grant-role pfi pfi" "auth enable"; do
  $E $cmd >>"$T/etcdctl.log" 2>&1 || { cat "$T/etcdctl.log" >&2; fail "etcdctl $cmd"; }
done
EPS23=$ETCD_EP_2,$ETCD_EP_3
EC_USER=pfi EC_PASSWORD=pfipw expect_status 0 "$C" "$EPS23" /pfi/a/ put k granted
EC_USER=pfi EC_PASSWORD=pfipw expect_status 0 "$C" "$EPS23" /pfi/a/ get k
contains "$T/out" granted
EC_USER=pfi EC_PASSWORD=pfipw expect_status 4 "$C" "$EPS23" /pfi/b/ put k x
contains "$T/err" "permission denied"
EC_USER=pfi EC_PASSWORD=wrong expect_status 4 "$C" "$EPS23" /pfi/a/ get k
contains "$T/err" "authentication failed"
expect_status 4 "$C" "$EPS23" /pfi/a/ get k # no credentials
contains "$T/err" "user name is empty"
# a password is never sent over plain http to another host
EC_USER=pfi EC_PASSWORD=pfipw expect_status 2 "$C" http://192.0.2.1:2379 /pfi/a/ get k
contains "$T/err" "a password goes over https"

# ---- TLS with client certificates (one member)
P=$T/pki; mkdir -p "$P"
ossl() { openssl "$@" >>"$P/openssl.log" 2>&1 || { cat "$P/openssl.log" >&2; fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 -subj "/CN=pfi etcd test CA"
ossl req -newkey rsa:2048 -nodes -keyout "$P/srv.key" -out "$P/srv.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\n' >"$P/san.ext"
ossl x509 -req -in "$P/srv.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/srv.pem" -days 2 -extfile "$P/san.ext"
ossl req -newkey rsa:2048 -nodes -keyout "$P/cli.key" -out "$P/cli.csr" -subj "/CN=pfi-controller"
ossl x509 -req -in "$P/cli.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/cli.pem" -days 2
export EC_CA="$P/ca.pem" EC_CERT="$P/cli.pem" EC_KEY="$P/cli.key"
PFI_ETCD_NAME=tls PFI_ETCD_SCHEME=https etcd_cluster 1 --cert-file "$P/srv.pem" --key-file "$P/srv.key" \
  --client-cert-auth --trusted-ca-file "$P/ca.pem"
unset EC_CERT EC_KEY
TEP=$ETCD_EPS
EC_CERT="$P/cli.pem" EC_KEY="$P/cli.key" expect_status 0 "$C" "$TEP" /pfi/t/ suite
expect_status 4 "$C" "$TEP" /pfi/t/ get up # no client certificate
unset EC_CA
expect_status 4 "$C" "$TEP" /pfi/t/ get up # the server's certificate not trusted
contains "$T/err" "certificate"

# ---- NOSPACE: the space quota reached is named (the leader steps down on it)
PFI_ETCD_NAME=quota etcd_cluster 1 --quota-backend-bytes 1048576
QEP=$ETCD_EPS
expect_status 0 "$C" "$QEP" /pfi/t/ fill
contains "$T/out" "database space exceeded"
done_ok
