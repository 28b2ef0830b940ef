#!/usr/bin/env bash
# Installs gpushare on a cluster WITHOUT cert-manager (with cert-manager, `kubectl apply -k deploy/`
# does all of this by itself). Needs bash, openssl (1.1.1 or later) and kubectl with rights to
# create Secrets in gpushare-system and to patch the two webhook configurations.
#
#   deploy/bootstrap-tls.sh            # first install, and again to renew the serving certificate
#   deploy/bootstrap-tls.sh my-gpushare/   # the same with your kustomize overlay of deploy/ (its
#                                          # PostgreSQL URL, image names, reservation) applied
#
# 1. A private CA, kept in the Secret gpushare-ca (created once, reused on every later run, so the
#    webhooks' caBundle stays valid while members restart one by one).
# 2. A serving certificate for gpushare.gpushare-system.svc signed by it, PKCS#8 key, in the Secret
#    gpushare-webhook-tls (tls.crt, tls.key, ca.crt) that the DaemonSet mounts.
# 3. The members' certificate for cluster remoting (mutual TLS, CN gpushare-cluster), signed by
#    the same CA, in the Secret gpushare-cluster-tls (tls.crt, tls.key, ca.crt).
# 4. Everything in deploy/ (or in the overlay given) except the cert-manager objects, applied.
# 5. caBundle patched into both webhook configurations.
# On a renewal nothing restarts: the kubelet refreshes the mounted Secret and the members re-read
# tls.crt and tls.key when they change; the CA, and so the caBundle, stay the same.
set -euo pipefail

DEPLOY="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if (($# > 1)); then
  echo "bootstrap-tls.sh: at most one argument, the kustomization to apply (default: $DEPLOY)" >&2
  exit 64
fi
KUSTOMIZATION="${1:-$DEPLOY}"
if [[ ! -f "$KUSTOMIZATION/kustomization.yaml" && ! -f "$KUSTOMIZATION/kustomization.yml" &&
      ! -f "$KUSTOMIZATION/Kustomization" ]]; then
  echo "bootstrap-tls.sh: '$KUSTOMIZATION' is not a kustomization directory (no kustomization.yaml);" \
    "give deploy/ or an overlay of it" >&2
  exit 64
fi
KUSTOMIZATION="$(cd "$KUSTOMIZATION" && pwd)"
NS=gpushare-system
SVC=gpushare
CA_SECRET=gpushare-ca
TLS_SECRET=gpushare-webhook-tls
CLUSTER_SECRET=gpushare-cluster-tls
WEBHOOK=gpushare
CA_DAYS="${CA_DAYS:-3650}"
DAYS="${DAYS:-365}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

kubectl apply -f "$DEPLOY/namespace.yaml"

if kubectl -n "$NS" get secret "$CA_SECRET" >/dev/null 2>&1; then
  echo "reusing the CA in secret $NS/$CA_SECRET"
  kubectl -n "$NS" get secret "$CA_SECRET" -o 'jsonpath={.data.tls\.crt}' | base64 -d >ca.crt
  kubectl -n "$NS" get secret "$CA_SECRET" -o 'jsonpath={.data.tls\.key}' | base64 -d >ca.key
else
  echo "creating a CA in secret $NS/$CA_SECRET"
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days "$CA_DAYS" \
    -subj "/CN=gpushare-webhook-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.crt 2>/dev/null
  kubectl -n "$NS" create secret tls "$CA_SECRET" --cert=ca.crt --key=ca.key
fi

# genpkey writes PKCS#8 ("BEGIN PRIVATE KEY"), the encoding the launcher reads.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out tls.key 2>/dev/null
openssl req -new -key tls.key -subj "/CN=$SVC.$NS.svc" -out tls.csr
cat >ext.cnf <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$SVC.$NS.svc,DNS:$SVC.$NS.svc.cluster.local
EXT
openssl x509 -req -sha256 -days "$DAYS" -in tls.csr -CA ca.crt -CAkey ca.key \
  -set_serial "0x$(openssl rand -hex 16)" -extfile ext.cnf -out tls.crt 2>/dev/null
openssl verify -CAfile ca.crt tls.crt >/dev/null

kubectl -n "$NS" create secret generic "$TLS_SECRET" --type=kubernetes.io/tls \
  --from-file=tls.crt --from-file=tls.key --from-file=ca.crt \
  --dry-run=client -o yaml | kubectl apply -f -

# The members' remoting certificate: client and server auth, the same subject for every member.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out cluster.key 2>/dev/null
openssl req -new -key cluster.key -subj "/CN=gpushare-cluster" -out cluster.csr
cat >cluster.cnf <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:gpushare-cluster
EXT
openssl x509 -req -sha256 -days "$DAYS" -in cluster.csr -CA ca.crt -CAkey ca.key \
  -set_serial "0x$(openssl rand -hex 16)" -extfile cluster.cnf -out cluster.crt 2>/dev/null
openssl verify -CAfile ca.crt cluster.crt >/dev/null
kubectl -n "$NS" create secret generic "$CLUSTER_SECRET" --type=kubernetes.io/tls \
  --from-file=tls.crt=cluster.crt --from-file=tls.key=cluster.key --from-file=ca.crt \
  --dry-run=client -o yaml | kubectl apply -f -

# The kustomization minus every cert-manager.io document (their kinds are unknown here).
kubectl kustomize "$KUSTOMIZATION" | awk '
  function flush() {
    if (doc != "" && doc !~ /(^|\n)apiVersion: cert-manager\.io\//) printf "%s---\n", doc
    doc = ""
  }
  /^---$/ { flush(); next }
  { doc = doc $0 "\n" }
  END { flush() }
' | kubectl apply -f -

ca_bundle="$(base64 <ca.crt | tr -d '\n')"
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  kubectl patch "$kind" "$WEBHOOK" --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$ca_bundle\"}]"
done
echo "gpushare installed without cert-manager; serving certificate valid for $DAYS days"
