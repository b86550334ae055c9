# libmpx.a from the module archives: ar's MRI script (CREATE/ADDLIB/SAVE)
# run with the script as its input.
# cmake -DAR=<ar> -DMRI=<script> -DOUT=<libmpx.a> -P ar_merge.cmake
file(REMOVE "${OUT}")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${MRI}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ar -M failed (${rc}) making ${OUT}")
endif()
