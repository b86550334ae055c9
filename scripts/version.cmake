# Writes mpx_version.h (MPX_VERSION "0.1.0 (git 1a2b3c4)") at every build, so
# `mpx --version` names the revision it was built from; the file is rewritten
# only when the text changes (no needless relinking).
# cmake -DSRC=<source dir> -DOUT=<file> -DVERSION=<project version> -P version.cmake
set(rev "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" describe --always --dirty --abbrev=10
                  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    set(rev "")
  endif()
endif()
if(rev)
  set(text "#define MPX_VERSION \"${VERSION} (git ${rev})\"\n")
else()
  set(text "#define MPX_VERSION \"${VERSION}\"\n")
endif()
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
