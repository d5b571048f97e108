# The real memcached for tests: Debian's package, pinned. `make test` runs memcached with the
# arguments and files the renderer gives a pod (test/memcached) and the auth proxy against it
# (authproxy), so the set-up installs it; the e2e suite's node lane (build/node.mk) builds its
# memcached image from the same package. Included from the top-level Makefile before
# build/node.mk, which reads MEMCACHED_PACKAGE.
#
#   make memcached-package   install it (as root); a no-op when the pinned version is there

MEMCACHED_PACKAGE := memcached=1.6.18-1+deb12u1

# apt_get runs apt-get with arguments $(1), one at a time on this machine: .ci/run installs make
# test's package and the node lane's side by side on a new machine, and a second apt-get fails
# at once on the lock the first holds. build/node.mk uses it too.
APT_LOCK := /var/lock/function-memcached-apt.lock
apt_get = DEBIAN_FRONTEND=noninteractive flock $(APT_LOCK) apt-get $(1)

## memcached-package: install Debian's memcached at its pinned version, as root. Its service is
# not started (policy-rc.d, when present, forbids it; the tests start their own memcached).
# Without root it only says what is missing: outside CI the tests that need memcached skip,
# under CI they fail.
.PHONY: memcached-package
memcached-package:
	@pkg="$(MEMCACHED_PACKAGE)"; name="$${pkg%%=*}"; want="$${pkg#*=}"; \
	have=$$(dpkg-query -W -f='$${Version}' "$$name" 2>/dev/null || true); \
	if [ "$$have" = "$$want" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "memcached-package: the tests need $$pkg (have: $${have:-none}); install it as root with 'sudo make memcached-package'"; exit 0; \
	fi; \
	echo "memcached-package: installing $$pkg"; \
	$(call apt_get,update -qq) && $(call apt_get,install -y -qq --no-install-recommends "$$pkg")
