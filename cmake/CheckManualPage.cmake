# SPDX-License-Identifier: GPL-3.0-or-later
# cmake -DQKVLAB=PROGRAM -DMANUAL=qkvlab.1 [-DDOCS=command-line.md] -P CheckManualPage.cmake
# Fails when an option that qkvlab declares is missing from its command's part of the manual page (the
# `.SS COMMAND` subsection; the window's options under OPTIONS) or of docs/command-line.md (the
# "## `COMMAND`" section; the window's under "## The window"), or when a view that `qkvlab export --help`
# lists is missing from the manual page. The options come from `qkvlab --list-options`, the same lists the
# parser reads and --help is written from, so the pages follow the program.
if(NOT DOCS)
  set(DOCS "${CMAKE_CURRENT_LIST_DIR}/../docs/command-line.md")
endif()
execute_process(COMMAND "${QKVLAB}" --list-options OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR listing STREQUAL "")
  message(FATAL_ERROR "qkvlab --list-options exited with ${status}: ${errors}")
endif()
execute_process(COMMAND "${QKVLAB}" export --help OUTPUT_VARIABLE export_help ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "qkvlab export --help exited with ${status}: ${errors}")
endif()
file(READ "${MANUAL}" manual)
# roff writes a hyphen as \-
string(REPLACE "\\-" "-" manual "${manual}")
file(READ "${DOCS}" docs)

# The text of `document` after the first `heading` up to the next `next`; empty when there is no heading.
function(section_of document heading next result)
  string(FIND "${document}" "${heading}" start)
  if(start EQUAL -1)
    set(${result} "" PARENT_SCOPE)
    return()
  endif()
  string(LENGTH "${heading}" length)
  math(EXPR start "${start} + ${length}")
  string(SUBSTRING "${document}" ${start} -1 rest)
  string(FIND "${rest}" "${next}" end)
  if(NOT end EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${end} rest)
  endif()
  set(${result} "${rest}" PARENT_SCOPE)
endfunction()

set(missing "")
set(option_count 0)
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX MATCH "^([a-z-]+) (--[a-z-]+)" matched "${line}")
  if(NOT matched)
    message(FATAL_ERROR "qkvlab --list-options printed '${line}'")
  endif()
  set(command "${CMAKE_MATCH_1}")
  set(option "${CMAKE_MATCH_2}")
  math(EXPR option_count "${option_count} + 1")
  if(command STREQUAL "window")
    section_of("${manual}" "\n.SH OPTIONS\n" "\n.S" manual_part)
    section_of("${docs}" "\n## The window" "\n## " docs_part)
  else()
    section_of("${manual}" "\n.SS ${command}\n" "\n.S" manual_part)
    section_of("${docs}" "\n## `${command}`\n" "\n## " docs_part)
  endif()
  # The option as a whole word: --text is not found in --text-file.
  if(NOT manual_part MATCHES "${option}([^a-z-]|$)")
    list(APPEND missing "${command} ${option} in the manual page")
  endif()
  if(NOT docs_part MATCHES "${option}([^a-z-]|$)")
    list(APPEND missing "${command} ${option} in ${DOCS}")
  endif()
endforeach()

# The views: the indented names after "Views:" and after "Views of a model".
string(REGEX REPLACE ".*\nViews:\n" "" views_text "${export_help}")
string(REGEX MATCHALL "  [A-Za-z][A-Za-z0-9_-]*" views "${views_text}")
foreach(view IN LISTS views)
  string(STRIP "${view}" view)
  string(REGEX MATCH "\n\\.B[RI]? ${view}( |\n)" found "${manual}")
  if(NOT found)
    list(APPEND missing "view ${view} in the manual page")
  endif()
endforeach()
list(LENGTH views view_count)
if(missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR "not documented: ${missing}")
endif()
message(STATUS "the manual page and ${DOCS} name all ${option_count} options and the manual page all "
               "${view_count} views")
