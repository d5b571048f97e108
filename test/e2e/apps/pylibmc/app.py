# An application as a team writes one with pylibmc, the Python client on libmemcached: it reads
# the connection Secret mounted at /etc/memcached, authenticates with SASL (PLAIN, over the
# binary protocol) with the Secret's username and password, sets app-key, gets it back and
# prints one line, "ok: ..." or "error: ..." (exit code 1), also to /dev/termination-log.
# With --wrong-password it sends the password with one character more, as a client holding
# stale or mistyped credentials would.
import os
import sys
import time

import pylibmc

SECRET = "/etc/memcached"


def secret(key):
    try:
        with open(os.path.join(SECRET, key)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def run(wrong_password):
    endpoint, host, port = secret("endpoint"), secret("host"), secret("port")
    username, password = secret("username"), secret("password")
    if not (endpoint and host and port and username and password):
        raise ValueError(f"the Secret at {SECRET} lacks endpoint, host, port, username or password")
    if wrong_password:
        password += "x"
    # binary=True: SASL works over memcached's binary protocol only.
    client = pylibmc.Client([f"{host}:{port}"], binary=True, username=username, password=password,
                            behaviors={"connect_timeout": 5000, "receive_timeout": 5000000, "send_timeout": 5000000})
    value = f"set at {time.time()}".encode()
    if not client.set("app-key", value):
        raise RuntimeError(f"set app-key on {endpoint}: not stored")
    got = client.get("app-key")
    if got != value:
        raise RuntimeError(f"get app-key on {endpoint}: got {got!r}, set {value!r}")
    client.disconnect_all()
    return f"ok: set and got app-key on {endpoint} (sasl) with pylibmc {pylibmc.__version__}"


def main():
    try:
        line, code = run("--wrong-password" in sys.argv[1:]), 0
    except Exception as e:  # noqa: BLE001 - every failure is the app's one line.
        line, code = f"error: {type(e).__name__}: {e}", 1
    print(line, flush=True)
    try:
        with open("/dev/termination-log", "w") as f:
            f.write(line + "\n")
    except OSError:
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
