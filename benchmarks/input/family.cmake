# The input family (benchmarks/input/README.md): its kernel is kernels/input/ (nb_kernels_input);
# libjpeg-turbo and nvJPEG are optional and looked for here.
set(_nb_in_includes "")
set(_nb_in_defs "")
set(_nb_in_libs "")

# libjpeg-turbo: TurboJPEG (turbojpeg.h; Debian's libturbojpeg0-dev) and libjpeg's API (jpeglib.h;
# libjpeg62-turbo-dev, Ubuntu's libjpeg-turbo8-dev), as PIL and torchvision decode. Looked for under
# TURBOJPEG_ROOT (e.g. Debian packages unpacked with dpkg -x), then the system; the static
# libraries first, so that the binary does not need the packages where it runs. Optional: without
# them the CPU cases are skipped and say why.
set(_nb_jpeg_roots ${TURBOJPEG_ROOT} $ENV{TURBOJPEG_ROOT})
set(_nb_jpeg_inc include usr/include)
set(_nb_jpeg_lib lib lib64 usr/lib/x86_64-linux-gnu usr/lib/aarch64-linux-gnu lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
find_path(NB_TURBOJPEG_INCLUDE_DIR turbojpeg.h HINTS ${_nb_jpeg_roots} PATH_SUFFIXES ${_nb_jpeg_inc})
find_path(NB_LIBJPEG_INCLUDE_DIR jpeglib.h HINTS ${_nb_jpeg_roots} PATH_SUFFIXES ${_nb_jpeg_inc})
# jpeglib.h includes jconfig.h, which multiarch systems keep in a per-architecture folder.
find_path(NB_JCONFIG_INCLUDE_DIR jconfig.h HINTS ${_nb_jpeg_roots} ${NB_LIBJPEG_INCLUDE_DIR}
          PATH_SUFFIXES ${_nb_jpeg_inc} include/x86_64-linux-gnu usr/include/x86_64-linux-gnu x86_64-linux-gnu
                        include/aarch64-linux-gnu usr/include/aarch64-linux-gnu aarch64-linux-gnu)
find_library(NB_TURBOJPEG_LIBRARY NAMES libturbojpeg.a turbojpeg HINTS ${_nb_jpeg_roots} PATH_SUFFIXES ${_nb_jpeg_lib})
find_library(NB_LIBJPEG_LIBRARY NAMES libjpeg.a jpeg HINTS ${_nb_jpeg_roots} PATH_SUFFIXES ${_nb_jpeg_lib})
set(_nb_jpeg_missing "")
foreach(_v NB_TURBOJPEG_INCLUDE_DIR NB_TURBOJPEG_LIBRARY NB_LIBJPEG_INCLUDE_DIR NB_JCONFIG_INCLUDE_DIR NB_LIBJPEG_LIBRARY)
  if(NOT ${_v})
    list(APPEND _nb_jpeg_missing ${_v})
  endif()
endforeach()
if(NOT _nb_jpeg_missing)
  message(STATUS "nodebench: libjpeg-turbo found (${NB_TURBOJPEG_LIBRARY}, ${NB_LIBJPEG_LIBRARY}): input family's CPU cases built")
  list(APPEND _nb_in_includes ${NB_TURBOJPEG_INCLUDE_DIR} ${NB_LIBJPEG_INCLUDE_DIR} ${NB_JCONFIG_INCLUDE_DIR})
  list(APPEND _nb_in_defs NB_HAVE_JPEG=1)
  list(APPEND _nb_in_libs ${NB_TURBOJPEG_LIBRARY} ${NB_LIBJPEG_LIBRARY})
  set(NB_HAVE_JPEG ON CACHE INTERNAL "")
else()
  string(REPLACE ";" ", " _nb_jpeg_missing "${_nb_jpeg_missing}")
  message(STATUS "nodebench: libjpeg-turbo not found (${_nb_jpeg_missing}): the input family's CPU cases are skipped "
                 "(apt-get install libturbojpeg0-dev libjpeg62-turbo-dev, or TURBOJPEG_ROOT)")
  list(APPEND _nb_in_defs "NB_JPEG_MISSING=\"not found at build time: ${_nb_jpeg_missing} (apt-get install libturbojpeg0-dev libjpeg62-turbo-dev)\"")
  set(NB_HAVE_JPEG OFF CACHE INTERNAL "")
endif()

# nvJPEG: under NVJPEG_ROOT (e.g. the nvidia-nvjpeg wheel's nvidia/cu13), the CUDA toolkit, or
# the Python site-packages' nvidia/cu<major> (pip install nvidia-nvjpeg); of the CUDA major
# version in use only. The header at build time; the library is loaded at run time (dlopen),
# so the binary starts where it is missing and the GPU cases say so.
set(_nb_nvjpeg_roots ${NVJPEG_ROOT} $ENV{NVJPEG_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_LIBRARY_DIR}/..)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import site; print(';'.join(site.getsitepackages() + [site.getusersitepackages()]))"
                  OUTPUT_VARIABLE _nb_site OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  foreach(_s ${_nb_site})
    list(APPEND _nb_nvjpeg_roots ${_s}/nvidia/cu${CUDAToolkit_VERSION_MAJOR} ${_s}/nvidia/nvjpeg)
  endforeach()
endif()
find_path(NB_NVJPEG_INCLUDE_DIR nvjpeg.h PATHS ${_nb_nvjpeg_roots} PATH_SUFFIXES include targets/x86_64-linux/include
          targets/sbsa-linux/include NO_DEFAULT_PATH)
find_library(NB_NVJPEG_LIBRARY NAMES nvjpeg libnvjpeg.so.${CUDAToolkit_VERSION_MAJOR} PATHS ${_nb_nvjpeg_roots}
             PATH_SUFFIXES lib lib64 targets/x86_64-linux/lib targets/sbsa-linux/lib NO_DEFAULT_PATH)
set(_nb_nvjpeg_major "")
if(NB_NVJPEG_INCLUDE_DIR)
  file(STRINGS ${NB_NVJPEG_INCLUDE_DIR}/nvjpeg.h _nb_nvjpeg_ver REGEX "^#define NVJPEG_VER_MAJOR ")
  string(REGEX REPLACE ".*NVJPEG_VER_MAJOR +([0-9]+).*" "\\1" _nb_nvjpeg_major "${_nb_nvjpeg_ver}")
endif()
if(NB_NVJPEG_INCLUDE_DIR AND NB_NVJPEG_LIBRARY AND _nb_nvjpeg_major STREQUAL CUDAToolkit_VERSION_MAJOR)
  message(STATUS "nodebench: nvJPEG ${_nb_nvjpeg_major} found (${NB_NVJPEG_LIBRARY}): input family's GPU decode built")
  list(APPEND _nb_in_includes ${NB_NVJPEG_INCLUDE_DIR})
  list(APPEND _nb_in_defs NB_HAVE_NVJPEG=1 "NB_NVJPEG_LIBRARY=\"${NB_NVJPEG_LIBRARY}\"")
  set(NB_HAVE_NVJPEG ON CACHE INTERNAL "")
else()
  set(_why "no nvjpeg.h and libnvjpeg of CUDA ${CUDAToolkit_VERSION_MAJOR} under NVJPEG_ROOT, the CUDA toolkit or site-packages")
  if(NB_NVJPEG_INCLUDE_DIR AND NOT _nb_nvjpeg_major STREQUAL CUDAToolkit_VERSION_MAJOR)
    set(_why "nvJPEG ${_nb_nvjpeg_major} at ${NB_NVJPEG_INCLUDE_DIR} is not for CUDA ${CUDAToolkit_VERSION_MAJOR}")
  endif()
  message(STATUS "nodebench: nvJPEG not used (${_why}): the input family's GPU cases are skipped")
  list(APPEND _nb_in_defs "NB_NVJPEG_MISSING=\"${_why} at build time (pip install nvidia-nvjpeg, or NVJPEG_ROOT)\"")
  set(NB_HAVE_NVJPEG OFF CACHE INTERNAL "")
endif()

# The compiler's own folders (/usr/include) must not be given again: libstdc++'s #include_next needs its order.
if(_nb_in_includes)
  list(REMOVE_DUPLICATES _nb_in_includes)
endif()
if(CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND _nb_in_includes)
  list(REMOVE_ITEM _nb_in_includes ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
endif()
nb_family(input SOURCES input.cpp jpeg_codec.cpp augment.cpp images.cpp cpu_pool.cpp input_verdict.cpp input_analysis.cpp
          gpu_decode.cpp KERNELS input LIBS ${_nb_in_libs} INCLUDES ${_nb_in_includes} DEFINITIONS ${_nb_in_defs})
