#!/usr/bin/env bash
# install.sh — install approxtune and what it needs on a Debian/Ubuntu machine.
#
#   ./install.sh [--prefix DIR] [--no-packages] [--test-deps] [--with-jupyter]
#                [--with-scalapack]
#
# 1. OS packages (apt, as root or through sudo): Open MPI, OpenBLAS, LAPACKE,
#    pkg-config, gcc. With --test-deps also what the test suite drives (MPICH
#    for the second-MPI build check, the Jupyter clients, ScaLAPACK; for the
#    browser tests headless Chromium, chromedriver, selenium, the classic
#    Notebook with its widgets, jupyter-server, and Node.js with npm unless
#    node is on PATH; for the Slurm tests, which start a private one-node
#    Slurm, slurmctld, slurmd and the Slurm clients). With --with-jupyter,
#    Jupyter from the OS packages; with --with-scalapack, Open MPI's
#    ScaLAPACK. Installed packages are left alone.
# 2. Checks Go (at least the version go.mod names).
# 3. Builds approxtune into PREFIX/bin (default /usr/local/bin as root,
#    ~/.local/bin otherwise) and says so if that is not on PATH, beside it
#    approxtune-summarize (bench/summarize: tables from a sweep's events,
#    wherever they were saved), and its preload library (for tuning your own MPI programs) into
#    PREFIX/lib/approxtune. Where mpicc and ScaLAPACK are found, builds the
#    example driver examples/scalapack/factor (notebooks/scalapack.ipynb).
# Running it again is harmless: it only does what is still missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prefix=""
packages=1
test_deps=0
jupyter=0
scalapack=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --no-packages) packages=0; shift ;;
    --test-deps) test_deps=1; shift ;;
    --with-jupyter) jupyter=1; shift ;;
    --with-scalapack) scalapack=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see ./install.sh --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$prefix" ]; then
  if [ "$(id -u)" = 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
fi

say() { printf '==> %s\n' "$*"; }

base_pkgs="openmpi-bin libopenmpi-dev libopenblas-dev liblapacke-dev pkg-config gcc"
test_pkgs="mpich libmpich-dev tmux jupyter-client python3-jupyter-client python3-nbclient python3-nbformat jupyter-nbconvert jupyter-console python3-ipykernel python3-pexpect gfortran scalapack-mpi-test libscalapack-openmpi-dev"
# The browser tests (cmd/approxtune/browser_test.go); their widget page is
# bundled with npm, which comes with any Node.js already installed.
test_pkgs="$test_pkgs chromium chromium-driver python3-selenium jupyter-notebook jupyter-nbextension-jupyter-js-widgets python3-widgetsnbextension python3-jupyter-server fonts-liberation"
command -v node >/dev/null 2>&1 || test_pkgs="$test_pkgs nodejs npm"
# The Slurm tests (internal/slurmtest starts its own slurmctld and slurmd;
# no service is started by the packages, munge is their dependency).
test_pkgs="$test_pkgs slurmctld slurmd slurm-client munge"
jupyter_pkgs="jupyter-notebook jupyter-nbextension-jupyter-js-widgets python3-widgetsnbextension jupyter-client jupyter-console python3-ipykernel"
scalapack_pkgs="libscalapack-openmpi-dev"

if [ "$packages" = 1 ]; then
  want="$base_pkgs"
  [ "$test_deps" = 1 ] && want="$want $test_pkgs"
  [ "$jupyter" = 1 ] && want="$want $jupyter_pkgs"
  [ "$scalapack" = 1 ] && want="$want $scalapack_pkgs"
  if command -v apt-get >/dev/null 2>&1; then
    missing=""
    for p in $want; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
      sudo=""
      if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "install.sh: need root or sudo to install:$missing" >&2; exit 1; }
        sudo=sudo
      fi
      say "installing OS packages:$missing"
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
      # shellcheck disable=SC2086
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
      say "OS packages already installed"
    fi
  elif pkg-config --exists ompi lapacke openblas 2>/dev/null; then
    say "no apt-get; Open MPI, OpenBLAS and LAPACKE found through pkg-config"
  else
    cat >&2 <<MSG
install.sh: this system has no apt-get. Install by hand, then rerun with --no-packages:
  Fedora/RHEL (dnf):  openmpi-devel openblas-devel lapack-devel pkgconf gcc   (then: module load mpi/openmpi-x86_64)
  macOS (brew):       open-mpi openblas lapack pkg-config
  (export PKG_CONFIG_PATH so that 'pkg-config --libs ompi openblas lapacke' works)
MSG
    exit 1
  fi
fi

# Go: at least the version in go.mod.
need=$(awk '/^go /{print $2; exit}' "$here/go.mod")
gobin=$(command -v go || true)
[ -z "$gobin" ] && [ -x /usr/local/go/bin/go ] && gobin=/usr/local/go/bin/go
if [ -z "$gobin" ]; then
  echo "install.sh: Go $need or newer is required and was not found. Get it from https://go.dev/dl/ (Debian's golang-go may be too old), put its bin/ on PATH, and rerun." >&2
  exit 1
fi
have=$("$gobin" env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
  echo "install.sh: Go $have is older than the $need that go.mod needs; install a newer Go from https://go.dev/dl/ and rerun." >&2
  exit 1
fi
say "Go $have ($gobin)"

ver=$(git -C "$here" describe --tags --always --dirty 2>/dev/null || echo dev)
mkdir -p "$prefix/bin"
say "building approxtune $ver into $prefix/bin"
(cd "$here" && "$gobin" build -ldflags "-X main.version=$ver" -o "$prefix/bin/approxtune" ./cmd/approxtune)
say "building approxtune-summarize (bench/summarize) into $prefix/bin"
(cd "$here" && "$gobin" build -o "$prefix/bin/approxtune-summarize" ./bench/summarize)
mkdir -p "$prefix/lib/approxtune"
say "building the preload library into $prefix/lib/approxtune"
(cd "$here" && "$gobin" build -tags noopenblas -buildmode=c-shared -o "$prefix/lib/approxtune/libapproxtune.so" ./cmd/libapproxtune)
rm -f "$prefix/lib/approxtune/libapproxtune.h"
mkdir -p "$prefix/include"
cp "$here/include/approxtune.h" "$here/include/approxtune_fortran.c" "$prefix/include/"
"$prefix/bin/approxtune" version | sed 's/^/    /'

# The ScaLAPACK example (notebooks/scalapack.ipynb tunes it), built next to
# its source where Open MPI's mpicc and ScaLAPACK are found; again only when
# its source is newer.
ex="$here/examples/scalapack"
mpicc=$(command -v mpicc.openmpi || command -v mpicc || true)
if [ -n "$mpicc" ] && [ -e "$("$mpicc" -print-file-name=libscalapack-openmpi.so 2>/dev/null)" ]; then
  if [ ! -x "$ex/factor" ] || [ "$ex/factor.c" -nt "$ex/factor" ] || [ "$here/include/approxtune.h" -nt "$ex/factor" ]; then
    say "building the ScaLAPACK example examples/scalapack/factor"
    "$mpicc" -O2 -I"$here/include" -o "$ex/factor" "$ex/factor.c" -lscalapack-openmpi -lopenblas -lm ||
      echo "install.sh: building examples/scalapack/factor failed (see above)" >&2
  fi
elif [ "$scalapack" = 1 ]; then
  echo "install.sh: no mpicc or no Open MPI ScaLAPACK (libscalapack-openmpi.so): examples/scalapack/factor not built" >&2
fi

if [ "$jupyter" = 1 ] || command -v jupyter >/dev/null 2>&1; then
  if "$prefix/bin/approxtune" help 2>/dev/null | grep -q '^  approxtune install'; then
    say "installing the Jupyter kernelspec"
    "$prefix/bin/approxtune" install --user || echo "install.sh: kernelspec install failed (see above)" >&2
  fi
fi

case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) say "note: $prefix/bin is not on your PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
say "done: try  approxtune run $here/notebooks/quickstart.ipynb -o quickstart.out.ipynb   (or: approxtune repl)"
