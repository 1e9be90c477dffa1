# The Debian package (CPack DEB): configured with -DCMAKE_INSTALL_PREFIX=/usr, then
# `cmake --build BUILD --target package` (or `cpack -G DEB` in BUILD) writes
# BUILD/ringside_<version>_<arch>.deb; scripts/deb-check.sh installs it in a fresh Debian 12
# root and checks it there.
#
# The binary looks for its data (remedies, doctor rules, themes) under the prefix it was
# configured with, so a package of a tree configured for another prefix is refused.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ringside)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "live terminal dashboard for GPU training loops")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "\
ringside runs a VPOC + MLP training loop on the GPU (or the CPU) and shows the caching
allocator's fragmentation, a phase timeline, every synchronize with its latency, the GPU
driver's failures from the kernel log with what is known to help, and the loop's progress,
with hotkeys that act on the loop. It also watches PyTorch jobs through its Python bridge,
serves telemetry to Prometheus as an agent, and checks a GPU machine (ringside doctor).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # ringside_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "ringside developers" CACHE STRING
    "The Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: the packages of the libraries the binary links, found by dpkg-shlibdeps, and of the
# HTTP libraries the agent and attach load at run time (rs_runtime_lib: the packages that held
# them here). NVML, NCCL/RCCL and rocm-smi-lib are loaded when present: no dependency.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${RS_MHD_PACKAGE}, ${RS_GNUTLS_PACKAGE}, ${RS_CURL_PACKAGE}")
# python3: the bridge (import ringside) and the tests of a trained model; tzdata: --tz's zone
# files; rocm-smi-lib: the AMD GPUs' telemetry, where the build has it; PyTorch: what the
# bridge's jobs run.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, tzdata")
if(RINGSIDE_ROCM_SMI_ENABLED)
    string(APPEND CPACK_DEBIAN_PACKAGE_RECOMMENDS ", librocm-smi64-1")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch")
set(CPACK_STRIP_FILES ON)

# Maintainer scripts: the bridge byte-compiled as Debian's Python packages are (py3compile, when
# python3 is there), and every __pycache__ under the package's Python folders removed before
# its files go, whoever made it, so that removing the package leaves none of its folders behind.
set(RS_DEB_PY_DIRS "${CPACK_PACKAGING_INSTALL_PREFIX}/${RS_PYTHON_DIR}/ringside \
${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/ringside/python")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/deb/postinst @ONLY CONTENT [[#!/bin/sh
set -e
if [ "$1" = configure ] && command -v py3compile >/dev/null 2>&1; then
    py3compile -p ringside
fi
]])
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/deb/prerm @ONLY CONTENT [[#!/bin/sh
set -e
for d in @RS_DEB_PY_DIRS@; do
    [ ! -d "$d" ] || find "$d" -depth -type d -name __pycache__ -exec rm -rf {} +
done
]])
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/postinst
                                       ${CMAKE_BINARY_DIR}/deb/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# Debian's place for the licence.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# Read by cpack: a DEB of a tree whose binary looks elsewhere than the package installs is refused.
set(RS_CONFIGURED_PREFIX "${CMAKE_INSTALL_PREFIX}")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/rs_cpack_config.cmake @ONLY CONTENT [[
if(CPACK_GENERATOR STREQUAL "DEB"
   AND NOT "@RS_CONFIGURED_PREFIX@" STREQUAL CPACK_PACKAGING_INSTALL_PREFIX)
    message(FATAL_ERROR "ringside: this build was configured with CMAKE_INSTALL_PREFIX="
            "@RS_CONFIGURED_PREFIX@, so its binary looks for its data there; a package installs "
            "under ${CPACK_PACKAGING_INSTALL_PREFIX}: configure with "
            "-DCMAKE_INSTALL_PREFIX=${CPACK_PACKAGING_INSTALL_PREFIX}")
endif()
]])
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/rs_cpack_config.cmake)
include(CPack)
