# Packages: `make packages` builds target/debian/*.deb and target/generate-rpm/*.rpm.
# `make check-packages` runs lintian; `make install-test` installs, upgrades and purges the .deb on
# this machine (root; see packaging/install-test.sh); `make boot-test` installs it from a signed
# apt repository into a Debian booted under systemd and drives the unit (root, systemd-nspawn; see
# packaging/boot-test.sh). Needs cargo-deb and cargo-generate-rpm
# (`make tools`).

.PHONY: packages deb rpm build tools check-packages install-test boot-test

packages: deb rpm

build:
	cargo build --release --locked

deb: build
	cargo deb --no-build

rpm: build
	cargo generate-rpm

tools:
	cargo install --locked cargo-deb cargo-generate-rpm

check-packages: deb rpm
	lintian --fail-on error --suppress-tags no-manual-page target/debian/cuzk-appliance_*.deb
	rpm -qp --configfiles target/generate-rpm/cuzk-appliance-*.rpm | grep -qx /etc/cuzk/cuzk.toml
	rpm -qpl target/generate-rpm/cuzk-appliance-*.rpm | grep -qx /usr/lib/systemd/system/cuzk.service

install-test: deb
	packaging/install-test.sh

boot-test: deb
	packaging/boot-test.sh
