# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package: `cpack -G DEB` in the build folder writes qkvlab_VERSION_ARCH.deb of what
# cmake/Install.cmake installs under /usr (docs/installing.md).
set(QKV_PACKAGE_MAINTAINER "QKV Lab developers <maintainers@qkvlab.invalid>"
    CACHE STRING "The Maintainer field of the Debian package: Name <address>")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "qkvlab")
set(CPACK_PACKAGE_VENDOR "QKV Lab")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${QKV_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for taking transformer attention apart")
# Lines of at most 80 characters, as Debian's tools show them.
string(JOIN "\n" CPACK_PACKAGE_DESCRIPTION
       "QKV Lab is a desktop workbench for learning and teaching scaled dot-product"
       "attention. Edit the token embeddings X and the projections W_Q, W_K and W_V,"
       "choose the mask, the scaling, the temperature and the normalizer, and every"
       "matrix from the scores to the output is recomputed at once, shown as heatmaps."
       ""
       "It has lessons and built-in examples, several heads and cross-attention, reads"
       "the attention of GPT-2 and LLaMA-family models from their Hugging Face folders,"
       "and exports figures as PNG, SVG or PDF, also from the command line.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Depends: the libraries the program links, found by dpkg-shlibdeps (dpkg-dev), and OpenBLAS and oneDNN, which
# the engine opens with dlopen (it falls back to OpenBLAS for float32 without oneDNN, to Eigen's slower
# products without either). libqt6svg6, whose SVG
# plugins draw the window's icon, is among the linked ones (figure export links Qt6::Svg).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0, libdnnl2")
# The icon theme whose trigger registers the icon, and Qt's Wayland platform (XWayland serves without it).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "hicolor-icon-theme, qt6-wayland")
if(QKV_HOMEPAGE_URL)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${QKV_HOMEPAGE_URL}")
endif()

include(CPack)
