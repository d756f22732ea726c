# The environment of a collscope GPU bundle (scripts/gpu-bundle), sourced by env.sh and by
# the mpirun/ompi_info wrappers with COLLSCOPE_BUNDLE_ROOT set to the unpacked root/.
# POSIX sh; safe to source again (nothing is added twice).
_cb_r=$COLLSCOPE_BUNDLE_ROOT

# Prepends $2 to the :-list named $1 unless it is there already.
_cb_prepend() {
    eval "_cb_v=\${$1:-}"
    case ":$_cb_v:" in
        *":$2:"*) ;;
        *) eval "$1=\"\$2\${_cb_v:+:\$_cb_v}\"" ;;
    esac
    export "$1"
}
_cb_prepend PATH "$_cb_r/bin"
# Before the node's LD_LIBRARY_PATH (which keeps its CUDA and NCCL reachable) and before
# the binaries' RUNPATH (/usr/lib/x86_64-linux-gnu/openmpi/lib, .../hdf5/serial).
_cb_prepend LD_LIBRARY_PATH "$_cb_r/lib"

# Open MPI 4.1 relocated: its installdirs "env" component overrides every compiled-in
# directory (Debian's /usr, /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3,
# /usr/share/openmpi, /etc/openmpi) with these.
export OPAL_PREFIX="$_cb_r/ompi" OPAL_EXEC_PREFIX="$_cb_r/ompi"
export OPAL_BINDIR="$_cb_r/ompi/bin" OPAL_SBINDIR="$_cb_r/ompi/bin" OPAL_LIBEXECDIR="$_cb_r/ompi/bin"
export OPAL_LIBDIR="$_cb_r/lib" OPAL_PKGLIBDIR="$_cb_r/ompi/lib/openmpi3"
export OPAL_DATAROOTDIR="$_cb_r/ompi/share" OPAL_DATADIR="$_cb_r/ompi/share"
export OPAL_PKGDATADIR="$_cb_r/ompi/share/openmpi" OPAL_SYSCONFDIR="$_cb_r/ompi/etc"
# PMIx (Open MPI's launch protocol) the same way; its params file named the system's
# component directory, so the component path is given here too.
export PMIX_PREFIX="$_cb_r/pmix" PMIX_EXEC_PREFIX="$_cb_r/pmix" PMIX_BINDIR="$_cb_r/ompi/bin"
export PMIX_LIBDIR="$_cb_r/lib" PMIX_PKGLIBDIR="$_cb_r/pmix/lib/pmix"
export PMIX_DATAROOTDIR="$_cb_r/pmix/share" PMIX_DATADIR="$_cb_r/pmix/share"
export PMIX_PKGDATADIR="$_cb_r/pmix/share/pmix" PMIX_SYSCONFDIR="$_cb_r/pmix/etc"
export PMIX_MCA_mca_base_component_path="$_cb_r/pmix/lib/pmix"
# UCX's transport modules and hwloc's plugins from the bundle, never the node's (another
# version's modules would be refused with warnings, or worse).
export UCX_MODULE_DIR="$_cb_r/lib/ucx"
export HWLOC_PLUGINS_PATH="$_cb_r/lib/hwloc"

# The GPU libraries carried (gpu-bundle --cuda-mpi, --ucx, --nccl): the words run-gpu-tests
# plans its cuda_aware and multi-rank NCCL rows by. The carried NCCL is opened before the
# node's; without its unpacked part, "nccl" is not claimed.
COLLSCOPE_BUNDLE_LIBS=
for _cb_w in $(cat "$_cb_r/etc/bundle-libs" 2>/dev/null); do
    if [ "$_cb_w" != nccl ] || [ -e "$_cb_r/lib/libnccl.so.2" ]; then
        COLLSCOPE_BUNDLE_LIBS="${COLLSCOPE_BUNDLE_LIBS:+$COLLSCOPE_BUNDLE_LIBS }$_cb_w"
    fi
done
export COLLSCOPE_BUNDLE_LIBS
if [ -e "$_cb_r/lib/libnccl.so.2" ]; then
    export COLLSCOPE_NCCL_LIBRARY="$_cb_r/lib/libnccl.so.2"
fi

# As scripts/mpi-env: more ranks than cores (several ranks share one GPU), ranks yield the
# CPU while they wait, and mpirun may run as root (containers).
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
if [ "$(id -u 2>/dev/null)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# One node needs no remote launcher; a node without ssh still selects the rsh launcher
# (it is never called for local ranks) instead of failing.
if ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1; then
    export OMPI_MCA_plm_rsh_agent=false
fi
unset _cb_r _cb_v _cb_w; unset -f _cb_prepend
