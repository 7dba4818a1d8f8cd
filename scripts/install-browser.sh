#!/usr/bin/env bash
# Headless Chromium for the browser tests of the html review page (tests/test_html_browser.py),
# from the Debian/Ubuntu packages. Never fails the caller: without a browser those tests are
# skipped, and pytest's summary says why.
set -u
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    echo "install-browser: $b is already installed"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: no apt-get here; the browser tests will be skipped"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install-browser: not root and no sudo; the browser tests will be skipped"
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q chromium >/dev/null 2>&1; then
  $SUDO apt-get update -q >/dev/null 2>&1 || true
  $SUDO apt-get install -y -q chromium >/dev/null 2>&1 \
    || echo "install-browser: could not install chromium; the browser tests will be skipped"
fi
command -v chromium >/dev/null 2>&1 && echo "install-browser: $(chromium --version 2>/dev/null | head -1)"
exit 0
