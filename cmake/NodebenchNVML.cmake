# nvml.h, the types of the NVML entry points harness/node/nvml*.cpp binds at run time (the library
# itself is loaded with dlopen, so the binary starts where there is no driver): required at build
# time. Looked for under NVML_ROOT, the CUDA toolkit's include folder, then the Python
# site-packages' nvidia/cu<major>/include or nvidia/nvml_dev/include (pip install nvidia-nvml-dev,
# or nvidia-nvml-dev-cu12 for CUDA 12: what scripts/setup.sh installs where the toolkit lacks it),
# and .deps/nvml/include. Sets NB_NVML_INCLUDE_DIR; when nvml.h is missing the configure stops
# naming the package, unless NB_NVML_PROBE_ONLY is set (scripts/setup.sh's probe).
set(_nb_nvml_roots ${NVML_ROOT} $ENV{NVML_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
    ${CMAKE_CURRENT_LIST_DIR}/../.deps/nvml)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import site; print(';'.join(site.getsitepackages() + [site.getusersitepackages()]))"
                  OUTPUT_VARIABLE _nb_nvml_site OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(_s ${_nb_nvml_site})
    list(APPEND _nb_nvml_roots ${_s}/nvidia/cu${CUDAToolkit_VERSION_MAJOR} ${_s}/nvidia/nvml_dev)
  endforeach()
endif()
find_path(NB_NVML_INCLUDE_DIR nvml.h PATHS ${_nb_nvml_roots} PATH_SUFFIXES include targets/x86_64-linux/include
          targets/sbsa-linux/include NO_DEFAULT_PATH)
if(NOT NB_NVML_INCLUDE_DIR AND NOT NB_NVML_PROBE_ONLY)
  if(CUDAToolkit_VERSION_MAJOR EQUAL 12)
    set(_nb_nvml_pip nvidia-nvml-dev-cu12)
  else()
    set(_nb_nvml_pip nvidia-nvml-dev)
  endif()
  message(FATAL_ERROR "nodebench: nvml.h not found (NVML's types; the library is loaded at run time): the CUDA "
                      "toolkit's nvml.h, or python3 -m pip install ${_nb_nvml_pip}, or NVML_ROOT=<folder with include/nvml.h>")
endif()
