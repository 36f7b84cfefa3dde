# SPDX-License-Identifier: GPL-3.0-or-later
# Installation as a Linux desktop application: `cmake --install BUILD --prefix /usr` lays out the program,
# its desktop entry, AppStream metainfo, icons, MIME type and manual page (docs/installing.md).
# The files themselves are in resources/desktop; the metainfo and the manual page take project()'s version.
include(GNUInstallDirs)

# The reverse-DNS id of the application: the names of the desktop entry, metainfo, icon and MIME file.
set(QKV_APP_ID "io.github.qkvlab.QKVLab")
set(QKV_HOMEPAGE_URL "" CACHE STRING "The project's web page, for the metainfo and the package (none: left out)")
set(QKV_SCREENSHOT_URL "" CACHE STRING
    "An https address of a screenshot (docs/screenshot.png) for software centres (none: left out)")
set(QKV_DESKTOP_SOURCE "${PROJECT_SOURCE_DIR}/resources/desktop")
set(QKV_DESKTOP_BINARY "${PROJECT_BINARY_DIR}/desktop")

# Optional metainfo elements: AppStream wants web addresses here, never paths.
set(QKV_METAINFO_URLS "")
if(QKV_HOMEPAGE_URL)
  string(APPEND QKV_METAINFO_URLS "\n  <url type=\"homepage\">${QKV_HOMEPAGE_URL}</url>")
endif()
if(QKV_SCREENSHOT_URL)
  string(APPEND QKV_METAINFO_URLS
         "\n  <screenshots>\n    <screenshot type=\"default\">\n"
         "      <caption>The workbench on the \"I love AI\" example</caption>\n"
         "      <image>${QKV_SCREENSHOT_URL}</image>\n    </screenshot>\n  </screenshots>")
endif()
configure_file("${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.metainfo.xml.in"
               "${QKV_DESKTOP_BINARY}/${QKV_APP_ID}.metainfo.xml" @ONLY)
configure_file("${QKV_DESKTOP_SOURCE}/qkvlab.1.in" "${QKV_DESKTOP_BINARY}/qkvlab.1" @ONLY)

install(TARGETS qkvlab RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.desktop" DESTINATION "${CMAKE_INSTALL_DATADIR}/applications")
install(FILES "${QKV_DESKTOP_BINARY}/${QKV_APP_ID}.metainfo.xml" DESTINATION "${CMAKE_INSTALL_DATADIR}/metainfo")
install(FILES "${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.svg"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps")
install(FILES "${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.mime.xml" DESTINATION "${CMAKE_INSTALL_DATADIR}/mime/packages"
        RENAME "${QKV_APP_ID}.xml")

# The manual page, compressed as Debian installs manual pages (man reads it either way).
find_program(QKV_GZIP gzip)
if(QKV_GZIP)
  add_custom_command(
    OUTPUT "${QKV_DESKTOP_BINARY}/qkvlab.1.gz"
    COMMAND "${QKV_GZIP}" -9 -n -c "${QKV_DESKTOP_BINARY}/qkvlab.1" > "${QKV_DESKTOP_BINARY}/qkvlab.1.gz"
    DEPENDS "${QKV_DESKTOP_BINARY}/qkvlab.1"
    COMMENT "Compressing the manual page")
  add_custom_target(qkv_manual_page ALL DEPENDS "${QKV_DESKTOP_BINARY}/qkvlab.1.gz")
  install(FILES "${QKV_DESKTOP_BINARY}/qkvlab.1.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
else()
  install(FILES "${QKV_DESKTOP_BINARY}/qkvlab.1" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
endif()

# Fixed-size icons for menus and docks that do not draw SVG, rendered from the SVG when rsvg-convert
# (Debian: librsvg2-bin) is there; the scalable icon alone is enough for every current desktop.
find_program(QKV_RSVG_CONVERT rsvg-convert)
if(QKV_RSVG_CONVERT)
  set(QKV_ICON_PNGS "")
  foreach(size 16 24 32 48 64 128 256)
    set(png "${QKV_DESKTOP_BINARY}/${QKV_APP_ID}-${size}.png")
    add_custom_command(
      OUTPUT "${png}"
      COMMAND "${QKV_RSVG_CONVERT}" --width ${size} --height ${size} --output "${png}"
              "${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.svg"
      DEPENDS "${QKV_DESKTOP_SOURCE}/${QKV_APP_ID}.svg"
      COMMENT "Rendering the ${size}x${size} icon"
      VERBATIM)
    list(APPEND QKV_ICON_PNGS "${png}")
    install(FILES "${png}" DESTINATION "${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps"
            RENAME "${QKV_APP_ID}.png")
  endforeach()
  add_custom_target(qkv_icons ALL DEPENDS ${QKV_ICON_PNGS})
else()
  message(STATUS "rsvg-convert not found (Debian: librsvg2-bin): only the scalable icon is installed")
endif()

# The manual page names every option and view that the program's help prints.
if(QKV_BUILD_TESTS)
  add_test(NAME manual_page_lists_options
           COMMAND "${CMAKE_COMMAND}" "-DQKVLAB=$<TARGET_FILE:qkvlab>" "-DMANUAL=${QKV_DESKTOP_BINARY}/qkvlab.1"
                   -P "${CMAKE_CURRENT_LIST_DIR}/CheckManualPage.cmake")
endif()

# The licence: the full text beside the program's documentation, and Debian's machine-readable copyright file.
install(FILES "${PROJECT_SOURCE_DIR}/resources/debian/copyright" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/qkvlab")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/qkvlab")
