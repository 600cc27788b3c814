#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the browser tests, installing
# it with apt-get when it is missing (as root; otherwise says what to run).
set -euo pipefail

bin=/usr/bin/chromium
if [ -x "$bin" ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-chromium: $bin is missing and there is no apt-get to install it; install Chromium so that $bin exists" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		echo "ensure-chromium: $bin is missing; run as root: apt-get update && apt-get install -y chromium" >&2
		exit 1
	fi
fi
echo "ensure-chromium: installing chromium with apt-get" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
if [ ! -x "$bin" ]; then
	echo "ensure-chromium: apt-get finished but $bin is still missing" >&2
	exit 1
fi
