# SPDX-License-Identifier: GPL-3.0-or-later
# cmake -DQKVLAB=PROGRAM -DMANUAL=qkvlab.1 -P CheckManualPage.cmake
# Fails when an option or a view that `qkvlab --help` or `qkvlab export --help` prints is missing from the
# manual page, so the page follows the program.
execute_process(COMMAND "${QKVLAB}" --help OUTPUT_VARIABLE help ERROR_VARIABLE errors RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "qkvlab --help exited with ${status}: ${errors}")
endif()
execute_process(COMMAND "${QKVLAB}" export --help OUTPUT_VARIABLE export_help ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "qkvlab export --help exited with ${status}: ${errors}")
endif()
file(READ "${MANUAL}" manual)
# roff writes a hyphen as \-
string(REPLACE "\\-" "-" manual "${manual}")

string(REGEX MATCHALL "--[a-z][a-z-]*" options "${help}\n${export_help}")
list(REMOVE_DUPLICATES options)

# The views: the indented names after "Views:" and after "Views of a model".
string(REGEX REPLACE ".*\nViews:\n" "" views_text "${export_help}")
string(REGEX MATCHALL "  [A-Za-z][A-Za-z0-9_-]*" views "${views_text}")

set(missing "")
foreach(option IN LISTS options)
  string(FIND "${manual}" "${option}" at)
  if(at EQUAL -1)
    list(APPEND missing "option ${option}")
  endif()
endforeach()
foreach(view IN LISTS views)
  string(STRIP "${view}" view)
  string(REGEX MATCH "\n\\.B[RI]? ${view}( |\n)" found "${manual}")
  if(NOT found)
    list(APPEND missing "view ${view}")
  endif()
endforeach()
list(LENGTH options option_count)
list(LENGTH views view_count)
if(missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR "the manual page does not name: ${missing}")
endif()
message(STATUS "the manual page names all ${option_count} options and ${view_count} views")
