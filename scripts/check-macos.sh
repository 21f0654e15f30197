#!/usr/bin/env bash
# Type-checks and lints ralph for macOS (aarch64-apple-darwin) from Linux,
# so code behind `cfg(target_os = "macos")` (in src/platform/) is compiled
# somewhere: the library and the binary, which hold all of it (the tests
# run on Linux, where the portable calls run too). Nothing is linked or
# run: `cargo clippy` stops before linking, so the C code of the vendored
# libgit2 and zlib is not compiled either (there is no macOS SDK here); a
# stand-in C compiler makes empty objects for their build scripts.
#
#   scripts/check-macos.sh   # installs the target with rustup once; without
#                            # the network it says NOT RUN and exits 0
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=aarch64-apple-darwin
if ! rustup target list --installed | grep -qx "$TARGET" && ! rustup target add "$TARGET"; then
    # The one step that needs the network beyond the registries: said
    # aloud, not failed, so an offline CI still tests everything else.
    echo "check-macos: NOT RUN: rustup could not install the $TARGET target" >&2
    exit 0
fi
stand_in=$(mktemp -d)
trap 'rm -rf "$stand_in"' EXIT
cat > "$stand_in/cc" <<'CC'
#!/bin/sh
# Writes an empty object wherever it is asked to write one.
out=
while [ $# -gt 0 ]; do
    case "$1" in
        -o) out=$2; shift ;;
        -o*) out=${1#-o} ;;
        -Fo*) out=${1#-Fo} ;;
    esac
    shift
done
if [ -n "$out" ]; then mkdir -p "$(dirname "$out")" && : > "$out"; fi
CC
chmod +x "$stand_in/cc"
CC_aarch64_apple_darwin="$stand_in/cc" AR_aarch64_apple_darwin=ar \
    cargo clippy --quiet --target "$TARGET" --lib --bins -- -D warnings
echo "check-macos: ralph type-checks and lints clean for $TARGET"
