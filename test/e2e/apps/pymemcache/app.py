# An application as a team writes one with pymemcache, the Python memcached client: it reads
# the connection Secret mounted at /etc/memcached, sets app-key, gets it back and prints one
# line, "ok: ..." or "error: ..." (exit code 1), also to /dev/termination-log.
# With tls "true" it verifies the server against ca.crt for host and, when the Secret holds a
# client certificate (tls.crt, tls.key: the ClientCertificate mode), presents it; with
# --no-client-certificate it leaves it out, as an application without it would connect.
# pymemcache speaks no text-protocol authentication: with a username in the Secret (the
# Password mode) the app sends no credentials and tries its set anyway, so that the server's
# refusal shows.
import os
import ssl
import sys
import time

import pymemcache
from pymemcache.client.base import Client

SECRET = "/etc/memcached"


def secret(key):
    try:
        with open(os.path.join(SECRET, key)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def run(client_certificate):
    endpoint, host, port = secret("endpoint"), secret("host"), secret("port")
    if not (endpoint and host and port):
        raise ValueError(f"the Secret at {SECRET} lacks endpoint, host or port")
    tls = secret("tls") == "true"
    mode = "tls" if tls else "plain"
    # pymemcache wraps the socket with server_hostname=host: the certificate is checked for host.
    context = ssl.create_default_context(cafile=os.path.join(SECRET, "ca.crt")) if tls else None
    if tls and client_certificate and secret("tls.crt"):
        context.load_cert_chain(os.path.join(SECRET, "tls.crt"), os.path.join(SECRET, "tls.key"))
        mode += "+client-certificate"
    if secret("username"):
        mode += "+auth"
    client = Client((host, int(port)), connect_timeout=5, timeout=5, tls_context=context)
    value = f"set at {time.time()}".encode()
    if not client.set("app-key", value, noreply=False):
        raise RuntimeError(f"set app-key on {endpoint}: not stored")
    got = client.get("app-key")
    if got != value:
        raise RuntimeError(f"get app-key on {endpoint}: got {got!r}, set {value!r}")
    client.close()
    return f"ok: set and got app-key on {endpoint} ({mode}) with pymemcache {pymemcache.__version__}"


def main():
    try:
        line, code = run("--no-client-certificate" not in sys.argv[1:]), 0
    except Exception as e:  # noqa: BLE001 - every failure is the app's one line.
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        line, code = f"error: {type(e).__name__}: {detail}", 1
    print(line, flush=True)
    try:
        with open("/dev/termination-log", "w") as f:
            f.write(line + "\n")
    except OSError:
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
