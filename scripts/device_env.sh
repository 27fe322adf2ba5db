# Sourced on the GPU machine, in the repository's root, after scripts/device_bundle.sh packed a
# build into .dev/bundle.tar.gz here (carry .dev):
#
#   source scripts/device_env.sh     # unpacks, puts the build at the path it was built at,
#                                    # LD_LIBRARY_PATH, the NVIDIA OpenCL driver, Open MPI
#
# Sets PBF_BUILD (the build tree) and PBF (its pbf command); mpirun is the bundle's Open MPI,
# allowed to run as root.
_dev_root="$(pwd)"
mkdir -p /tmp/pbf_dev
tar -C /tmp/pbf_dev -xzf "${_dev_root}/.dev/bundle.tar.gz"
PBF_BUILD="$(cat /tmp/pbf_dev/build_path)"
# the build at its own absolute path, inside a copy of this checkout at the same place
_src="$(dirname "${PBF_BUILD}")"
if [[ "${_src}" != "${_dev_root}" ]]; then
    if [[ -e "${_src}" && ! -L "${_src}" ]]; then
        echo "device_env: ${_src} exists on this machine and is not this checkout: not replaced" >&2
        return 1
    fi
    mkdir -p "$(dirname "${_src}")"
    ln -sfn "${_dev_root}" "${_src}"
fi
rm -rf "${PBF_BUILD}"
cp -a /tmp/pbf_dev/build "${PBF_BUILD}"
PBF="${PBF_BUILD}/pbf"
export PBF_BUILD PBF
# a library that machine has (libpng, libgomp, ...) is taken from there, the bundle's copy only
# where it has none; Open MPI's always from the bundle (its own and the build's do not mix)
for _f in /tmp/pbf_dev/lib/*; do
    case "$(basename "${_f}")" in
        libmpi*|libopen-*|libpmix*|libmca_common*|liboshmem*|libhwloc*|libevent*) continue ;;
    esac
    if ldconfig -p | grep -q " $(basename "${_f}") "; then rm -f "${_f}"; fi
done
echo "device_env: libraries from the bundle: $(cd /tmp/pbf_dev/lib && echo *)"
export LD_LIBRARY_PATH="/tmp/pbf_dev/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
# OpenCL: the ICD loader from the bundle, NVIDIA's driver library from the driver's mount
_ocl="$(find / -xdev \( -name 'libnvidia-opencl.so.1' -o -name 'libnvidia-opencl.so.*' \) \
        2>/dev/null | head -n 1)"
[[ -z "${_ocl}" ]] && _ocl="$(find /usr/local/nvidia -name 'libnvidia-opencl.so*' 2>/dev/null | head -n 1)"
if [[ -n "${_ocl}" ]]; then
    mkdir -p /tmp/pbf_dev/icd
    echo "${_ocl}" > /tmp/pbf_dev/icd/nvidia.icd
    export OCL_ICD_VENDORS=/tmp/pbf_dev/icd
fi
echo "device_env: NVIDIA OpenCL driver: ${_ocl:-not found}"
# Open MPI from the bundle, relocated (OPAL_PREFIX; its components and PMIx's named by path), also
# where that machine has an Open MPI of its own: the build's libmpi and another build's components
# do not mix
if [[ -x /tmp/pbf_dev/root/usr/bin/orterun ]]; then
    export OPAL_PREFIX=/tmp/pbf_dev/root/usr
    export OMPI_MCA_mca_base_component_path="${OPAL_PREFIX}/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
    export PMIX_INSTALL_PREFIX="${OPAL_PREFIX}/lib/x86_64-linux-gnu/pmix2"
    export PMIX_MCA_mca_base_component_path="${PMIX_INSTALL_PREFIX}/lib/pmix"
    export PATH="${OPAL_PREFIX}/bin:${PATH}"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
       OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "device_env: build ${PBF_BUILD} (commit $(cat /tmp/pbf_dev/commit 2>/dev/null)); mpirun: $(command -v mpirun || echo none)"
