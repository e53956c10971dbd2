#!/usr/bin/env bash
# The release build: an abi3 wheel tagged manylinux_2_17 (manylinux2014), which installs
# on every Linux with glibc >= 2.17 (RHEL 7 onward) and CPython >= 3.10, plus the sdist.
#
#   scripts/build-wheels.sh [OUT_DIR]        (default: dist/)
#
# maturin links with zig's glibc 2.17 sysroot (`--zig`), so the wheel does not depend on
# the build host's newer glibc; `--strip` removes the symbol table. Needs a Rust
# toolchain and, in the active Python environment, maturin and ziglang
# (pip install "maturin>=1.7,<2" ziglang). The script then checks the wheel's tag, that
# its extension is stripped, and that the sdist holds the files a build needs.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
mkdir -p "$out"
rm -f "$out"/hebnb-*.whl "$out"/hebnb-*.tar.gz

maturin build --release --strip --zig --compatibility manylinux2014 --out "$out"
maturin sdist --out "$out"

wheel=$(ls "$out"/hebnb-*.whl)
sdist=$(ls "$out"/hebnb-*.tar.gz)
case "$wheel" in
*-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl) ;;
*)
    echo "unexpected wheel tag: $wheel" >&2
    exit 1
    ;;
esac
# the sdist carries what a build needs: Cargo files, the Rust and Python sources
for member in Cargo.toml Cargo.lock pyproject.toml src/lib.rs src/python/mod.rs \
    python/hebnb/__init__.py python/hebnb/_core.pyi python/hebnb/py.typed; do
    if ! tar -tzf "$sdist" | grep -q "^hebnb-[^/]*/$member\$"; then
        echo "sdist $sdist lacks $member" >&2
        exit 1
    fi
done
# the shared object is stripped: no symbol table left
so=$(mktemp -d)
python -m zipfile -e "$wheel" "$so"
if readelf -S "$so"/hebnb/_core*.so | grep -q '\.symtab'; then
    echo "the extension in $wheel is not stripped" >&2
    exit 1
fi
rm -rf "$so"
echo "built $wheel and $sdist"
