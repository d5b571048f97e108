# The real memcached for tests and the e2e lanes: Debian bookworm's source package at a pinned
# version, built with the official image's configure flags. Debian's binary package lacks
# --enable-sasl-pwdb (SASL from a plain user:password file, MEMCACHED_SASL_PWDB), which the
# official image (memcached:1.6.x-alpine) has, so the tests and lanes build what production
# runs. `make test` runs it with the arguments and files the renderer gives a pod
# (test/memcached) and the auth proxy against it (authproxy); the node lanes' memcached image is
# built from it (build/node.mk, test/e2e/internal/images). Included from the top-level Makefile;
# build/node.mk uses its apt_get.
#
#   make bin/memcached          build it, once: up to date while the pins below are unchanged
#   make memcached-build-deps   install (as root) the Debian packages the build needs

# The source package, and the sha256 of its .dsc, which lists the sha256 of its tarballs: the
# .dsc pins the source's content whatever the archive serves.
MEMCACHED_SOURCE_VERSION := 1.6.18-1+deb12u1
MEMCACHED_DSC_SHA256 := 47fe5c96717c0282676155dc144f9524d471097b656f67637f2629c66b8a633a
# Exactly the official image's (docker-library/memcached, 1/alpine/Dockerfile).
MEMCACHED_CONFIGURE_FLAGS := --enable-sasl --enable-sasl-pwdb --enable-tls --enable-extstore
# What the build needs, pinned: the libraries' headers (their exact runtime libraries come with
# them), Cyrus SASL's mechanism plugins (PLAIN, which Cyrus loads at run time and the lanes'
# image holds), pkg-config (configure finds OpenSSL with it), the compiler and libc headers,
# patch and xz. The libraries move with Debian's security updates: bump them together.
MEMCACHED_BUILD_PACKAGES := \
	libevent-dev=2.1.12-stable-8+deb12u1 \
	libsasl2-dev=2.1.28+dfsg-10+deb12u1 \
	libsasl2-modules=2.1.28+dfsg-10+deb12u1 \
	libssl-dev=3.0.22-1~deb12u2 \
	pkg-config=1.8.1-1 \
	gcc=4:12.2.0-3 \
	libc6-dev=2.36-9+deb12u14 \
	patch=2.7.6-7 \
	xz-utils=5.4.1-1+deb12u2
# The deb stanzas of this file, as deb-src, are where the source package is fetched from (the
# version above is in bookworm-security).
MEMCACHED_APT_SOURCES ?= /etc/apt/sources.list.d/debian.sources

# What make test and make monitoring-test pass the tests as MEMCACHED_BIN (absolute: each test
# runs in its package's directory).
MEMCACHED_BIN := $(abspath $(BIN)/memcached)
# Named after the pins (a new name when the version, the source or the flags change), so that
# bin/memcached is up to date while they are unchanged and rebuilt when one changes.
MEMCACHED_STAMP := $(BIN)/.memcached-$(MEMCACHED_SOURCE_VERSION)-$(shell printf '%s' '$(MEMCACHED_DSC_SHA256) $(MEMCACHED_CONFIGURE_FLAGS)' | sha256sum | cut -c1-12)

# apt_get runs apt-get with arguments $(1), one at a time on this machine: .ci/run installs make
# test's packages and the node lane's side by side on a new machine, and a second apt-get fails
# at once on the lock the first holds. build/node.mk uses it too.
APT_LOCK := /var/lock/function-memcached-apt.lock
apt_get = DEBIAN_FRONTEND=noninteractive flock $(APT_LOCK) apt-get $(1)

# missing_packages prints (space-first) those of the pins $(1), name=version, not installed at
# exactly that version.
missing_packages = for p in $(1); do \
	have=$$(dpkg-query -W -f='$${Status} $${Version}' "$${p%%=*}" 2>/dev/null || true); \
	[ "$$have" = "install ok installed $${p\#*=}" ] || printf ' %s' "$$p"; done

## memcached-build-deps: install the build's Debian packages at their pinned versions, as root;
# a no-op when they are. Without root it only says what is missing: bin/memcached is then not
# built, and outside CI the tests that need it skip; under CI they fail.
.PHONY: memcached-build-deps
memcached-build-deps:
	@missing=$$($(call missing_packages,$(MEMCACHED_BUILD_PACKAGES))); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "memcached-build-deps: building bin/memcached needs$$missing; install them as root with 'sudo make memcached-build-deps'"; exit 0; \
	fi; \
	echo "memcached-build-deps: installing$$missing"; \
	$(call apt_get,update -qq) && $(call apt_get,install -y -qq --no-install-recommends $$missing)

$(MEMCACHED_STAMP): | $(BIN)
	@rm -f $(BIN)/.memcached-*; touch $@

## bin/memcached: memcached from Debian's source package, configured as the official image is.
# In a scratch directory, bin/memcached-build, removed once the binary is in place. apt works
# from a deb-src list, lists and cache of its own (the system's apt state is neither read nor
# written, so no apt lock is needed; it downloads as root, as _apt may not write there) and
# checks the .dsc and tarballs against the Sources index of the Release file it verified; the
# .dsc must have the pinned sha256, each tarball the sha256 the .dsc lists (the .dsc's own
# OpenPGP signature is not checked: that needs debian-keyring). Every patch of
# debian/patches/series is applied, in order, with no fuzz; one that does not apply fails the
# build. All nine of 1.6.18-1+deb12u1 apply: 0001-0003, 0005, 0006 touch only the init and
# systemd scripts (not built); 0007 an uninitialized variable (logger.c); 0008 makes the
# password file's check constant-time (sasl_defs.c, the --enable-sasl-pwdb path); 0009 and
# CVE-2023-46853 the proxy, which this build leaves out as the official one does. Then
# configure and `make memcached` only, not its tests (about half a minute on two busy cores:
# docs/performance.md), under a lock, so that two makes never share the scratch directory.
MEMCACHED_SCRATCH := $(BIN)/memcached-build
$(BIN)/memcached: $(MEMCACHED_STAMP) | memcached-build-deps $(BIN)
	@missing=$$($(call missing_packages,$(MEMCACHED_BUILD_PACKAGES))); \
	if [ -n "$$missing" ]; then echo "bin/memcached: not built: it needs$$missing (sudo make memcached-build-deps)"; exit 0; fi; \
	exec 9>$(BIN)/.memcached.lock; flock 9; \
	if [ -e $@ ] && [ $@ -nt $(MEMCACHED_STAMP) ]; then exit 0; fi; \
	echo "building memcached $(MEMCACHED_SOURCE_VERSION) from Debian's source package (first time only; how long: docs/performance.md)"; \
	start=$$(date +%s); s=$(MEMCACHED_SCRATCH); rm -rf $$s; mkdir -p $$s/apt/lists/partial $$s/apt/cache $$s/dl $$s/src; \
	sed 's/^Types: deb$$/Types: deb-src/' $(MEMCACHED_APT_SOURCES) > $$s/apt/debian.sources; \
	grep -q '^Types: deb-src' $$s/apt/debian.sources || { echo "bin/memcached: no deb stanza in $(MEMCACHED_APT_SOURCES) to fetch the source from"; exit 1; }; \
	apt="apt-get -q -o Dir::Etc::sourcelist=$$s/apt/debian.sources -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$$s/apt/lists -o Dir::Cache=$$s/apt/cache -o APT::Sandbox::User=root"; \
	$$apt update >$$s/apt.log 2>&1 || { cat $$s/apt.log; exit 1; }; \
	(cd $$s/dl && $$apt source --download-only memcached=$(MEMCACHED_SOURCE_VERSION)) >>$$s/apt.log 2>&1 || { cat $$s/apt.log; exit 1; }; \
	dsc=$$s/dl/memcached_$(MEMCACHED_SOURCE_VERSION).dsc; \
	echo "$(MEMCACHED_DSC_SHA256)  $$dsc" | sha256sum -c --quiet - || { echo "bin/memcached: $$dsc is not the pinned one"; exit 1; }; \
	tarballs=$$(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF == 3 { print $$3 }' $$dsc); \
	[ "$$(echo $$tarballs | wc -w)" = 2 ] || { echo "bin/memcached: want two tarballs in $$dsc, found: $$tarballs"; exit 1; }; \
	awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF == 3 { print $$1 "  " $$3 }' $$dsc | (cd $$s/dl && sha256sum -c --quiet -) || \
		{ echo "bin/memcached: a tarball does not match $$dsc"; exit 1; }; \
	tar -xf $$s/dl/memcached_*.orig.tar.* -C $$s/src --strip-components=1; \
	tar -xf $$s/dl/memcached_$(MEMCACHED_SOURCE_VERSION).debian.tar.* -C $$s/src; \
	for p in $$(grep -v '^\s*\(#\|$$\)' $$s/src/debian/patches/series); do \
		patch -d $$s/src -p1 -s -F0 -N --no-backup-if-mismatch < $$s/src/debian/patches/$$p || { echo "bin/memcached: Debian's patch $$p does not apply"; exit 1; }; \
	done; \
	(cd $$s/src && ./configure $(MEMCACHED_CONFIGURE_FLAGS) && MAKEFLAGS= make -j2 memcached) >$$s/build.log 2>&1 || \
		{ tail -50 $$s/build.log; echo "bin/memcached: the build failed (all of it: $$s/build.log)"; exit 1; }; \
	install -m 0755 $$s/src/memcached $@.tmp && mv $@.tmp $@; \
	rm -rf $$s; \
	echo "bin/memcached: $$($@ -V) built in $$(( $$(date +%s) - start ))s"

# `make bin/memcached` from the repository root: BIN is absolute, and make does not take the two
# for one file.
ifneq ($(BIN),bin)
.PHONY: bin/memcached
bin/memcached: $(BIN)/memcached
endif
