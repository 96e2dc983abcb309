# Sourced by the load scripts after they cd to the repository: their clients
# (wrk, curl, python) offer the TLS 1.3 cipher suites in the order
# kube-scheduler and kube-apiserver (Go) offer them, AES-128-GCM first
# (scripts/go-client-tls.cnf), so a request costs what it costs when they
# call. CLIENT_TLS=openssl keeps OpenSSL's own order (AES-256-GCM first),
# the default of wrk, curl and python.
case ${CLIENT_TLS:-go} in
    go) export OPENSSL_CONF="$PWD/scripts/go-client-tls.cnf" ;;
    openssl) ;;
    *) echo "CLIENT_TLS must be go or openssl, not ${CLIENT_TLS}" >&2; exit 2 ;;
esac
