# Warnings every target of ours compiles with.
function(collscope_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
endfunction()

# The launcher for MPI tests: as root Open MPI needs the two ALLOW variables, and with
# more ranks than cores it needs --oversubscribe.
set(COLLSCOPE_MPIEXEC ${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS} --oversubscribe
    CACHE INTERNAL "")
set(COLLSCOPE_MPI_TEST_ENV
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_mpi_yield_when_idle=1;OMPI_MCA_rmaps_base_oversubscribe=1"
    CACHE INTERNAL "")

# add_mpi_test(NAME name RANKS n COMMAND exe args... [TIMEOUT s] [LABELS l...])
function(add_mpi_test)
  cmake_parse_arguments(T "" "NAME;RANKS;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${COLLSCOPE_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${COLLSCOPE_MPI_TEST_ENV}"
                       TIMEOUT ${T_TIMEOUT} PROCESSORS 1 LABELS "mpi;${T_LABELS}")
endfunction()

# collscope_add_benchmarks(collective algorithm...): one benchmark binary per algorithm,
# build/bin/<collective>_<algorithm>, generated in bench/ from one template.
function(collscope_add_benchmarks collective)
  foreach(algorithm IN LISTS ARGN)
    set_property(GLOBAL APPEND PROPERTY COLLSCOPE_BENCHMARKS "${collective}:${algorithm}")
  endforeach()
endfunction()

# The Python 3 that runs the test scripts and reads results files: the first with h5py
# and numpy. Debian's python3-h5py belongs to /usr/bin/python3, whatever python3 comes
# first on PATH (pyenv, a virtual environment).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(COLLSCOPE_H5PY_PYTHON /usr/bin/python3)
foreach(candidate /usr/bin/python3 ${Python3_EXECUTABLE})
  execute_process(COMMAND ${candidate} -c "import h5py, numpy" RESULT_VARIABLE no_h5py
                  OUTPUT_QUIET ERROR_QUIET)
  if(NOT no_h5py)
    set(COLLSCOPE_H5PY_PYTHON ${candidate})
    break()
  endif()
endforeach()
