# collscope GPU bundle: source this file (bash, zsh, dash, ksh):
#     . /path/to/bundle/env.sh
# The first time it unpacks payload.tar.xz into root/ beside it (into
# ${TMPDIR:-/tmp}/collscope-bundle-UID-ID when this folder is read-only, or into
# $COLLSCOPE_BUNDLE_UNPACK_DIR when set), with the bundle's own xz: the node needs only sh,
# tar and coreutils. Then it sets PATH, LD_LIBRARY_PATH and the Open MPI, PMIx, UCX and
# hwloc variables (root/etc/collscope-env.sh), and exports COLLSCOPE_BUNDLE (this folder)
# and COLLSCOPE_BUNDLE_ROOT (the unpacked root), and COLLSCOPE_BUNDLE_LIBS (the GPU
# libraries it carries: cuda-mpi, ucx-cuda, nccl; root/etc/bundle-libs). Under a shell other than bash or zsh,
# set COLLSCOPE_BUNDLE to this folder first, or source it from this folder.
# Returns (does not exit) 1 with one line on stderr when it cannot unpack.

_cb_self=
if [ -n "${BASH_VERSION:-}" ]; then
    eval '_cb_self=${BASH_SOURCE[0]}'
elif [ -n "${ZSH_VERSION:-}" ]; then
    eval '_cb_self=${(%):-%x}'
fi
if [ -n "$_cb_self" ]; then
    COLLSCOPE_BUNDLE=$(cd "$(dirname "$_cb_self")" && pwd -P)
elif [ -z "${COLLSCOPE_BUNDLE:-}" ] && [ -f ./payload.id ]; then
    COLLSCOPE_BUNDLE=$(pwd -P)
fi

_cb_unpack() {
    _cb_b=${COLLSCOPE_BUNDLE:-}
    if [ -z "$_cb_b" ] || [ ! -f "$_cb_b/payload.id" ]; then
        echo "collscope bundle: cannot tell where the bundle is: set COLLSCOPE_BUNDLE to its folder" >&2
        return 1
    fi
    _cb_id=$(cat "$_cb_b/payload.id")
    if [ -n "${COLLSCOPE_BUNDLE_UNPACK_DIR:-}" ]; then
        _cb_root=$COLLSCOPE_BUNDLE_UNPACK_DIR
    elif [ -w "$_cb_b" ] || [ -f "$_cb_b/root/.payload-id" ]; then
        _cb_root=$_cb_b/root
    else
        _cb_root=${TMPDIR:-/tmp}/collscope-bundle-$(id -u)-$_cb_id
    fi
    if [ "$(cat "$_cb_root/.payload-id" 2>/dev/null)" != "$_cb_id" ]; then
        # Unpack beside, then swap in: an interrupted unpack never looks complete.
        _cb_tmp=$_cb_root.unpacking.$$
        rm -rf "$_cb_tmp" && mkdir -p "$_cb_tmp" || {
            echo "collscope bundle: cannot create $_cb_tmp" >&2; return 1; }
        if ! LD_LIBRARY_PATH="$_cb_b/tools/lib" "$_cb_b/tools/xz" -dc "$_cb_b/payload.tar.xz" \
                | tar -xf - -C "$_cb_tmp"; then
            rm -rf "$_cb_tmp"
            echo "collscope bundle: unpacking $_cb_b/payload.tar.xz into $_cb_tmp failed (disk space?)" >&2
            return 1
        fi
        echo "$_cb_id" > "$_cb_tmp/.payload-id"
        rm -rf "$_cb_root" && mv "$_cb_tmp" "$_cb_root" || {
            echo "collscope bundle: cannot move the unpacked files to $_cb_root" >&2; return 1; }
    fi
    COLLSCOPE_BUNDLE_ROOT=$(cd "$_cb_root" && pwd -P)
    export COLLSCOPE_BUNDLE="$_cb_b" COLLSCOPE_BUNDLE_ROOT
    _cb_unpack_nccl
    return 0
}

# The carried NCCL (gpu-bundle --nccl) may travel as a second part: payload-nccl.tar.xz beside
# this file, in the folder $COLLSCOPE_BUNDLE_PART2, or in <bundle>.part2. Unpacked into
# root/lib once per part (root/.payload-nccl-id). A bundle that carries NCCL without the part
# says so in one line and goes on without it (run-gpu-tests then plans no NCCL rows).
_cb_unpack_nccl() {
    grep -qw nccl "$COLLSCOPE_BUNDLE_ROOT/etc/bundle-libs" 2>/dev/null || return 0
    for _cb_p in "$_cb_b" "${COLLSCOPE_BUNDLE_PART2:-}" "$_cb_b.part2"; do
        [ -n "$_cb_p" ] && [ -f "$_cb_p/payload-nccl.id" ] && break
        _cb_p=
    done
    if [ -z "$_cb_p" ]; then
        [ -f "$COLLSCOPE_BUNDLE_ROOT/.payload-nccl-id" ] && return 0
        echo "collscope bundle: NCCL's part (payload-nccl.tar.xz) not found beside the bundle, in \$COLLSCOPE_BUNDLE_PART2 or in $_cb_b.part2: going on without the carried NCCL" >&2
        return 0
    fi
    _cb_id2=$(cat "$_cb_p/payload-nccl.id")
    [ "$(cat "$COLLSCOPE_BUNDLE_ROOT/.payload-nccl-id" 2>/dev/null)" = "$_cb_id2" ] && return 0
    if LD_LIBRARY_PATH="$_cb_b/tools/lib" "$_cb_b/tools/xz" -dc "$_cb_p/payload-nccl.tar.xz" \
            | tar -xf - -C "$COLLSCOPE_BUNDLE_ROOT"; then
        echo "$_cb_id2" > "$COLLSCOPE_BUNDLE_ROOT/.payload-nccl-id"
    else
        rm -f "$COLLSCOPE_BUNDLE_ROOT/lib/libnccl.so.2"
        echo "collscope bundle: unpacking $_cb_p/payload-nccl.tar.xz failed (disk space?): going on without the carried NCCL" >&2
    fi
}

if _cb_unpack; then
    . "$COLLSCOPE_BUNDLE_ROOT/etc/collscope-env.sh"
    # The packed libraries were built against this glibc or newer: say so when the node's
    # is older (they would fail with "version `GLIBC_2.xx' not found").
    _cb_need=$(cat "$COLLSCOPE_BUNDLE_ROOT/etc/glibc-min" 2>/dev/null)
    _cb_have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //')
    if [ -n "$_cb_need" ] && [ -n "$_cb_have" ]; then
        _cb_n1=${_cb_need%%.*} _cb_n2=${_cb_need#*.} _cb_h1=${_cb_have%%.*} _cb_h2=${_cb_have#*.}
        _cb_h2=${_cb_h2%%[!0-9]*}
        if [ "$_cb_h1" -lt "$_cb_n1" ] || { [ "$_cb_h1" -eq "$_cb_n1" ] && [ "$_cb_h2" -lt "$_cb_n2" ]; }; then
            echo "collscope bundle: warning: this node has glibc $_cb_have; the bundle needs $_cb_need or newer" >&2
        fi
    fi
    unset _cb_self _cb_b _cb_id _cb_root _cb_tmp _cb_need _cb_have _cb_n1 _cb_n2 _cb_h1 _cb_h2 _cb_p _cb_id2
    unset -f _cb_unpack _cb_unpack_nccl
    true
else
    unset _cb_self _cb_b _cb_id _cb_root _cb_tmp _cb_p _cb_id2
    unset -f _cb_unpack _cb_unpack_nccl
    false
fi
