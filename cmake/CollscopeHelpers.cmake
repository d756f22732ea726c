# Warnings every target of ours compiles with (C++; CUDA sources pass the host
# compiler's through nvcc).
function(collscope_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
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
  if("ucx" IN_LIST T_LABELS)
    collscope_uses_root_network(${T_NAME})
  endif()
endfunction()

# collscope_uses_root_network(test...): the tests open UCX's tcp transport, which lists the
# network interfaces of the root namespace when a worker starts. The emulated cluster's
# tests add and remove veth ends there, and an interface that vanishes between UCX's
# listing and its opening fails ucp_worker_create with "No such device": such tests never
# run beside the cluster's (the cluster's RESOURCE_LOCK).
function(collscope_uses_root_network)
  set_property(TEST ${ARGN} APPEND PROPERTY RESOURCE_LOCK collscope_emulated_cluster)
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

# The Python tests import the tools' package, scripts/collscope (never the other way
# round): every test defined so far in the calling directory gets it on PYTHONPATH. Call
# it at the end of a CMakeLists.txt whose tests run Python.
function(collscope_python_path)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/scripts")
  endif()
endfunction()
