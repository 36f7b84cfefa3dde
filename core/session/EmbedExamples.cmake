# SPDX-License-Identifier: GPL-3.0-or-later
# Writes a C++ file holding each input file's text as a raw string literal, by name, returned by the function
# FUNCTION (default embeddedExamples) in qkv::detail. The name is the file name without STRIP_SUFFIX (default
# ".qkv.json"; give "" to keep whole file names). Used for resources/examples and resources/lessons.
if(NOT DEFINED FUNCTION)
  set(FUNCTION embeddedExamples)
endif()
if(NOT DEFINED STRIP_SUFFIX)
  set(STRIP_SUFFIX ".qkv.json")
endif()
string(REPLACE "." "\\." suffixPattern "${STRIP_SUFFIX}")
set(body "// Generated from resources/ by EmbedExamples.cmake. Do not edit.\n#include <string>\n#include <utility>\n#include <vector>\n\nnamespace qkv::detail {\nconst std::vector<std::pair<std::string, std::string>>& ${FUNCTION}()\n{\n    static const std::vector<std::pair<std::string, std::string>> entries = {\n")
foreach(input IN LISTS INPUTS)
  get_filename_component(fileName "${input}" NAME)
  set(name "${fileName}")
  if(NOT STRIP_SUFFIX STREQUAL "")
    string(REGEX REPLACE "${suffixPattern}$" "" name "${fileName}")
  endif()
  file(READ "${input}" text)
  string(APPEND body "        {\"${name}\", R\"qkvjson(${text})qkvjson\"},\n")
endforeach()
string(APPEND body "    };\n    return entries;\n}\n} // namespace qkv::detail\n")
file(WRITE "${OUTPUT}" "${body}")
