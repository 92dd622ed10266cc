#!/usr/bin/env bash
# Builds parsec-net and installs it for C and C++ programs under a prefix: the headers, the shared
# and static libraries, every packet backend that was built, the parsecnet program, and the
# pkg-config and CMake files that let a build find them. docs/packaging.md describes the layout.
#
# Usage: tools/install.sh [--prefix DIR] [--release|--debug] [--no-build] [--no-rpath]
#   --prefix DIR  where to install (default /usr/local); made absolute if relative
#   --release     build and install the release profile (the default): target/release
#   --debug       build and install the debug profile: target/debug
#   --no-build    do not run cargo build; install what is already in target/<profile>/ (and its
#                 deps/, taking the newer file where both have one, as the ffi-tests harness does)
#   --no-rpath    leave -Wl,-rpath out of parsec-net.pc (it is left out anyway for --prefix /usr)
# Environment: DESTDIR (staged install: files go to $DESTDIR$PREFIX, the metadata names $PREFIX),
# CARGO_TARGET_DIR (where cargo builds, default ./target), CARGO, RUSTC.
#
# Installing again over the same prefix replaces every file (each is written under a temporary
# name and renamed into place, so running programs keep their old copy), and removes files an
# earlier install made that this one does not (the list is PREFIX/lib/parsec-net/install-manifest.txt).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
packaging="$repo/tools/packaging"

die() {
  echo "install.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

prefix=/usr/local
profile=release
build=1
rpath=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix)
      [ $# -ge 2 ] && [ -n "$2" ] || die "--prefix needs a directory"
      prefix=$2
      shift 2
      ;;
    --prefix=*)
      prefix=${1#--prefix=}
      [ -n "$prefix" ] || die "--prefix needs a directory"
      shift
      ;;
    --release) profile=release; shift ;;
    --debug) profile=debug; shift ;;
    --no-build) build=0; shift ;;
    --no-rpath) rpath=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see tools/install.sh --help)" ;;
  esac
done

# An absolute prefix without trailing slashes (not resolved through symlinks: it is what the
# user asked for, and what goes into the metadata).
case "$prefix" in
  /*) ;;
  *) prefix="$PWD/$prefix" ;;
esac
while [ "${#prefix}" -gt 1 ] && [ "${prefix%/}" != "$prefix" ]; do prefix=${prefix%/}; done
case "$prefix" in
  *[[:space:]\"\'\$\\@\&\|]*) die "the prefix '$prefix' contains a space, a quote or one of \$ \\ @ & |" ;;
esac
destdir=${DESTDIR:-}
root="$destdir$prefix"

cargo=${CARGO:-cargo}
target_dir=${CARGO_TARGET_DIR:-$repo/target}
case "$target_dir" in
  /*) ;;
  *) target_dir="$repo/$target_dir" ;;
esac
profile_dir="$target_dir/$profile"

# The workspace version: `version = "..."` in [workspace.package] of the top Cargo.toml.
version=$(awk '
  /^\[workspace\.package\]/ { inside = 1; next }
  /^\[/ { inside = 0 }
  inside && /^version[[:space:]]*=/ { sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }
' "$repo/Cargo.toml")
[ -n "$version" ] || die "no version in [workspace.package] of $repo/Cargo.toml"

if [ "$build" -eq 1 ]; then
  command -v "$cargo" >/dev/null 2>&1 || die "cargo not found (install a Rust toolchain, or use --no-build)"
  echo "install.sh: building the workspace ($profile)"
  profile_flag=()
  [ "$profile" = release ] && profile_flag=(--release)
  (cd "$repo" && "$cargo" build --workspace "${profile_flag[@]}") || die "cargo build failed"
fi

# The newer of target/<profile>/FILE and target/<profile>/deps/FILE (cargo leaves the copy of a
# library built only as a dependency in deps/), or nothing.
artifact() {
  local top="$profile_dir/$1" dep="$profile_dir/deps/$1"
  if [ -f "$top" ] && { [ ! -f "$dep" ] || [ ! "$dep" -nt "$top" ]; }; then
    echo "$top"
  elif [ -f "$dep" ]; then
    echo "$dep"
  fi
}

need_artifact() {
  local found
  found=$(artifact "$1")
  [ -n "$found" ] || die "$1 not found in $profile_dir or its deps/: build it first with \`cargo build --workspace$([ "$profile" = release ] && echo ' --release')\` (or run install.sh without --no-build)"
  echo "$found"
}

shared_lib=$(need_artifact libparsec_net.so)
static_lib=$(need_artifact libparsec_net.a)
program="$profile_dir/parsecnet"
[ -f "$program" ] || die "$program not found: build it first with \`cargo build --workspace$([ "$profile" = release ] && echo ' --release')\` (or run install.sh without --no-build)"
for header in parsec_net.h parsec_net_backend.h; do
  [ -f "$repo/include/$header" ] || die "$repo/include/$header not found"
done

# Every packet backend built into the profile directory or its deps/.
backends=()
while IFS= read -r name; do
  [ -n "$name" ] && backends+=("$(artifact "$name")")
done < <(
  for file in "$profile_dir"/libparsec_backend_*.so "$profile_dir"/deps/libparsec_backend_*.so; do
    if [ -f "$file" ]; then basename "$file"; fi
  done | sort -u
)
[ ${#backends[@]} -gt 0 ] || die "no packet backend (libparsec_backend_*.so) in $profile_dir or its deps/"

# What a program linking libparsec_net.a needs besides it: rustc's own answer for a static library
# built for this target, asked of an empty crate (instant, and no rebuild of parsec-net with other
# flags). parsec-net's dependencies link only libraries the standard library links too (libloading
# adds -ldl), so this is the set `cargo rustc -p parsec-net --lib -- --print native-static-libs`
# reports; the static-link tests in ffi-tests/tests/install_consumers.rs fail if a dependency ever
# adds one. Without rustc, the list rustc gives on Linux with glibc.
native_static_libs() {
  local rustc=${RUSTC:-rustc} work out libs=""
  if command -v "$rustc" >/dev/null 2>&1; then
    work=$(mktemp -d)
    : >"$work/probe.rs"
    if out=$(cd "$repo" && "$rustc" --crate-type=staticlib --crate-name=parsec_net_probe \
      --print=native-static-libs -o "$work/libprobe.a" "$work/probe.rs" 2>&1); then
      libs=$(printf '%s\n' "$out" | sed -n 's/^.*native-static-libs: *//p' | tail -n 1)
    fi
    rm -rf "$work"
  fi
  [ -n "$libs" ] || libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
  echo "$libs"
}
static_libs=$(native_static_libs)
# The same as a CMake list of library names: -lfoo -lbar -> foo;bar (anything else kept as is).
# shellcheck disable=SC2086 # split into words on purpose
static_libs_cmake=$(printf '%s\n' $static_libs | sed 's/^-l//' | paste -sd';' -)

# The shared library's SONAME, if it has one. Then it is installed as libparsec_net.so.VERSION
# with the links SONAME -> it and libparsec_net.so -> SONAME; without one (cargo does not set
# it), as the plain libparsec_net.so that programs then record by that name.
soname=""
if command -v readelf >/dev/null 2>&1; then
  soname=$(readelf -d "$shared_lib" 2>/dev/null | sed -n 's/^.*(SONAME).*\[\(.*\)\]$/\1/p')
elif command -v objdump >/dev/null 2>&1; then
  soname=$(objdump -p "$shared_lib" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
fi
if [ -n "$soname" ] && [ "$soname" != libparsec_net.so ]; then
  shared_file="libparsec_net.so.$version"
  soname_property="IMPORTED_SONAME \"$soname\""
else
  soname=""
  shared_file="libparsec_net.so"
  soname_property="IMPORTED_NO_SONAME TRUE"
fi

# 4 or 8, from the ELF class of the library (byte 5: 1 = 32-bit, 2 = 64-bit).
case "$(od -An -tu1 -j4 -N1 "$shared_lib" | tr -d ' ')" in
  1) sizeof_void_p=4 ;;
  2) sizeof_void_p=8 ;;
  *) die "$shared_lib is not an ELF library" ;;
esac

rpath_flags=' -Wl,-rpath,${libdir}'
if [ "$rpath" -eq 0 ] || [ "$prefix" = /usr ]; then
  rpath_flags=""
fi

# ---- installing --------------------------------------------------------------------------------

installed=()   # every path this install made, relative to the prefix

make_dir() {
  mkdir -p "$root/$1" || die "cannot create $root/$1"
}

# put MODE SOURCE RELATIVE-DEST: copy under a temporary name, then rename into place.
put() {
  local mode=$1 source=$2 dest="$root/$3" temporary
  temporary="$(dirname "$dest")/.$(basename "$dest").tmp.$$"
  install -m "$mode" "$source" "$temporary" || die "cannot write $temporary"
  mv -f "$temporary" "$dest" || die "cannot rename $temporary to $dest"
  installed+=("$3")
}

# link TARGET RELATIVE-DEST: a symbolic link, replaced if it exists.
link() {
  local dest="$root/$2" temporary
  temporary="$(dirname "$dest")/.$(basename "$dest").tmp.$$"
  ln -sfn "$1" "$temporary" || die "cannot create the link $temporary"
  mv -fT "$temporary" "$dest" || die "cannot rename $temporary to $dest"
  installed+=("$2")
}

# fill TEMPLATE RELATIVE-DEST: a file of tools/packaging/ with its @NAME@ placeholders replaced.
fill() {
  local template="$packaging/$1" filled
  [ -f "$template" ] || die "$template not found"
  filled=$(mktemp)
  sed -e "s|@PREFIX@|$prefix|g" \
    -e "s|@VERSION@|$version|g" \
    -e "s|@RPATH_FLAGS@|$rpath_flags|g" \
    -e "s|@NATIVE_STATIC_LIBS@|$static_libs|g" \
    -e "s|@NATIVE_STATIC_LIBS_CMAKE@|$static_libs_cmake|g" \
    -e "s|@SHARED_LIBRARY_FILE@|$shared_file|g" \
    -e "s|@SONAME_PROPERTY@|$soname_property|g" \
    -e "s|@SIZEOF_VOID_P@|$sizeof_void_p|g" \
    "$template" >"$filled"
  if grep -q '@[A-Z_]*@' "$filled"; then
    rm -f "$filled"
    die "$template has a placeholder install.sh does not fill: $(grep -o '@[A-Z_]*@' "$template" | sort -u | tr '\n' ' ')"
  fi
  put 0644 "$filled" "$2"
  rm -f "$filled"
}

echo "install.sh: installing parsec-net $version ($profile) into $root"
for dir in include/parsec-net lib/pkgconfig lib/cmake/ParsecNet lib/parsec-net bin; do
  make_dir "$dir"
done

put 0644 "$repo/include/parsec_net.h" include/parsec-net/parsec_net.h
put 0644 "$repo/include/parsec_net_backend.h" include/parsec-net/parsec_net_backend.h

put 0644 "$static_lib" lib/libparsec_net.a
put 0755 "$shared_lib" "lib/$shared_file"
if [ -n "$soname" ]; then
  [ "$soname" = "$shared_file" ] || link "$shared_file" "lib/$soname"
  link "$soname" lib/libparsec_net.so
fi

# The backends beside libparsec_net.so (where a program linked with it looks first), and a copy in
# lib/parsec-net/ beside the parsecnet program (which has the core linked in, so it looks beside
# its own executable) and for statically linked games (PARSEC_NET_BACKEND_PATH).
for backend in "${backends[@]}"; do
  name=$(basename "$backend")
  put 0755 "$backend" "lib/$name"
  put 0755 "$backend" "lib/parsec-net/$name"
done
put 0755 "$program" lib/parsec-net/parsecnet
link ../lib/parsec-net/parsecnet bin/parsecnet

fill parsec-net.pc.in lib/pkgconfig/parsec-net.pc
fill parsec-net-static.pc.in lib/pkgconfig/parsec-net-static.pc
fill ParsecNetConfig.cmake.in lib/cmake/ParsecNet/ParsecNetConfig.cmake
fill ParsecNetConfigVersion.cmake.in lib/cmake/ParsecNet/ParsecNetConfigVersion.cmake

# Remove what an earlier install made and this one did not (say, a backend no longer built).
# Only names parsec-net installs are ever removed, whatever the old manifest says.
manifest=lib/parsec-net/install-manifest.txt
if [ -f "$root/$manifest" ]; then
  while IFS= read -r old; do
    case "$old" in
      *..* | /*) continue ;;
      include/parsec-net/* | lib/libparsec_* | lib/parsec-net/* | lib/pkgconfig/parsec-net* | \
        lib/cmake/ParsecNet/* | bin/parsecnet) ;;
      *) continue ;;
    esac
    keep=0
    for new in "${installed[@]}" "$manifest"; do
      [ "$new" = "$old" ] && keep=1 && break
    done
    if [ "$keep" -eq 0 ] && { [ -e "$root/$old" ] || [ -L "$root/$old" ]; }; then
      echo "install.sh: removing $root/$old (installed before, not any more)"
      rm -f "$root/$old"
    fi
  done <"$root/$manifest"
fi
manifest_tmp=$(mktemp)
printf '%s\n' "${installed[@]}" "$manifest" >"$manifest_tmp"
put 0644 "$manifest_tmp" "$manifest"
rm -f "$manifest_tmp"

for file in "${installed[@]}"; do
  echo "  $root/$file"
done
if [ -z "$destdir" ]; then
  case "$prefix" in
    /usr) ;;
    *)
      echo "install.sh: for pkg-config: export PKG_CONFIG_PATH=$prefix/lib/pkgconfig;" \
        "for CMake: -DCMAKE_PREFIX_PATH=$prefix"
      ;;
  esac
fi
echo "install.sh: done"
